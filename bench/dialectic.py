"""Dialectic consolidation: planted behaviour in, rules and skills out; and its throughput.

Scripted Claude Code sessions with known behaviour are replayed through the hook endpoint
(`POST /api/v1/hooks/claude-code`: SessionStart, PostToolUse/PostToolUseFailure, Stop) with
Django's test client, so observations are stored exactly as a real agent's are:

- A: a breadth-first exploration habit (Glob, Grep, then several Reads of src/api/*.py);
- B: later, depth-first debugging sessions that contradict it (a failing pytest, Read, Edit,
  pytest again...), which should become A's exception;
- C: a Read → Edit → `make docs` workflow repeated across three projects;
- noise: random tool calls (web fetches, shell commands, reads and edits anywhere).

Quality run: consolidate, approve every synthesis the review queue proposes (a reviewer who
trusts it), and report theses, syntheses accepted, artifacts published and precision: a thesis
is planted when most of its cluster's calls come from one planted pattern's sessions.
Throughput run: 10,000 observations replayed, then one consolidation timed end to end
(embedding, clustering, theses, antitheses, syntheses): observations per second.

    DEBUG=1 REDIS_URL=redis://127.0.0.1:6379/1 .venv/bin/python bench/dialectic.py

Real-use run (`--real`): every Claude Code transcript under --transcripts (default
$ENGRAM_TRANSCRIPTS, else /work/data/transcripts; skipped with a message when absent) is replayed
as one session through the same hook endpoint: SessionStart with the transcript's cwd, then for
each tool_use in order PreToolUse and PostToolUse (or PostToolUseFailure when its tool_result is
an error) with the real tool_input and result text, then Stop; each observation keeps the
transcript's time (shifted so the newest is an hour ago). One `consolidate()` follows, and the
run reports clusters, theses, antithesis rows, syntheses and the proposals sent to review, each
checked for a repeated tool name and a concrete practice and shown with the scope it is proposed
for (a project's own command stays in its project's scope). `--proposals FILE` writes the
proposals (text only) for labelling; `--labels FILE` (default bench/labels/dialectic_real.jsonl)
reads the hand labels back, matched to this run's syntheses by text and scope, and reports the
share a careful user would accept and how many of this run's proposals no label names yet.

    DEBUG=1 REDIS_URL=redis://127.0.0.1:6379/1 .venv/bin/python bench/dialectic.py --real --no-planted

The database comes from --database-url (default: ENGRAM_BENCH_DIALECTIC_DATABASE_URL, else
postgres://engram@127.0.0.1:5432/engram_bench_dialectic); it is created if missing and
migrated, and the bench owner's data in it is replaced. Never point it at a database you care
about. No LLM key is used: these are the fallbacks' numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import sys
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.hookpost import post_hook  # noqa: E402

DEFAULT_DB = "postgres://engram@127.0.0.1:5432/engram_bench_dialectic"
BENCH_USER = "bench-dialectic"
HOOK_URL = "/api/v1/hooks/claude-code"
SEED = 11
REAL_USER = "bench-dialectic-real"
DEFAULT_TRANSCRIPTS = "/work/data/transcripts"
DEFAULT_LABELS = ROOT / "bench" / "labels" / "dialectic_real.jsonl"

Call = tuple[str, dict[str, Any], bool]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ensure_database(url: str) -> None:
    parsed = urlparse(url)
    if not parsed.scheme.startswith("postgres"):
        return
    import psycopg

    name = parsed.path.lstrip("/")
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def bootstrap(database_url: str | None) -> str:
    url = database_url or os.environ.get("ENGRAM_BENCH_DIALECTIC_DATABASE_URL") or DEFAULT_DB
    ensure_database(url)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DEBUG", "1")
    os.environ["ANTHROPIC_API_KEY"] = ""  # the fallbacks, as most users get them
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "engramsite.settings")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.test.utils import setup_test_environment

    call_command("migrate", verbosity=0)
    setup_test_environment()
    return url


# --- planted sessions -----------------------------------------------------------------------

API_FILES = ["views.py", "models.py", "urls.py", "serializers.py", "permissions.py", "forms.py"]


def breadth_first(rng: random.Random) -> list[Call]:
    reads = rng.sample(API_FILES, rng.randint(3, 4))
    return [
        ("Glob", {"pattern": "src/api/**/*.py"}, True),
        (
            "Grep",
            {"pattern": rng.choice(["def get", "class .*View", "permission"]), "path": "src/api"},
            True,
        ),
        *[("Read", {"file_path": f"src/api/{name}"}, True) for name in reads],
    ]


def depth_first(rng: random.Random) -> list[Call]:
    target = rng.choice(API_FILES)
    test = f"pytest tests/test_{target.removesuffix('.py')}.py -x"
    calls: list[Call] = [("Bash", {"command": test}, False)]
    for attempt in range(rng.randint(1, 2)):
        calls += [
            ("Read", {"file_path": f"src/api/{target}"}, True),
            (
                "Edit",
                {"file_path": f"src/api/{target}", "old_string": "x", "new_string": "y"},
                True,
            ),
            ("Bash", {"command": test}, attempt == 1),
        ]
    return calls


def workflow(rng: random.Random) -> list[Call]:
    page = rng.choice(["guide.md", "install.md", "faq.md", "api.md"])
    return [
        ("Read", {"file_path": f"docs/{page}"}, True),
        ("Edit", {"file_path": f"docs/{page}", "old_string": "a", "new_string": "b"}, True),
        ("Bash", {"command": "make docs"}, True),
    ]


NOISE_TOOLS = ["WebFetch", "Bash", "Read", "Edit", "Write", "WebSearch", "TodoWrite", "Glob"]
WORDS = ["cache", "billing", "auth", "search", "email", "queue", "report", "export", "theme"]


def noise(rng: random.Random) -> list[Call]:
    calls: list[Call] = []
    for _ in range(rng.randint(2, 6)):
        tool = rng.choice(NOISE_TOOLS)
        word = rng.choice(WORDS)
        folder = rng.choice(["lib", "scripts", "web/static", "config", "infra", word])
        ext = rng.choice([".js", ".yaml", ".toml", ".sh", ".css", ".json", ".txt"])
        if tool == "WebFetch":
            data: dict[str, Any] = {"url": f"https://{word}.example.com/{rng.randint(1, 999)}"}
        elif tool == "WebSearch":
            data = {"query": f"{word} {rng.choice(WORDS)} error"}
        elif tool == "Bash":
            data = {
                "command": rng.choice(
                    [
                        "git status",
                        "ls -la",
                        "docker ps",
                        f"grep -r {word}",
                        "npm run build",
                        f"curl https://{word}.local",
                    ]
                )
            }
        elif tool == "TodoWrite":
            data = {"todos": [{"content": f"look at {word}"}]}
        elif tool == "Glob":
            data = {"pattern": f"{folder}/**/*{ext}"}
        else:
            data = {"file_path": f"{folder}/{word}{ext}"}
        calls.append((tool, data, rng.random() > 0.1))
    return calls


def schedule(rng: random.Random, scale: float) -> list[tuple[str, str, int, list[Call]]]:
    """(label, project, day, calls) in time order: A for three weeks, B in the third week."""
    plan: list[tuple[str, str, int, list[Call]]] = []
    for _ in range(round(14 * scale)):
        plan.append(("A", "shop", rng.randint(0, 20), breadth_first(rng)))
    for _ in range(round(14 * scale)):
        plan.append(("B", "shop", rng.randint(15, 21), depth_first(rng)))
    for _ in range(round(12 * scale)):
        plan.append(("C", rng.choice(["shop", "blog", "wiki"]), rng.randint(0, 21), workflow(rng)))
    for _ in range(round(30 * scale)):
        plan.append(("noise", rng.choice(["shop", "blog", "wiki"]), rng.randint(0, 21), noise(rng)))
    plan.sort(key=lambda row: row[2])
    return plan


# --- replay ---------------------------------------------------------------------------------


def reset_owner() -> tuple[Any, str]:
    from django.contrib.auth import get_user_model

    from memory.models import ApiToken

    User = get_user_model()
    User.objects.filter(username=BENCH_USER).delete()
    owner = User.objects.create_user(username=BENCH_USER, password="bench-pass-123")
    _, raw = ApiToken.issue(owner=owner, name="bench")
    return owner, raw


def replay(owner: Any, raw: str, plan: list[tuple[str, str, int, list[Call]]]) -> dict[str, Any]:
    from django.test import Client
    from django.utils import timezone

    from memory.models import AgentSession, Observation

    client = Client(headers={"Authorization": f"Bearer {raw}"})
    labels: dict[int, str] = {}
    latencies: list[float] = []
    start = timezone.now() - timedelta(days=22)
    for number, (label, project, day, calls) in enumerate(plan):
        cwd = f"/home/bench/{project}"
        sid = f"bench-{number}"

        def post(payload: dict[str, Any], sid: str = sid, cwd: str = cwd) -> None:
            body = {"session_id": sid, "cwd": cwd, **payload}
            started = time.perf_counter()
            response = post_hook(client, HOOK_URL, body)
            if payload["hook_event_name"].startswith("PostToolUse"):
                latencies.append((time.perf_counter() - started) * 1000)
            if response.status_code != 200:
                raise SystemExit(f"hook answered {response.status_code}: {response.content!r}")

        post({"hook_event_name": "SessionStart", "source": "startup"})
        for tool, data, ok in calls:
            data = {k: (f"{cwd}/{v}" if k == "file_path" else v) for k, v in data.items()}
            event = "PostToolUse" if ok else "PostToolUseFailure"
            post(
                {
                    "hook_event_name": event,
                    "tool_name": tool,
                    "tool_input": data,
                    ("tool_response" if ok else "error"): "ok"
                    if ok
                    else "1 failed: AssertionError",
                }
            )
        post({"hook_event_name": "Stop", "last_assistant_message": "done"})
        session = AgentSession.objects.get(owner=owner, session_id=sid)
        labels[session.pk] = label
        # Spread the sessions over three weeks, as they would have happened.
        when = start + timedelta(days=day, minutes=number)
        for offset, obs in enumerate(Observation.objects.filter(session=session).order_by("id")):
            Observation.objects.filter(pk=obs.pk).update(
                created_at=when + timedelta(seconds=offset)
            )
    return {"labels": labels, "latencies": latencies}


def thesis_label(thesis: Any, labels: dict[int, str]) -> tuple[str, float]:
    from dialectic.models import Trace

    sessions = Trace.objects.filter(cluster_id=thesis.cluster_id).values_list(
        "observation__session_id", flat=True
    )
    counts = Counter(labels.get(s or 0, "noise") for s in sessions)
    label, count = counts.most_common(1)[0]
    return label, count / max(1, sum(counts.values()))


def quality(scale: float) -> dict[str, Any]:
    from dialectic.models import Artifact, Synthesis, Thesis
    from dialectic.services.consolidation import consolidate
    from memory.models import Observation, ReviewItem
    from memory.services.review import review_decide

    rng = random.Random(SEED)
    owner, raw = reset_owner()
    plan = schedule(rng, scale)
    replayed = replay(owner, raw, plan)
    observations = Observation.objects.filter(owner=owner).count()
    log(f"quality: {len(plan)} sessions, {observations} observations replayed")
    counts = consolidate(owner=owner)
    approved = 0
    for item in ReviewItem.objects.filter(owner=owner, kind="synthesis", state="pending"):
        review_decide(owner=owner, item=item, action="approve", actor="bench")
        approved += 1
    labels = replayed["labels"]
    theses = []
    for thesis in Thesis.objects.filter(owner=owner).select_related("cluster"):
        label, purity = thesis_label(thesis, labels)
        published = Artifact.objects.filter(thesis=thesis, status="active").exists()
        syntheses = list(Synthesis.objects.filter(thesis=thesis))
        theses.append(
            {
                "id": thesis.pk,
                "label": label,
                "purity": round(purity, 2),
                "habit": " → ".join(thesis.expected_sequence),
                "about": thesis.cluster.label,
                "confidence": round(thesis.confidence, 2),
                "published": published,
                "syntheses": [
                    {
                        "q": round(s.q, 2),
                        "state": s.state,
                        "output": s.output_type,
                        "statement": s.statement,
                        "condition": s.condition,
                    }
                    for s in syntheses
                ],
            }
        )
    published = [t for t in theses if t["published"]]
    planted_published = [t for t in published if t["label"] != "noise"]
    found = {t["label"] for t in theses if t["label"] != "noise"}
    a_conditional = any(
        s["condition"] and s["state"] in ("approved", "review")
        for t in theses
        if t["label"] == "A"
        for s in t["syntheses"]
    )
    artifacts = list(Artifact.objects.filter(owner=owner).values_list("kind", "slug", "scope"))
    return {
        "sessions": len(plan),
        "observations": observations,
        "counts": counts.as_dict(),
        "theses": theses,
        "syntheses_accepted": Synthesis.objects.filter(owner=owner)
        .exclude(state="rejected_q")
        .count(),
        "syntheses_rejected_q": Synthesis.objects.filter(owner=owner, state="rejected_q").count(),
        "approved": approved,
        "artifacts": artifacts,
        "planted_found": sorted(found),
        "precision_published": len(planted_published) / len(published) if published else None,
        "a_has_condition": a_conditional,
        "hook_p50_ms": statistics.median(replayed["latencies"]),
        "hook_p95_ms": statistics.quantiles(replayed["latencies"], n=20)[-1],
    }


def throughput(target: int) -> dict[str, Any]:
    from dialectic.services.consolidation import consolidate
    from memory.models import Observation

    rng = random.Random(SEED + 1)
    owner, raw = reset_owner()
    plan: list[tuple[str, str, int, list[Call]]] = []
    total = 0
    while total < target:
        batch = schedule(rng, 1.0)
        for row in batch:
            if total >= target:
                break
            plan.append(row)
            total += len(row[3])
    started = time.perf_counter()
    replay(owner, raw, plan)
    replay_s = time.perf_counter() - started
    observations = Observation.objects.filter(owner=owner).count()
    log(f"throughput: {observations} observations replayed in {replay_s:.0f} s; consolidating")
    started = time.perf_counter()
    counts = consolidate(owner=owner)
    seconds = time.perf_counter() - started
    from dialectic.models import Antithesis, Thesis

    return {
        "observations": observations,
        "seconds": seconds,
        "per_second": observations / seconds,
        "counts": counts.as_dict(),
        "antithesis_rows": Antithesis.objects.filter(thesis__owner=owner).count(),
        "theses": Thesis.objects.filter(owner=owner).count(),
    }


# --- real transcripts ------------------------------------------------------------------------


def transcript_entries(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a transcript; a line holding two objects back to back (a Claude Code
    write race) yields both, a line that is not JSON is skipped."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        position, line = 0, line.strip()
        while position < len(line):
            try:
                value, end = decoder.raw_decode(line, position)
            except ValueError:
                break
            if isinstance(value, dict):
                found.append(value)
            position = end
            while position < len(line) and line[position].isspace():
                position += 1
    return found


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text") or "") if isinstance(block, dict) else str(block)
            for block in content
        )
    return json.dumps(content, default=str) if content is not None else ""


def transcript_calls(entries: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """(cwd, tool calls in order): each tool_use with its input, result text, error flag and
    time (the result's, else the call's)."""
    cwd = next((str(e["cwd"]) for e in entries if e.get("cwd")), "/home/bench/project")
    results: dict[str, tuple[str, bool, str]] = {}
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") != "user" or not isinstance(message, dict):
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results[str(block.get("tool_use_id"))] = (
                    _result_text(block.get("content")),
                    bool(block.get("is_error")),
                    str(entry.get("timestamp") or ""),
                )
    calls = []
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") != "assistant" or not isinstance(message, dict):
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            output, error, when = results.get(str(block.get("id")), ("", False, ""))
            calls.append(
                {
                    "id": str(block.get("id") or ""),
                    "tool": str(block.get("name") or ""),
                    "input": block.get("input") if isinstance(block.get("input"), dict) else {},
                    "output": output,
                    "error": error,
                    "when": when or str(entry.get("timestamp") or ""),
                }
            )
    return cwd, calls


def _parse_time(value: str) -> Any:
    from datetime import datetime

    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def real_replay(owner: Any, raw: str, directory: Path, *, pre: bool = True) -> dict[str, Any]:
    from django.test import Client
    from django.utils import timezone

    from memory.models import AgentSession, Observation

    client = Client(headers={"Authorization": f"Bearer {raw}"})
    files = sorted(directory.glob("*/*.jsonl"))
    sessions = []
    seen: set[str] = set()  # a resumed or forked session's file repeats the earlier calls (ids
    for path in files:  # kept), which Claude Code never sends to the hooks again
        cwd, calls = transcript_calls(transcript_entries(path))
        fresh = [c for c in calls if not (c["id"] and c["id"] in seen)]
        seen.update(c["id"] for c in calls if c["id"])
        calls = fresh
        if calls:
            sessions.append((path, cwd, calls))
    times = [t for _, _, calls in sessions for c in calls if (t := _parse_time(c["when"]))]
    shift = (timezone.now() - timedelta(hours=1)) - max(times) if times else timedelta(0)
    count = 0
    for number, (path, cwd, calls) in enumerate(sessions):
        sid = f"real-{number}-{path.stem}"[:200]

        def post(payload: dict[str, Any], sid: str = sid, cwd: str = cwd) -> None:
            body = {"session_id": sid, "cwd": cwd, **payload}
            answer = post_hook(client, HOOK_URL, body)
            if answer.status_code != 200:
                raise SystemExit(f"hook answered {answer.status_code}: {answer.content!r}")

        post({"hook_event_name": "SessionStart", "source": "startup"})
        for call in calls:
            base = {"tool_name": call["tool"], "tool_input": call["input"]}
            if pre:  # reminders only: it stores nothing consolidation reads
                post({"hook_event_name": "PreToolUse", **base})
            if call["error"]:
                post({"hook_event_name": "PostToolUseFailure", **base, "error": call["output"]})
            else:
                post({"hook_event_name": "PostToolUse", **base, "tool_response": call["output"]})
        post({"hook_event_name": "Stop", "last_assistant_message": "done"})
        session = AgentSession.objects.get(owner=owner, session_id=sid)
        observed = list(Observation.objects.filter(session=session).order_by("id"))
        for observation, call in zip(observed, calls, strict=False):
            when = _parse_time(call["when"])
            if when is not None:
                Observation.objects.filter(pk=observation.pk).update(created_at=when + shift)
        count += len(calls)
        log(f"real: {path.parent.name}/{path.name}: {len(calls)} calls")
    return {"files": len(files), "sessions": len(sessions), "calls": count}


def real_reset(owner: Any) -> None:
    """Forget what consolidation made of the owner's observations (to consolidate again)."""
    from dialectic.models import Cluster, Synthesis, Trace
    from memory.models import Observation, ReviewItem

    ReviewItem.objects.filter(owner=owner, kind="synthesis").delete()
    Synthesis.objects.filter(owner=owner).delete()
    Trace.objects.filter(owner=owner).delete()
    Cluster.objects.filter(owner=owner).delete()
    Observation.objects.filter(owner=owner).update(processed_at=None, embedding=None)


def proposal_checks(statement: str) -> dict[str, bool]:
    from dialectic import maths, practice

    repeated = bool(re.search(r"\b([A-Z]\w+)(?: then | → )\1\b", statement))
    return {
        "repeated_tool": repeated or maths.is_tool_list(statement),
        "names_practice": practice.names_practice(statement),
    }


def real(directory: Path, reuse: bool, *, pre: bool = True) -> dict[str, Any] | None:
    from django.contrib.auth import get_user_model

    from dialectic.models import Antithesis, Cluster, Synthesis, Thesis
    from dialectic.services.consolidation import consolidate
    from dialectic.services.publish import target_scope
    from memory.models import ApiToken, Observation, ReviewItem

    if not directory.is_dir():
        log(
            f"real: no transcripts in {directory} (set --transcripts or ENGRAM_TRANSCRIPTS): skipped"
        )
        return None
    User = get_user_model()
    owner = User.objects.filter(username=REAL_USER).first()
    replayed: dict[str, Any] = {}
    if reuse and owner is not None and Observation.objects.filter(owner=owner).exists():
        real_reset(owner)
    else:
        User.objects.filter(username=REAL_USER).delete()
        owner = User.objects.create_user(username=REAL_USER, password="bench-pass-123")
        _, raw = ApiToken.issue(owner=owner, name="bench")
        started = time.perf_counter()
        replayed = real_replay(owner, raw, directory, pre=pre)
        replayed["pre"] = pre
        replayed["seconds"] = time.perf_counter() - started
    started = time.perf_counter()
    counts = consolidate(owner=owner)
    seconds = time.perf_counter() - started
    syntheses = list(Synthesis.objects.filter(owner=owner).select_related("thesis"))
    # What the review queue shows: a proposal a newer one replaced before anyone decided it
    # (superseded) is not in it.
    superseded = [s for s in syntheses if s.state == Synthesis.State.SUPERSEDED]
    proposed = [
        s
        for s in syntheses
        if s.review_item_id is not None and s.state != Synthesis.State.SUPERSEDED
    ]
    written = [
        {
            "id": s.pk,
            "text": s.statement + (f" Except when {s.condition}." if s.condition else ""),
            "state": s.state,
            "q": round(s.q, 2),
            "confidence": round(s.confidence, 2),
            "exemplars": s.exemplars,
            "scope": target_scope(s),
            "projects": len(s.projects or []),
            "proposed": s.review_item_id is not None and s.state != Synthesis.State.SUPERSEDED,
        }
        for s in syntheses
    ]
    for item in written:
        item.update(proposal_checks(str(item["text"])))
    theses = list(Thesis.objects.filter(owner=owner, status="active"))
    return {
        **replayed,
        "observations": Observation.objects.filter(owner=owner).count(),
        "consolidate_seconds": seconds,
        "counts": counts.as_dict(),
        "details": counts.details,
        "clusters": Cluster.objects.filter(owner=owner).count(),
        "theses": len(theses),
        "thesis_statements": [t.statement for t in theses],
        "antithesis_rows": Antithesis.objects.filter(thesis__owner=owner).count(),
        "syntheses": written,
        "proposed": len(proposed),
        "superseded": len(superseded),
        "reviews": ReviewItem.objects.filter(owner=owner, kind="synthesis").count(),
    }


def labels_summary(path: Path, written: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The hand labels of this run's syntheses (matched by text and scope): of the proposals,
    and of the held-back syntheses sampled beside them; `unlabelled` counts this run's proposals
    that no label names yet."""
    if not path.is_file():
        return None
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    labels = {(r["text"], r.get("scope", "")): r["label"] for r in rows}
    found: dict[str, Any] = {}
    for name, wanted in (("proposed", True), ("held", False)):
        part = [labels.get((s["text"], s["scope"])) for s in written if s["proposed"] is wanted]
        labelled = [label for label in part if label]
        found[name] = {
            "labelled": len(labelled),
            "useful": labelled.count("useful"),
            "unlabelled": len(part) - len(labelled),
        }
    return found


def print_real(r: dict[str, Any], labels: dict[str, Any] | None) -> None:
    print("\n### Real tool use (Claude Code transcripts replayed through the hooks)\n")
    written = r["syntheses"]
    proposed = [s for s in written if s["proposed"]]
    print("| Measure | Value |\n|---|---|")
    if "calls" in r:
        print(
            f"| Replayed | {r['sessions']} sessions, {r['calls']} tool calls "
            f"({r['observations']} observations) in {r['seconds']:.0f} s"
            + ("" if r.get("pre") else ", PostToolUse only")
            + " |"
        )
    print(f"| Clusters | {r['clusters']} |")
    print(f"| Theses (active) | {r['theses']} |")
    print(f"| Antithesis rows | {r['antithesis_rows']} |")
    print(f"| Syntheses written (accepted by Q) | {len(written)} ({r['counts']['accepted']}) |")
    print(
        f"| Proposed for review (replaced before a decision) | {r['proposed']} ({r['superseded']}) |"
    )
    repeated = sum(1 for s in written if s["repeated_tool"])
    vague = sum(1 for s in written if not s["names_practice"])
    t_repeated = sum(1 for t in r["thesis_statements"] if proposal_checks(t)["repeated_tool"])
    t_vague = sum(1 for t in r["thesis_statements"] if not proposal_checks(t)["names_practice"])
    print(f"| Syntheses that are a repeated tool name / name no practice | {repeated} / {vague} |")
    print(f"| Theses that are a repeated tool name / name no practice | {t_repeated} / {t_vague} |")
    print(f"| Consolidation | {r['consolidate_seconds']:.1f} s |")
    if labels:
        for name, what in (("proposed", "proposals"), ("held", "held-back syntheses (sample)")):
            part = labels[name]
            share = part["useful"] / part["labelled"] if part["labelled"] else 0.0
            print(
                f"| Hand-labelled {what} a careful user would accept | {part['useful']} of "
                f"{part['labelled']} ({share:.0%}; {part['unlabelled']} not labelled) |"
            )
    print("\nProposed for review:\n")
    for s in proposed:
        print(
            f"- (Q {s['q']:.2f}, conf {s['confidence']:.2f}, {s['exemplars']} exemplars, "
            f"for {s['scope']}) {s['text']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url")
    parser.add_argument("--scale", type=float, default=3.0, help="quality run size")
    parser.add_argument("--observations", type=int, default=10_000, help="throughput run size")
    parser.add_argument("--real", action="store_true", help="replay the real transcripts too")
    parser.add_argument("--no-planted", action="store_true", help="skip the planted runs")
    parser.add_argument(
        "--transcripts",
        type=Path,
        default=Path(os.environ.get("ENGRAM_TRANSCRIPTS") or DEFAULT_TRANSCRIPTS),
    )
    parser.add_argument(
        "--reuse", action="store_true", help="consolidate the last real replay again"
    )
    parser.add_argument(
        "--no-pre", action="store_true", help="real run: post no PreToolUse (half the requests)"
    )
    parser.add_argument("--proposals", type=Path, help="write the real run's syntheses (JSONL)")
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS)
    args = parser.parse_args()
    bootstrap(args.database_url)
    if args.real:
        r = real(args.transcripts, args.reuse, pre=not args.no_pre)
        if r is not None:
            if args.proposals:
                args.proposals.write_text(
                    "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in r["syntheses"])
                )
            print_real(r, labels_summary(args.labels, r["syntheses"]))
            log(json.dumps({"real_counts": r["counts"], "details": r["details"][:200]}))
    if args.no_planted:
        return
    q = quality(args.scale)
    t = throughput(args.observations)
    print("## Dialectic consolidation\n")
    print(
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores "
        "(shared with other work while measured). No LLM key: fallbacks throughout.\n"
    )
    print(
        f"Quality run: {q['sessions']} sessions, {q['observations']} observations "
        f"(planted A breadth-first habit, B contradicting depth-first debugging, C "
        "Read → Edit → make docs in 3 projects, noise).\n"
    )
    print("| Measure | Value |\n|---|---|")
    print(f"| Theses found | {len(q['theses'])} |")
    print(f"| Planted patterns found (as theses) | {', '.join(q['planted_found'])} of A, B, C |")
    print(
        f"| Syntheses accepted (Q > 0.6) / rejected | {q['syntheses_accepted']} / "
        f"{q['syntheses_rejected_q']} |"
    )
    print(f"| A's synthesis has a condition (B) | {'yes' if q['a_has_condition'] else 'no'} |")
    print(
        f"| Artifacts published (all proposals approved) | {len(q['artifacts'])}: "
        + ", ".join(f"{k} {s} ({sc})" for k, s, sc in q["artifacts"])
        + " |"
    )
    precision = q["precision_published"]
    print(
        f"| Precision of published theses vs planted | "
        f"{'n/a' if precision is None else f'{precision:.2f}'} |"
    )
    print(
        f"| PostToolUse hook p50 / p95 (ms, in-process) | {q['hook_p50_ms']:.1f} / "
        f"{q['hook_p95_ms']:.1f} |"
    )
    print(
        f"| Consolidation throughput at {t['observations']} observations | "
        f"{t['per_second']:.0f} obs/s ({t['seconds']:.1f} s, embedding included) |"
    )
    print(
        f"| Antithesis rows after {t['observations']} observations | {t['antithesis_rows']} "
        f"for {t['theses']} theses (at most 10 per thesis: "
        f"{'yes' if t['antithesis_rows'] <= 10 * t['theses'] else 'no'}) |"
    )
    print("\nTheses (label = planted pattern most of the cluster's calls come from):\n")
    print(
        "| Thesis | Label (purity) | Habit | conf | Published | Syntheses |\n|---|---|---|---|---|---|"
    )
    for th in q["theses"]:
        syn = "; ".join(
            f"Q {s['q']:.2f} {s['state']} {s['output']}"
            + (f" — except when {s['condition']}" if s["condition"] else "")
            for s in th["syntheses"]
        )
        print(
            f"| {th['about']} | {th['label']} ({th['purity']:.2f}) | {th['habit']} | "
            f"{th['confidence']:.2f} | {'yes' if th['published'] else 'no'} | {syn or '—'} |"
        )
    log(json.dumps({"stage_counts_quality": q["counts"], "stage_counts_throughput": t["counts"]}))
    q_values = sorted(
        (th["label"], th["habit"], s["q"], s["state"])
        for th in q["theses"]
        for s in th["syntheses"]
    )
    log(json.dumps({"synthesis_q": q_values}))


if __name__ == "__main__":
    main()
