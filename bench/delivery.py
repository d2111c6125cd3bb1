"""What reaches the agent, replayed through the Claude Code hook endpoint (issue #25).

Replay: the coding-prompts dev split (../shared/eval-data/coding-prompts/dev.jsonl; each
repository a project, each chat a session, prompts in order, no API key, capture running: every
prompt goes through the learning classifier and every Stop extracts lessons in-process) and,
when present, the real transcripts' labelled prompts (/work/data/transcripts/labels.jsonl, each
folder a project, each file a session). Per corpus it prints:
- injected characters per UserPromptSubmit (mean, p95) and the share of prompts with any;
- the SessionStart brief's characters (mean over sessions);
- for every labelled rule prompt whose rule matches an engram captured in an earlier session (two
  or more shared salient terms covering at least half of the rule's, `memory.maths.delivery.terms`;
  a rule captured earlier in the same session is in the agent's conversation already), whether
  that engram reached the agent in that session (the brief or a prompt, up to and including this
  one).
Then SessionStart / UserPromptSubmit / PreToolUse latency (p50/p95, Django test client, full
stack in-process) over N engrams (default 1,000: cursorrules bullets plus the captured rules).

    DEBUG=1 .venv/bin/python bench/delivery.py                    # SQLite, embedded default
    .venv/bin/python bench/delivery.py --floor 0.4 --min-shared 2  # calibrate the gate
    .venv/bin/python bench/delivery.py --latency-only --engrams 10000 \\
        --database-url postgres://engram@127.0.0.1:5432/engram_bench_delivery
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
EVAL = ROOT.parent / "shared" / "eval-data"
DEV = EVAL / "coding-prompts" / "dev.jsonl"
TRANSCRIPTS = Path(os.environ.get("ENGRAM_TRANSCRIPTS", "/work/data/transcripts"))
HOOK = "/api/v1/hooks/claude-code"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def bootstrap(database_url: str | None, *, eager: bool = True) -> None:
    data = tempfile.mkdtemp(prefix="engram-delivery-")
    os.environ.update(
        {
            "DATABASE_URL": database_url or f"sqlite:///{data}/engram.sqlite3",
            "ENGRAM_DATA_DIR": data,
            "REDIS_URL": "",
            "CELERY_TASK_ALWAYS_EAGER": "1" if eager else "0",
            "ANTHROPIC_API_KEY": "",
            "LOG_LEVEL": "WARNING",
        }
    )
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "engramsite.settings")
    os.environ.setdefault("SECRET_KEY", "engram-delivery-bench-not-secret")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    call_command("migrate", verbosity=0)


def start_worker() -> subprocess.Popen[bytes]:
    """A Celery worker on the same data directory and database, as `engram run` starts one."""
    command = [sys.executable, "-m", "celery", "-A", "engramsite", "worker"]
    command += ["--loglevel", "WARNING", "--concurrency", "1", "--hostname", "bench@%h"]
    worker = subprocess.Popen(command, cwd=str(Path(__file__).resolve().parent.parent))
    time.sleep(5)  # let it connect before the first hook
    log(f"worker started (pid {worker.pid})")
    return worker


def new_client(username: str) -> tuple[Any, Any]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from memory.models import ApiToken

    owner = get_user_model().objects.create_user(username=username)
    _, raw = ApiToken.issue(owner=owner, name=username)
    return owner, Client(headers={"Authorization": f"Bearer {raw}"})


def context_of(response: Any) -> str:
    if response.status_code != 200:
        raise SystemExit(f"HTTP {response.status_code}: {response.content[:300]!r}")
    return str(response.json().get("hookSpecificOutput", {}).get("additionalContext", ""))


def hook(client: Any, event: str, session: str, cwd: str, **fields: Any) -> str:
    body = {"hook_event_name": event, "session_id": session, "cwd": cwd, **fields}
    return context_of(client.post(HOOK, json.dumps(body), content_type="application/json"))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def rule_matches(rule: str, statement: str) -> bool:
    """A labelled rule and a captured engram say the same thing: ≥ 2 shared salient terms,
    covering at least half of the rule's (or of the engram's) terms."""
    from memory.maths.delivery import terms

    a, b = terms(rule), terms(statement)
    shared = a & b
    return len(shared) >= 2 and len(shared) >= 0.5 * min(len(a), len(b))


def dev_sessions() -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(project cwd, session id, prompts in order) for the dev split."""
    chats: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in read_jsonl(DEV):
        chats[(row["repo"], row["chat_index"])].append(row)
    out = []
    for (repo, chat), rows in sorted(chats.items()):
        rows.sort(key=lambda r: r["turn_index"])
        prompts = [
            {"text": r["prompt"], "rule": r["kind"] == "rule", "rules": r["rules"]} for r in rows
        ]
        out.append((f"/work/{repo.split('/')[-1]}", f"{repo}#{chat}", prompts))
    return out


def transcript_sessions() -> list[tuple[str, str, list[dict[str, Any]]]]:
    labels = TRANSCRIPTS / "labels.jsonl"
    if not labels.exists():
        return []
    by_file: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in read_jsonl(labels):
        # `file` is "<repo folder>/<session>.jsonl" or, in newer labels, "<session>.jsonl"
        # beside a `repo` field
        file = str(row["file"])
        if "/" not in file and row.get("repo"):
            file = f"{row['repo']}/{file}"
        by_file[file].append(row)
    out = []
    for file, rows in sorted(by_file.items()):
        project = file.split("/", 1)[0]
        prompts = [
            {"text": r["text"], "rule": r["label"] == "rule", "rules": r.get("rules") or []}
            for r in rows
        ]
        out.append((f"/work/{project}", file, prompts))
    return out


def replay(name: str, sessions: list[tuple[str, str, list[dict[str, Any]]]]) -> dict[str, Any]:
    from memory.models import Engram

    owner, client = new_client(f"replay-{name}")
    chars: list[int] = []
    brief_chars: list[int] = []
    restated = reached = 0
    misses: list[str] = []
    started = time.perf_counter()
    for cwd, session, prompts in sessions:
        seen: set[str] = set()
        # Rules captured earlier in this same session are in the agent's conversation already
        # (the person typed them minutes ago): only rules from earlier sessions count.
        earlier = set(
            Engram.objects.filter(owner=owner, status="active").values_list("engram_id", flat=True)
        )
        brief = hook(client, "SessionStart", session, cwd, source="startup")
        brief_chars.append(len(brief))
        seen.update(ids_in(brief))
        for prompt in prompts:
            before = (
                list(
                    Engram.objects.filter(
                        owner=owner, status="active", engram_id__in=earlier
                    ).values_list("engram_id", "statement")
                )
                if prompt["rule"]
                else []
            )
            text = hook(client, "UserPromptSubmit", session, cwd, prompt=prompt["text"])
            chars.append(len(text))
            seen.update(ids_in(text))
            for rule in prompt["rules"]:
                matching = [eid for eid, statement in before if rule_matches(rule, statement)]
                if not matching:
                    continue
                restated += 1
                if seen & set(matching):
                    reached += 1
                else:
                    misses.append(f"{session}: {rule[:90]}")
        hook(client, "Stop", session, cwd, last_assistant_message="Done.")
    injected = [c for c in chars if c]
    result = {
        "corpus": name,
        "sessions": len(sessions),
        "prompts": len(chars),
        "mean_chars": statistics.fmean(chars) if chars else 0.0,
        "p95_chars": percentile([float(c) for c in chars], 95),
        "share_injected": len(injected) / len(chars) if chars else 0.0,
        "mean_brief_chars": statistics.fmean(brief_chars) if brief_chars else 0.0,
        "restated": restated,
        "reached": reached,
        "engrams": Engram.objects.filter(owner=owner, status="active").count(),
        "seconds": time.perf_counter() - started,
    }
    for miss in misses[:10]:
        log(f"  missed: {miss}")
    log(f"{name}: {json.dumps(result)}")
    return result


def ids_in(text: str) -> set[str]:
    import re

    return set(re.findall(r"\[((?:ENG|ABS|META)-[\w-]+)\]", text))


def latency(n_engrams: int, n_calls: int) -> list[dict[str, Any]]:
    from bench.hooks import corpus, seed

    owner, client = new_client("latency")
    statements, queries = corpus(n_engrams, n_calls)
    seed(owner, statements)
    prompts = [r["prompt"] for r in read_jsonl(DEV)] if DEV.exists() else queries
    commands = [
        "pytest tests -q",
        "git add -A",
        "git push --force origin main",
        "ls -la",
        "rg TODO",
    ]
    cwd = "/work/bench"
    rows = []
    for event, make in (
        ("SessionStart", lambda i: {"source": "startup"}),
        ("UserPromptSubmit", lambda i: {"prompt": prompts[i % len(prompts)]}),
        (
            "PreToolUse",
            lambda i: {"tool_name": "Bash", "tool_input": {"command": commands[i % len(commands)]}},
        ),
    ):
        timings: list[float] = []
        with_context = 0
        for i in range(-10, n_calls):
            session = f"lat-{event}-{i}" if event == "SessionStart" else f"lat-{i // 20}"
            body = json.dumps(
                {"hook_event_name": event, "session_id": session, "cwd": cwd, **make(i)}
            )
            t0 = time.perf_counter()
            response = client.post(HOOK, body, content_type="application/json")
            elapsed = (time.perf_counter() - t0) * 1000
            text = context_of(response)
            if i >= 0:  # the first ten warm caches up
                timings.append(elapsed)
                with_context += bool(text)
        row = {
            "event": event,
            "engrams": n_engrams,
            "n": len(timings),
            "p50": statistics.median(timings),
            "p95": percentile(timings, 95),
            "with_context": with_context,
        }
        log(json.dumps(row))
        rows.append(row)
    return rows


def table(rows: Iterable[dict[str, Any]], keys: list[str]) -> str:
    rows = list(rows)
    head = "| " + " | ".join(keys) + " |\n|" + "---|" * len(keys) + "\n"
    body = ""
    for row in rows:
        cells = []
        for key in keys:
            value = row.get(key, "")
            cells.append(f"{value:.3f}" if isinstance(value, float) else str(value))
        body += "| " + " | ".join(cells) + " |\n"
    return head + body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--floor", type=float, help="coverage floor of the prompt gate")
    parser.add_argument("--min-shared", type=int, help="shared terms the prompt gate needs")
    parser.add_argument("--engrams", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--latency-only", action="store_true")
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--no-transcripts", action="store_true")
    parser.add_argument("--database-url", help="default: a fresh SQLite file (embedded)")
    parser.add_argument(
        "--worker",
        action="store_true",
        help="latency as deployed: capture queued on the embedded (filesystem) transport and run by "
        "a real Celery worker process beside the hooks, not inline (implies --latency-only)",
    )
    args = parser.parse_args()
    if args.worker:
        args.latency_only = True
    bootstrap(args.database_url, eager=not args.worker)
    worker = start_worker() if args.worker else None
    from memory.maths import delivery

    if args.floor is not None or args.min_shared is not None:
        floor = args.floor if args.floor is not None else delivery.COVERAGE_FLOOR
        shared = args.min_shared if args.min_shared is not None else delivery.MIN_SHARED
        from memory.services import delivery as service

        original = service.prompt_deliver

        def tuned(**kwargs: Any) -> Any:
            return original(**kwargs, floor=floor, min_shared=shared)

        service.prompt_deliver = tuned  # type: ignore[assignment]
        log(f"gate: coverage ≥ {floor}, ≥ {shared} shared terms")
    replays = []
    if not args.latency_only:
        if DEV.exists():
            replays.append(replay("coding-prompts dev", dev_sessions()))
        else:
            log(f"{DEV} not found: skipping the dev-split replay")
        found = [] if args.no_transcripts else transcript_sessions()
        if found:
            replays.append(replay("real transcripts", found))
    lat = [] if args.no_latency else latency(args.engrams, args.calls)
    if replays:
        print(
            table(
                replays,
                [
                    "corpus", "sessions", "prompts", "mean_chars", "p95_chars",
                    "share_injected", "mean_brief_chars", "restated", "reached", "engrams",
                ],
            )
        )  # fmt: skip
    if lat:
        print(table(lat, ["event", "engrams", "n", "p50", "p95", "with_context"]))
    if worker is not None:
        worker.terminate()
        worker.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
