"""Session learning on MemoryCode: what the learning loop captures from dialogues replayed as
Claude Code sessions through the hook endpoint only (nothing calls learn).

Each dialogue is one project (`cwd` /bench/memorycode/d<n>); each of its sessions is a Claude
Code session: the mentor's turns are UserPromptSubmit prompts, the whole conversation is a
transcript file that the Stop hook names, and the capture task then runs as a worker would (the
queued jobs are run in-process, after each session, in order). Without a key the heuristic
extractor runs, which is what this measures by default.

Reports, over the sampled dialogues:
- recall: stated instructions (instruction and filler-instruction topics of a session) that a
  lesson captured in that session states (`bench/learning_eval.states`);
- precision: captured lessons (new, superseding or sent to review) that state an instruction
  stated so far in the dialogue;
- updates: of the updates whose old and new versions were both captured, the share where the
  old one is superseded (`superseded_by` set) and not injected for the new rule's words;
- engrams per session (mean, max), and the classifier's own cost per prompt and the
  UserPromptSubmit hook latency (p50/p95, ms); the classifier's cost also as CPU time, which
  other processes on a loaded machine do not inflate.

    DATABASE_URL=postgres://... python bench/learning.py [--dialogues 24] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "engramsite.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import (  # noqa: E402
    setup_databases,
    setup_test_environment,
    teardown_databases,
    teardown_test_environment,
)

from bench.learning_eval import (  # noqa: E402
    DATA,
    UPDATE_TYPES,
    dialogue_paths,
    sessions_of,
    states,
    transcript_lines,
)
from memory.maths import learning as maths  # noqa: E402
from memory.models import AgentSession, ApiToken, Engram, LearningDraft  # noqa: E402
from memory.services import learning, retrieval  # noqa: E402

URL = "/api/v1/hooks/claude-code"


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def old_versions(dialogues: set[int]) -> dict[tuple[int, str], str]:
    """(dialogue, new text) → the text it updates, from engrams.jsonl."""
    rows = [
        json.loads(line)
        for line in (DATA / "engrams.jsonl").read_text().splitlines()
        if line.strip()
    ]
    rows = [r for r in rows if r["dialogue_id"] in dialogues]
    out = {}
    for row in rows:
        if row["op"] != "update":
            continue
        earlier = [
            r
            for r in rows
            if r["dialogue_id"] == row["dialogue_id"]
            and r["pivot_id"] == row["pivot_id"]
            and r["session"] < row["session"]
        ]
        if earlier:
            last = max(earlier, key=lambda r: (r["session"], r["version"]))
            out[(row["dialogue_id"], row["text"])] = last["text"]
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    queued: list[tuple[str, tuple[Any, ...]]] = []
    # The worker's part runs in-process after each session, not on the measured request path.
    learning.job_enqueue = lambda name, *a: queued.append((name, a))  # type: ignore[assignment]
    import memory.services.sessions as sessions_module

    sessions_module.job_enqueue = lambda name, *a: None  # type: ignore[assignment]
    owner = get_user_model().objects.create_user(username="bench-learning")
    _, raw = ApiToken.issue(owner=owner, name="bench")
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    paths = dialogue_paths()
    step = max(1, len(paths) // args.dialogues)
    chosen = paths[::step][: args.dialogues]
    olds = old_versions({int(p.stem.split("_")[1]) for p in chosen})
    folder = Path(tempfile.mkdtemp(prefix="engram-bench-learning-"))
    found = total = tp = fp = 0
    per_session: list[int] = []
    classify_ms: list[float] = []
    classify_cpu_ms: list[float] = []
    hook_ms: list[float] = []
    updates_seen = updates_ok = 0
    for path in chosen:
        stated: list[str] = []
        captured_by_topic: dict[str, list[int]] = defaultdict(list)
        pending_updates: list[tuple[str, str]] = []
        dialogue = int(path.stem.split("_")[1])
        cwd = f"/bench/memorycode/d{dialogue}"
        for session in sessions_of(path):
            sid = f"d{dialogue}-s{session.number}"
            transcript = folder / f"{sid}.jsonl"
            transcript.write_text("\n".join(transcript_lines(session, sid, cwd)) + "\n")
            for role, text in session.turns:
                if role != "user":
                    continue
                start, cpu = time.perf_counter(), time.process_time()
                maths.classify(text)
                classify_ms.append((time.perf_counter() - start) * 1000)
                # CPU time too: on a loaded machine the wall clock counts other processes.
                classify_cpu_ms.append((time.process_time() - cpu) * 1000)
                body = {
                    "hook_event_name": "UserPromptSubmit",
                    "session_id": sid,
                    "cwd": cwd,
                    "prompt": text,
                    "transcript_path": str(transcript),
                }
                start = time.perf_counter()
                response = client.post(URL, body, content_type="application/json")
                hook_ms.append((time.perf_counter() - start) * 1000)
                assert response.status_code == 200, response.content
            client.post(
                URL,
                {
                    "hook_event_name": "Stop",
                    "session_id": sid,
                    "cwd": cwd,
                    "transcript_path": str(transcript),
                },
                content_type="application/json",
            )
            queued.clear()
            record = AgentSession.objects.get(owner=owner, session_id=sid)
            learning.session_capture(session_pk=record.pk)
            drafts = list(
                LearningDraft.objects.filter(session=record, result__in=learning.COUNTED)
                .select_related("engram")
                .order_by("pk")
            )
            per_session.append(len(drafts))
            topics = [t for _, t in session.topics]
            stated.extend(topics)
            total += len(topics)
            for topic in topics:
                if any(states(d.statement, topic) for d in drafts):
                    found += 1
            for d in drafts:
                if any(states(d.statement, t) for t in stated):
                    tp += 1
                else:
                    fp += 1
                    if args.show:
                        print("FP", repr(d.statement), topics)
                for topic in topics:
                    if states(d.statement, topic) and d.engram_id:
                        captured_by_topic[topic].append(d.engram_id)
            for kind, topic in session.topics:
                if kind in UPDATE_TYPES and (dialogue, topic) in olds:
                    pending_updates.append((topic, olds[(dialogue, topic)]))
        for new, old in pending_updates:
            if not captured_by_topic.get(new) or not captured_by_topic.get(old):
                continue
            updates_seen += 1
            old_rows = Engram.objects.filter(pk__in=captured_by_topic[old])
            superseded = all(e.superseded_by_id is not None for e in old_rows)
            injected = retrieval.inject(owner=owner, prompt=new, scope=f"project:{Path(cwd).name}")
            old_ids = {e.engram_id for e in old_rows}
            if superseded and not any(i in injected.rendered for i in old_ids):
                updates_ok += 1
            elif args.show:
                print("UPDATE MISSED", repr(old), "->", repr(new), superseded)
    return {
        "dialogues": len(chosen),
        "sessions": len(per_session),
        "recall": round(found / total, 3) if total else None,
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "updates_superseded": round(updates_ok / updates_seen, 3) if updates_seen else None,
        "updates_measured": updates_seen,
        "engrams_per_session_mean": round(statistics.mean(per_session), 2),
        "engrams_per_session_max": max(per_session),
        "classifier_ms_p50": round(percentile(classify_ms, 0.5), 3),
        "classifier_ms_p95": round(percentile(classify_ms, 0.95), 3),
        "classifier_cpu_ms_p50": round(percentile(classify_cpu_ms, 0.5), 3),
        "classifier_cpu_ms_p95": round(percentile(classify_cpu_ms, 0.95), 3),
        "hook_ms_p50": round(percentile(hook_ms, 0.5), 1),
        "hook_ms_p95": round(percentile(hook_ms, 0.95), 1),
        "prompts": len(classify_ms),
        "llm": bool(settings.ANTHROPIC_API_KEY),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dialogues", type=int, default=24)
    parser.add_argument("--json")
    parser.add_argument("--llm", action="store_true", help="use ANTHROPIC_API_KEY if set")
    parser.add_argument("--show", action="store_true", help="print misses and false positives")
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"eval data not found at {DATA}; nothing to benchmark (skipped).")
        return
    settings.ENGRAM_RATE_LIMIT_PER_MINUTE = 10**9  # a replay, not an agent: no rate limit
    if not args.llm:
        settings.ANTHROPIC_API_KEY = ""  # the fallback extractor, what users get without a key
    setup_test_environment()
    old = setup_databases(verbosity=0, interactive=False)
    try:
        result = run(args)
    finally:
        teardown_databases(old, verbosity=0)
        teardown_test_environment()
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
