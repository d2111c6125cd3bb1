"""Load: N simulated Claude Code agents against a real Engram server, then a lost-write audit.

Starts a real server on loopback (gunicorn + a Celery worker) on a store of its own, then runs N
agents (threads, one keep-alive connection each) for a fixed time. Each agent runs sessions the
way Claude Code does: SessionStart, then turns of UserPromptSubmit (some prompts state a rule),
PreToolUse / PostToolUse (some PostToolUseFailure) per tool call and a Stop at the end of each
turn, then SessionEnd; now and then a REST learn (POST /api/v1/engrams) or recall. Between two
calls an agent waits a random think time (exponential, mean --think-ms), as a model would.

Afterwards, once the worker has drained its queue, every acknowledged write is looked up in
the database: observations (per session), learned engrams (by id), learning signals of rule
prompts, session ends, and outcomes of every injected engram of every ended session (no
session left half-attributed). `lost writes` must be 0.

    # PostgreSQL + Redis (creates/recreates database engram_reliability_load)
    .venv/bin/python bench/load.py --backend postgres \\
        --database-url postgres://engram@127.0.0.1:5432/engram_reliability_load \\
        --redis-url redis://127.0.0.1:6379/4
    # The embedded default: SQLite + the filesystem broker in a temporary data directory
    .venv/bin/python bench/load.py --backend embedded --agents 10

Prints a markdown report (for docs/reliability.md) and exits 1 on any error or lost write.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
HOOK_PATH = "/api/v1/hooks/claude-code"
BENCH_USER = "bench-load"
SECRET = "engram-bench-load-secret-not-for-production"
SEED = 19
MAX_DURATION_S = 900
REQUEST_TIMEOUT_S = 30.0
# engram-hook's own timeout (ENGRAM_HOOK_TIMEOUT default): an answer later than this is lost.
HOOK_TIMEOUT_S = 3.0

RULES = [
    "Always use pathlib instead of os.path for file paths.",
    "Never commit directly to the main branch; open a pull request.",
    "Always run the test suite before pushing.",
    "Use structured logging with the request id in every line.",
    "Never log secrets or tokens, even at debug level.",
    "Prefer dataclasses over plain dicts for records passed between modules.",
    "Always add a migration when a model field changes.",
    "Use UTC everywhere and convert to local time only for display.",
    "Never catch bare exceptions; name the error you expect.",
    "Keep database transactions short; no network calls inside them.",
    "Always pin dependency versions in the lock file.",
    "Use parametrised SQL, never string formatting, for queries.",
    "Prefer small pure functions that are easy to test.",
    "Always validate user input at the boundary and return a 4xx for bad input.",
    "Use feature flags for risky changes and remove them afterwards.",
    "Run ruff and mypy before every commit.",
    "Never use mutable default arguments in Python functions.",
    "Always close files with a context manager.",
    "Write the failing test first, then the fix.",
    "Document every public function with a one-line docstring.",
]
TASK_PROMPTS = [
    "Fix the failing test in the payments module",
    "Add pagination to the users endpoint",
    "Refactor the file loader to use pathlib",
    "Why does the deploy script fail on the staging server?",
    "Add logging to the background job that sends emails",
    "Write a migration that adds an index on orders.created_at",
    "Review this function for SQL injection risks",
    "Speed up the report generation query",
    "Make the CLI accept a --dry-run flag",
    "Upgrade the HTTP client library and fix what breaks",
]
RULE_PROMPTS = [
    "From now on, always use pathlib for paths in this repo.",
    "Never push to main directly, always open a pull request first.",
    "Always run the tests before you commit anything.",
    "Never print tokens in logs, ever.",
    "Don't use bare except clauses; always name the exception.",
    "Always use UTC timestamps in the database.",
]
TOOLS = [
    ("Bash", lambda n: {"command": f"pytest tests/test_{n}.py -q", "description": "run tests"}),
    ("Read", lambda n: {"file_path": f"/home/dev/project/src/module_{n}.py"}),
    (
        "Edit",
        lambda n: {
            "file_path": f"/home/dev/project/src/m{n}.py",
            "old_string": "a",
            "new_string": "b",
        },
    ),
    ("Grep", lambda n: {"pattern": f"def handler_{n}", "path": "src"}),
    ("Bash", lambda n: {"command": f"git diff --stat HEAD~{n % 5 + 1}", "description": "diff"}),
    ("Write", lambda n: {"file_path": f"/home/dev/project/notes_{n}.md", "content": "notes " * 40}),
]
EVENTS = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SessionEnd",
    "REST learn",
    "REST recall",
]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- the store and the server ---------------------------------------------------------------


def recreate_postgres(url: str) -> None:
    import psycopg

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    if not re.fullmatch(r"engram_[a-z0-9_]+", name):
        raise SystemExit(f"refusing to recreate database {name!r}: name it engram_<something>")
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def server_env(args: argparse.Namespace, data_dir: Path) -> dict[str, str]:
    keep = {"ENGRAM_BROKER_POLL_SECONDS"}  # a server setting under test, passed through
    env = {
        k: v for k, v in os.environ.items() if k in keep or not k.startswith(("CELERY_", "ENGRAM_"))
    }
    env.update(
        {
            "SECRET_KEY": SECRET,
            "DEBUG": "0",
            "ENGRAM_DATA_DIR": str(data_dir),
            "LOG_LEVEL": "WARNING",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DJANGO_SETTINGS_MODULE": "engramsite.settings",
        }
    )
    if args.rate_limit:  # else the server's default, as a user gets it
        env["ENGRAM_RATE_LIMIT_PER_MINUTE"] = str(args.rate_limit)
    if args.backend == "postgres":
        env["DATABASE_URL"] = args.database_url
        env["REDIS_URL"] = args.redis_url
    else:
        env["DATABASE_URL"] = "sqlite:///" + str(data_dir / "engram.sqlite3")
        env.pop("REDIS_URL", None)
    return env


def django_setup(env: dict[str, str]) -> None:
    os.environ.update(env)
    if args_backend_embedded(env):
        os.environ.pop("REDIS_URL", None)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def args_backend_embedded(env: dict[str, str]) -> bool:
    return env["DATABASE_URL"].startswith("sqlite")


@dataclass
class Server:
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    logs: dict[str, Path] = field(default_factory=dict)
    commands: dict[str, list[str]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def kill(self, name: str) -> None:
        """SIGKILL one part and its children (a crash, not a shutdown)."""
        proc = self.procs[name]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def restart(self, name: str) -> None:
        with self.logs[name].open("ab") as out:
            self.procs[name] = subprocess.Popen(
                self.commands[name], cwd=ROOT, env=self.env, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def start_server(env: dict[str, str], args: argparse.Namespace, data_dir: Path) -> Server:
    server = Server()
    commands = {
        "web": [
            PYTHON, "-m", "gunicorn", "engramsite.wsgi:application",
            "--bind", f"127.0.0.1:{args.port}",
            "--workers", str(args.web_workers),
            "--threads", str(args.threads),
            "--worker-class", "gthread",
            "--timeout", "60",
            "--keep-alive", "30",
            "--backlog", "512",
        ],
        "worker": [
            PYTHON, "-m", "celery", "-A", "engramsite", "worker",
            "--loglevel", "WARNING", "--concurrency", str(args.worker_concurrency),
            "--hostname", f"bench-load-{os.getpid()}@%h", "--without-gossip", "--without-mingle",
        ],
    }  # fmt: skip
    for name, cmd in commands.items():
        path = data_dir / f"{name}.log"
        server.logs[name] = path
        with path.open("ab") as out:
            server.procs[name] = subprocess.Popen(
                cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
    server.commands = commands
    server.env = env
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for name, proc in server.procs.items():
            if proc.poll() is not None:
                server.stop()
                raise SystemExit(f"{name} exited early; see {server.logs[name]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status < 500:
                return server
        except OSError:
            pass
        time.sleep(0.5)
    server.stop()
    raise SystemExit("the web server did not answer within 120 s")


def seed_store(n_rules: int) -> tuple[str, Any]:
    """The bench owner, a token and rule engrams (some reminder-level) to inject."""
    from django.contrib.auth import get_user_model

    from memory.models import ApiToken, Engram
    from memory.services.engrams import engram_learn_batch

    owner, _ = get_user_model().objects.get_or_create(username=BENCH_USER)
    _, raw = ApiToken.issue(owner=owner, name=f"load-{uuid.uuid4().hex[:6]}")
    if not Engram.objects.filter(owner=owner).exists():
        rng = random.Random(SEED)
        rules = (RULES * (n_rules // len(RULES) + 1))[:n_rules]
        items = [
            {
                "statement": r if i < len(RULES) else f"{r} (variant {i})",
                "scope": "global" if i % 3 == 0 else f"project:app{rng.randrange(5)}",
                "source": "user",
            }
            for i, r in enumerate(rules)
        ]
        engram_learn_batch(owner=owner, items=items, actor="bench")
        for engram in Engram.objects.filter(owner=owner).order_by("pk")[:4]:
            engram.enforcement = Engram.Enforcement.REMINDER
            engram.trigger_context = "pytest"
            engram.save(update_fields=["enforcement", "trigger_context"])
    return raw, owner


# --- the agents -----------------------------------------------------------------------------


@dataclass
class Ledger:
    """What the server acknowledged, to look up afterwards."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    observations: Counter[str] = field(default_factory=Counter)  # session_id -> acked count
    learned: set[str] = field(default_factory=set)  # engram ids the REST learn returned
    rule_prompts: Counter[str] = field(default_factory=Counter)  # session_id -> signals expected
    ended: set[str] = field(default_factory=set)  # sessions whose SessionEnd was acked
    sessions: set[str] = field(default_factory=set)
    over_timeout: int = 0

    def record(self, event: str, status: int, seconds: float, detail: str = "") -> None:
        with self.lock:
            self.latencies[event].append(seconds)
            self.statuses[(event, status)] += 1
            if seconds > HOOK_TIMEOUT_S:
                self.over_timeout += 1
            if status >= 400 or status == 0:
                self.errors.append(f"{event} {status} {detail[:200]}")


class Agent(threading.Thread):
    def __init__(self, index: int, port: int, token: str, stop_at: float, think_ms: float,
                 ledger: Ledger) -> None:  # fmt: skip
        super().__init__(daemon=True, name=f"agent-{index}")
        self.index = index
        self.port = port
        self.token = token
        self.stop_at = stop_at
        self.think = think_ms / 1000.0
        self.ledger = ledger
        self.rng = random.Random(SEED * 1000 + index)
        self.conn: http.client.HTTPConnection | None = None
        self.classify: Any = None

    def _send(self, event: str, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, dict[str, Any]]:  # fmt: skip
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        started = time.perf_counter()
        status, answer, detail = 0, {}, ""
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection(
                        "127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_S
                    )
                self.conn.request(method, path, body=data, headers=headers)
                response = self.conn.getresponse()
                raw = response.read()
                status = response.status
                if response.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                try:
                    answer = json.loads(raw) if raw else {}
                except ValueError:
                    answer, detail = {}, raw[:200].decode("utf-8", "replace")
                if status >= 400:
                    detail = json.dumps(answer)[:200] if answer else detail
                break
            except (OSError, http.client.HTTPException) as exc:
                # A keep-alive connection the server closed: reconnect once, then count it.
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                status, detail = 0, f"{type(exc).__name__}: {exc}"
                if attempt == 1 or not isinstance(
                    exc, (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)
                ):
                    break
        self.ledger.record(event, status, time.perf_counter() - started, detail)
        return status, answer

    def hook(self, event: str, session: str, **fields: Any) -> tuple[int, dict[str, Any]]:
        payload = {
            "hook_event_name": event,
            "session_id": session,
            "cwd": f"/home/dev/app{self.index % 5}",
            "transcript_path": f"/tmp/does-not-exist/{session}.jsonl",
            **fields,
        }
        return self._send(event, "POST", HOOK_PATH, payload)

    def pause(self) -> bool:
        time.sleep(min(self.think * 5, self.rng.expovariate(1 / self.think) if self.think else 0))
        return time.monotonic() < self.stop_at

    def run(self) -> None:
        from memory.maths.learning import classify

        serial = 0
        while time.monotonic() < self.stop_at:
            session = f"load-{self.index}-{uuid.uuid4().hex[:10]}"
            with self.ledger.lock:
                self.ledger.sessions.add(session)
            self.hook("SessionStart", session, source="startup")
            for _turn in range(self.rng.randint(1, 3)):
                if not self.pause():
                    break
                if self.rng.random() < 0.25:
                    prompt = self.rng.choice(RULE_PROMPTS) + f" ({uuid.uuid4().hex[:6]})"
                else:
                    prompt = self.rng.choice(TASK_PROMPTS)
                status, _ = self.hook("UserPromptSubmit", session, prompt=prompt)
                if status == 200 and classify(prompt).is_signal:
                    with self.ledger.lock:
                        self.ledger.rule_prompts[session] += 1
                for _call in range(self.rng.randint(2, 6)):
                    if not self.pause():
                        break
                    serial += 1
                    tool, make_input = self.rng.choice(TOOLS)
                    tool_input = make_input(serial)
                    tool_input["_op"] = f"{session}:{serial}"
                    self.hook("PreToolUse", session, tool_name=tool, tool_input=tool_input)
                    if self.rng.random() < 0.1:
                        event, extra = "PostToolUseFailure", {"error": "exit status 1"}
                    else:
                        event, extra = "PostToolUse", {"tool_response": {"stdout": "ok " * 30}}
                    status, _ = self.hook(
                        event, session, tool_name=tool, tool_input=tool_input, **extra
                    )
                    if status == 200:
                        with self.ledger.lock:
                            self.ledger.observations[session] += 1
                    roll = self.rng.random()
                    if roll < 0.03:
                        statement = (
                            f"{self.rng.choice(RULES)} Learned by agent {self.index} "
                            f"on call {serial} ({uuid.uuid4().hex[:8]})."
                        )
                        status, answer = self._send(
                            "REST learn",
                            "POST",
                            "/api/v1/engrams",
                            {"statement": statement, "scope": f"project:app{self.index % 5}"},
                        )
                        if status == 201:
                            with self.ledger.lock:
                                self.ledger.learned.add(answer["engram"]["id"])
                    elif roll < 0.06:
                        self._send(
                            "REST recall",
                            "POST",
                            "/api/v1/recall",
                            {"query": self.rng.choice(TASK_PROMPTS), "limit": 5},
                        )
                self.hook("Stop", session, stop_hook_active=False)
            status, _ = self.hook("SessionEnd", session, reason="exit")
            if status == 200:
                with self.ledger.lock:
                    self.ledger.ended.add(session)
        if self.conn is not None:
            self.conn.close()


# --- the audit ------------------------------------------------------------------------------


def drain(owner: Any, sessions: set[str], timeout: float) -> float:
    """Wait until the worker attributed every ended session (or the timeout); seconds waited."""
    from memory.models import AgentSession, LearningSignal

    started = time.monotonic()
    while time.monotonic() - started < timeout:
        pending = AgentSession.objects.filter(
            owner=owner, session_id__in=sessions, ended_at__isnull=False, attributed_at__isnull=True
        ).count()
        signals = LearningSignal.objects.filter(
            owner=owner, state=LearningSignal.State.PENDING
        ).count()
        if pending == 0 and signals == 0:
            break
        time.sleep(1)
    return time.monotonic() - started


def sweep() -> dict[str, int]:
    """What the worker had not done by the end of the drain, done as the periodic sweep does
    (engram.sweep_pending, every 2 minutes), without its grace period."""
    from datetime import timedelta

    from memory.services.recovery import pending_sweep

    done: dict[str, int] = Counter()
    while True:
        step = pending_sweep(grace=timedelta(0))
        for key, value in step.items():
            done[key] += value
        if not step["sessions_attributed"] and not step["signals_processed"]:
            return dict(done)


def audit(owner: Any, ledger: Ledger) -> dict[str, Any]:
    from django.db.models import Count

    from memory.models import AgentSession, Engram, Injection, LearningSignal, Observation, Outcome

    lost: dict[str, int] = Counter()
    stored_obs = dict(
        Observation.objects.filter(owner=owner, session__session_id__in=ledger.sessions)
        .values_list("session__session_id")
        .annotate(n=Count("id"))
    )
    for session, acked in ledger.observations.items():
        lost["observations"] += max(0, acked - stored_obs.get(session, 0))
    found = set(
        Engram.objects.filter(owner=owner, engram_id__in=ledger.learned).values_list(
            "engram_id", flat=True
        )
    )
    lost["learned engrams"] = len(ledger.learned - found)
    signals = dict(
        LearningSignal.objects.filter(owner=owner, session__session_id__in=ledger.sessions)
        .values_list("session__session_id")
        .annotate(n=Count("id"))
    )
    for session, expected in ledger.rule_prompts.items():
        lost["learning signals"] += max(0, expected - signals.get(session, 0))
    known = set(
        AgentSession.objects.filter(owner=owner, session_id__in=ledger.ended).values_list(
            "session_id", flat=True
        )
    )
    ended = set(
        AgentSession.objects.filter(
            owner=owner, session_id__in=ledger.ended, ended_at__isnull=False
        ).values_list("session_id", flat=True)
    )
    # A SessionEnd for a session the server never saw (every earlier event of it was refused,
    # e.g. 503 while the database was down) has nothing to end: its 200 acknowledges nothing.
    # A session with an acknowledged observation is known, so a lost row still counts above.
    lost["session ends"] = len((ledger.ended & known) - ended)
    # Every injected engram (constraint/directive buckets) of an ended session has an outcome.
    unattributed = AgentSession.objects.filter(
        owner=owner, session_id__in=ended, attributed_at__isnull=True
    ).count()
    injected = set(
        Injection.objects.filter(session__session_id__in=ended, owner=owner)
        .exclude(bucket=Injection.Bucket.RECALL)
        .values_list("session_id", "engram_id")
    )
    with_outcome = set(
        Outcome.objects.filter(owner=owner, injection__session__session_id__in=ended).values_list(
            "injection__session_id", "engram_id"
        )
    )
    lost["outcomes"] = len(injected - with_outcome)
    return {
        "lost": dict(lost),
        "unattributed_sessions": unattributed,
        "observations": sum(ledger.observations.values()),
        "learned": len(ledger.learned),
        "signals": sum(ledger.rule_prompts.values()),
        "ended": len(ledger.ended & known),
        "ended_unknown": len(ledger.ended - known),
        "outcomes": len(with_outcome),
        "injections": len(injected),
    }


def warm_up(port: int, token: str, n: int) -> None:
    """Load the embedding model in every web worker before the clock starts (not measured)."""
    scratch = Ledger()
    threads = [
        threading.Thread(
            target=lambda i=i: Agent(10_000 + i, port, token, 0, 0, scratch).hook(
                "UserPromptSubmit", f"warm-up-{i}", prompt="warm up the embedding model"
            )
        )
        for i in range(n)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] * 1000


def report(args: argparse.Namespace, ledger: Ledger, wall: float, result: dict[str, Any], drained: float) -> str:  # fmt: skip
    total = sum(len(v) for v in ledger.latencies.values())
    lines = [
        f"### {args.backend}: {args.agents} agents, {args.duration:.0f} s",
        "",
        f"- {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.machine()}, "
        f"{os.cpu_count()} cores, load average before {os.getloadavg()[0]:.2f}; gunicorn "
        f"{args.web_workers}x{args.threads} gthread, Celery worker concurrency "
        f"{args.worker_concurrency}; think time mean {args.think_ms:.0f} ms",
        f"- {total} requests in {wall:.1f} s: **{total / wall:.1f} requests/s**; "
        f"errors: **{len(ledger.errors)}**; over the {HOOK_TIMEOUT_S:.0f} s hook timeout: "
        f"{ledger.over_timeout}",
        f"- acknowledged writes: {result['observations']} observations, {result['learned']} "
        f"learned engrams, {result['signals']} learning signals, {result['ended']} session ends "
        f"(+{result['ended_unknown']} of sessions the server never saw), "
        f"{result['injections']} injected engrams to attribute ({result['outcomes']} with an "
        f"outcome); the worker drained its queue in {drained:.1f} s"
        + (
            f" (timed out: the sweep then attributed {result['swept']['sessions_attributed']} "
            f"sessions and processed {result['swept']['signals_processed']} signals)"
            if result.get("swept", {}).get("sessions_found")
            or result.get("swept", {}).get("signals_found")
            else ""
        ),
        f"- **lost writes: {sum(result['lost'].values())}** "
        + ", ".join(f"{k} {v}" for k, v in sorted(result["lost"].items()))
        + f"; sessions left unattributed: {result['unattributed_sessions']}",
        "",
        "| event | n | p50 ms | p95 ms | p99 ms | max ms | statuses |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for event in EVENTS:
        values = ledger.latencies.get(event, [])
        if not values:
            continue
        statuses = ", ".join(
            f"{status}x{n}" for (e, status), n in sorted(ledger.statuses.items()) if e == event
        )
        lines.append(
            f"| {event} | {len(values)} | {pct(values, 50):.1f} | {pct(values, 95):.1f} | "
            f"{pct(values, 99):.1f} | {max(values) * 1000:.0f} | {statuses} |"
        )
    hooks = [v for e, vs in ledger.latencies.items() if not e.startswith("REST") for v in vs]
    lines.append(
        f"| all hooks | {len(hooks)} | {pct(hooks, 50):.1f} | {pct(hooks, 95):.1f} | "
        f"{pct(hooks, 99):.1f} | {max(hooks, default=0) * 1000:.0f} | |"
    )
    if ledger.errors:
        lines += ["", "First errors:", ""] + [f"- {e}" for e in ledger.errors[:10]]
    return "\n".join(lines)


def make_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--backend", choices=["postgres", "embedded"], default="postgres")
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds (at most 900)")
    parser.add_argument("--think-ms", type=float, default=300.0, help="mean pause between calls")
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "ENGRAM_BENCH_LOAD_DATABASE_URL",
            "postgres://engram@127.0.0.1:5432/engram_reliability_load",
        ),
    )
    parser.add_argument(
        "--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/4")
    )
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--worker-concurrency", type=int, default=1)
    parser.add_argument("--rules", type=int, default=60, help="engrams seeded before the run")
    parser.add_argument(
        "--rate-limit", type=int, default=0, help="per token per minute; 0: default"
    )
    parser.add_argument("--drain-timeout", type=float, default=180.0)
    parser.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    return parser


def prepare(args: argparse.Namespace, prefix: str = "engram-load-", data_dir: Path | None = None) -> tuple[Path, dict[str, str], str, Any]:  # fmt: skip
    """A fresh store (migrated, seeded) and the server's environment; Django set up here."""
    args.duration = min(max(1.0, args.duration), MAX_DURATION_S)
    args.port = args.port or free_port()
    data_dir = data_dir or Path(tempfile.mkdtemp(prefix=prefix))
    env = server_env(args, data_dir)
    if args.backend == "postgres":
        recreate_postgres(args.database_url)
    django_setup(env)
    from django.core.management import call_command

    log(f"migrating {env['DATABASE_URL']}")
    call_command("migrate", verbosity=0)
    raw_token, owner = seed_store(args.rules)
    from django.db import connections

    connections.close_all()
    return data_dir, env, raw_token, owner


def run_agents(args: argparse.Namespace, token: str, ledger: Ledger, during: Callable[[float], None] | None = None) -> float:  # fmt: skip
    """Run the agents for args.duration; `during(elapsed)` is called about every 0.2 s."""
    log(f"{args.agents} agents for {args.duration:.0f} s")
    started = time.monotonic()
    stop_at = started + args.duration
    agents = [
        Agent(i, args.port, token, stop_at, args.think_ms, ledger) for i in range(args.agents)
    ]
    for agent in agents:
        agent.start()
        time.sleep(min(0.02, args.duration / max(1, args.agents) / 10))
    while any(agent.is_alive() for agent in agents):
        if during is not None:
            during(time.monotonic() - started)
        time.sleep(0.2)
        if time.monotonic() > stop_at + 2 * REQUEST_TIMEOUT_S + 60:
            break
    return time.monotonic() - started


def main() -> int:
    args = make_parser(__doc__.split("\n\n")[0]).parse_args()
    data_dir, env, raw_token, owner = prepare(args)
    log(f"starting the server on 127.0.0.1:{args.port} (logs in {data_dir})")
    server = start_server(env, args, data_dir)
    ledger = Ledger()
    try:
        warm_up(args.port, raw_token, args.web_workers * args.threads)
        wall = run_agents(args, raw_token, ledger)
        log(f"run over in {wall:.1f} s; waiting for the worker to drain")
        drained = drain(owner, ledger.ended, args.drain_timeout)
        swept = sweep()
        result = audit(owner, ledger)
        result["swept"] = swept
    finally:
        server.stop()
    print(report(args, ledger, wall, result, drained))
    failed = bool(ledger.errors) or sum(result["lost"].values()) > 0
    if args.keep or failed:
        log(f"data directory kept (server logs): {data_dir}")
    else:
        shutil.rmtree(data_dir, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
