"""Fault scenarios, each with its expected outcome, against a real server under agent load.

Every scenario starts its own store, server (gunicorn + a Celery worker) and, where the fault
needs one, its own Redis or PostgreSQL on a free port, so the shared servers are never touched.
Agents are bench/load.py's. Each prints what happened and PASS or FAIL against its expectation;
the exit status is 1 when any failed.

- redis-down: Redis (broker, results, rate-limit counters) killed for 30 s under load. Expected:
  every hook answers 200 within its timeout, the rate limit counts in-process and says so in
  the log, work queued meanwhile is run by the periodic sweep, 0 lost writes.
- worker-killed: the Celery worker SIGKILLed mid-run (attribution and extraction in flight),
  restarted 5 s later. Expected: no client error, every ended session attributed exactly once
  (by the redelivered task or the sweep), none half-attributed, 0 lost writes.
- postgres-restart: a private PostgreSQL stopped for 8 s under load, then started. Expected:
  requests meanwhile get 503 within the hook timeout (never a 500 or a hang), requests after
  it succeed without restarting Engram, 0 lost acknowledged writes.
- sqlite-writers: 10 agents on the embedded default (SQLite WAL + busy timeout + the filesystem
  broker). Expected: no "database is locked" (no error at all) reaching a client, 0 lost writes.
- disk-full: the embedded default's data directory on a 64 MB tmpfs (root only), filled for
  10 s under load. Expected: 503 saying the disk is full (never a 500, never past the hook
  timeout), 200 again once there is room, `PRAGMA integrity_check` ok, 0 lost writes.

    .venv/bin/python bench/faults.py redis-down worker-killed postgres-restart sqlite-writers

Requires redis-server and PostgreSQL 15 binaries (/usr/lib/postgresql/15/bin, run as the
`postgres` user when started as root). A slow or failing LLM is a test
(tests/memory/test_llm_faults.py): no hook calls Claude, the tasks run their fallbacks.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import load

PG_BIN = Path("/usr/lib/postgresql/15/bin")


class Private:
    """A private Redis or PostgreSQL on a free port in a temporary directory."""

    def __init__(self) -> None:
        self.port = load.free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="engram-faults-"))
        self.proc: subprocess.Popen[bytes] | None = None

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class PrivateRedis(Private):
    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        import redis

        while time.monotonic() < deadline:
            try:
                redis.Redis(port=self.port, socket_timeout=0.5).ping()
                return
            except Exception:
                time.sleep(0.1)
        raise SystemExit("the private redis-server did not start")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


class PrivatePostgres(Private):
    def __init__(self) -> None:
        super().__init__()
        self.data = self.dir / "data"
        self.as_postgres = os.geteuid() == 0

    def _run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_postgres else []
        return subprocess.run([*prefix, *cmd], check=check, capture_output=True, timeout=120)

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/engram_faults"

    def init(self) -> None:
        if self.as_postgres:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run(str(PG_BIN / "initdb"), "-D", str(self.data), "--auth=trust", "-U", "postgres")
        self.start()
        self._run("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-c",
                  "CREATE DATABASE engram_faults")  # fmt: skip
        self._run("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d",
                  "engram_faults", "-c", "CREATE EXTENSION IF NOT EXISTS vector")  # fmt: skip

    def start(self) -> None:
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-w", "-l",
                  str(self.dir / "pg.log"), "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1",
                  "start")  # fmt: skip

    def stop(self) -> None:
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-w", "-m", "fast", "stop",
                  check=False)  # fmt: skip


def base_args(extra: list[str]) -> argparse.Namespace:
    return load.make_parser("faults").parse_args(extra)


def run(
    args: argparse.Namespace,
    during: Callable[[float], None] | None = None,
    prefix: str = "engram-faults-",
    data_dir: Path | None = None,
) -> tuple[load.Ledger, dict[str, Any], Path, load.Server, float]:
    data_dir, env, token, owner = load.prepare(args, prefix, data_dir)
    load.log(f"server on 127.0.0.1:{args.port} (logs in {data_dir})")
    server = load.start_server(env, args, data_dir)
    ledger = load.Ledger()
    try:
        load.warm_up(args.port, token, args.web_workers * args.threads)
        wall = load.run_agents(args, token, ledger, during)
        drained = load.drain(owner, ledger.ended, args.drain_timeout)
        swept = load.sweep()
        result = load.audit(owner, ledger)
        result["swept"] = swept
        print(load.report(args, ledger, wall, result, drained))
    finally:
        server.stop()
    return ledger, result, data_dir, server, wall


def verdict(name: str, checks: dict[str, bool]) -> bool:
    ok = all(checks.values())
    print(f"\n**{name}: {'PASS' if ok else 'FAIL'}**\n")
    for what, passed in checks.items():
        print(f"- [{'x' if passed else ' '}] {what}")
    print()
    return ok


def lost(result: dict[str, Any]) -> int:
    return int(sum(result["lost"].values()))


# --- scenarios ------------------------------------------------------------------------------


def redis_down(options: argparse.Namespace) -> bool:
    redis = PrivateRedis()
    redis.start()
    args = base_args(["--backend", "postgres", "--agents", str(options.agents), "--duration",
                      "55", "--redis-url", redis.url,
                      "--database-url", options.database_url, "--drain-timeout", "60"])  # fmt: skip
    state = {"down": False, "up": False}

    def during(elapsed: float) -> None:
        if elapsed >= 10 and not state["down"]:
            load.log("killing Redis for 30 s")
            redis.kill()
            state["down"] = True
        if elapsed >= 40 and not state["up"]:
            load.log("starting Redis again")
            redis.start()
            state["up"] = True

    try:
        ledger, result, data_dir, _, _ = run(args, during)
    finally:
        redis.kill()
        redis.cleanup()
    web_log = (data_dir / "web.log").read_text(errors="replace")
    return verdict(
        "redis-down",
        {
            "every hook answered 200": not ledger.errors,
            "no answer later than the hook timeout": ledger.over_timeout == 0,
            "the rate limit said it counts in-process": "counting in-process" in web_log,
            "0 lost writes (after the sweep)": lost(result) == 0,
            "no session left unattributed": result["unattributed_sessions"] == 0,
        },
    )


def worker_killed(options: argparse.Namespace) -> bool:
    args = base_args(["--backend", "postgres", "--agents", str(options.agents), "--duration",
                      "40", "--redis-url", options.redis_url,
                      "--database-url", options.database_url, "--drain-timeout", "60"])  # fmt: skip
    state: dict[str, Any] = {"server": None, "killed": False, "back": False}
    original_start = load.start_server

    def capture(*a: Any, **k: Any) -> load.Server:
        server = original_start(*a, **k)
        state["server"] = server
        return server

    load.start_server = capture  # type: ignore[assignment]

    def during(elapsed: float) -> None:
        server = state["server"]
        if elapsed >= 15 and not state["killed"]:
            load.log("SIGKILL the Celery worker (and its pool)")
            server.kill("worker")
            state["killed"] = True
        if elapsed >= 20 and not state["back"]:
            load.log("starting the worker again")
            server.restart("worker")
            state["back"] = True

    try:
        ledger, result, _, _, _ = run(args, during)
    finally:
        load.start_server = original_start  # type: ignore[assignment]
    from django.db.models import Count

    from memory.models import Outcome

    twice = Outcome.objects.values("injection").annotate(n=Count("id")).filter(n__gt=1).count()
    return verdict(
        "worker-killed",
        {
            "every hook answered 200": not ledger.errors,
            "no answer later than the hook timeout": ledger.over_timeout == 0,
            "0 lost writes (every injected engram of every ended session has its outcome)": (
                lost(result) == 0
            ),
            "no session left unattributed or half-attributed": (
                result["unattributed_sessions"] == 0
            ),
            f"no injection attributed twice ({twice})": twice == 0,
        },
    )


def postgres_restart(options: argparse.Namespace) -> bool:
    pg = PrivatePostgres()
    load.log(f"initialising a private PostgreSQL on port {pg.port}")
    pg.init()
    args = base_args(["--backend", "postgres", "--agents", str(options.agents), "--duration",
                      "40", "--redis-url", options.redis_url, "--database-url", pg.url,
                      "--drain-timeout", "60"])  # fmt: skip
    state = {"down": False, "up": False, "up_at": 0.0}

    def during(elapsed: float) -> None:
        if elapsed >= 10 and not state["down"]:
            load.log("stopping PostgreSQL for 8 s")
            pg.stop()
            state["down"] = True
            state["down_at"] = elapsed
        if elapsed >= 18 and not state["up"]:
            load.log("starting PostgreSQL again")
            pg.start()
            state["up"] = True
            state["up_at"] = elapsed

    load.recreate_postgres = lambda url: None  # type: ignore[assignment]  # made by init()
    try:
        ledger, result, _, _, _ = run(args, during)
    finally:
        pg.stop()
        pg.cleanup()
    statuses = {status for (_, status) in ledger.statuses}
    other = [e for e in ledger.errors if " 503 " not in e]
    return verdict(
        "postgres-restart",
        {
            f"errors are 503 only ({len(ledger.errors)} x 503)": not other,
            "no answer later than the hook timeout": ledger.over_timeout == 0,
            "requests succeeded again after the restart (no Engram restart)": 200 in statuses,
            "0 lost acknowledged writes": lost(result) == 0,
            "no session left unattributed": result["unattributed_sessions"] == 0,
        },
    )


def sqlite_writers(options: argparse.Namespace) -> bool:
    args = base_args(["--backend", "embedded", "--agents", "10", "--duration", "40",
                      "--drain-timeout", "60"])  # fmt: skip
    ledger, result, _, _, _ = run(args)
    locked = [e for e in ledger.errors if "locked" in e]
    return verdict(
        "sqlite-writers",
        {
            "no 'database is locked' reached a client": not locked,
            "no error at all": not ledger.errors,
            "no answer later than the hook timeout": ledger.over_timeout == 0,
            "0 lost writes": lost(result) == 0,
        },
    )


def disk_full(options: argparse.Namespace) -> bool:
    """The embedded default's data directory on a 64 MB tmpfs, filled to the last byte for 10 s
    under load (needs root to mount)."""
    if os.geteuid() != 0:
        load.log("disk-full needs root (it mounts a small tmpfs); skipped")
        return verdict("disk-full", {"skipped: not root": True})
    mount = Path(tempfile.mkdtemp(prefix="engram-faults-disk-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], check=True)
    data_dir = mount / "data"
    data_dir.mkdir()
    filler = mount / "filler"
    args = base_args(["--backend", "embedded", "--agents", "5", "--duration", "35",
                      "--drain-timeout", "60"])  # fmt: skip
    state = {"full": False, "freed": False}

    def during(elapsed: float) -> None:
        if elapsed >= 10 and not state["full"]:
            load.log("filling the data directory's disk")
            try:
                with filler.open("wb", buffering=0) as out:
                    for size in (1 << 20, 4096, 512, 1):
                        try:
                            while True:
                                out.write(b"\0" * size)
                        except OSError:
                            continue
            except OSError:
                pass
            state["full"] = True
        if elapsed >= 20 and not state["freed"]:
            load.log("freeing the disk")
            filler.unlink()
            state["freed"] = True

    try:
        ledger, result, _, _, _ = run(args, during, data_dir=data_dir)
        import sqlite3

        with sqlite3.connect(data_dir / "engram.sqlite3") as db:
            integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        filler.unlink(missing_ok=True)
        subprocess.run(["umount", "--lazy", str(mount)], check=False)
        shutil.rmtree(mount, ignore_errors=True)
    other = [e for e in ledger.errors if " 503 " not in e]
    clear = all("disk may be full" in e for e in ledger.errors)
    statuses = {status for (_, status) in ledger.statuses}
    return verdict(
        "disk-full",
        {
            f"errors are 503 only ({len(ledger.errors)} x 503)": not other,
            "each says the disk is full or read-only": clear,
            "no answer later than the hook timeout": ledger.over_timeout == 0,
            "requests succeeded again once there was room": 200 in statuses,
            f"the database is intact (integrity_check: {integrity})": integrity == "ok",
            "0 lost acknowledged writes": lost(result) == 0,
        },
    )


SCENARIOS: dict[str, Callable[[argparse.Namespace], bool]] = {
    "redis-down": redis_down,
    "worker-killed": worker_killed,
    "postgres-restart": postgres_restart,
    "sqlite-writers": sqlite_writers,
    "disk-full": disk_full,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", nargs="+", choices=sorted(SCENARIOS))
    parser.add_argument("--agents", type=int, default=10)
    parser.add_argument(
        "--database-url",
        default=os.environ.get(
            "ENGRAM_BENCH_FAULTS_DATABASE_URL",
            "postgres://engram@127.0.0.1:5432/engram_reliability_faults",
        ),
    )
    parser.add_argument(
        "--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/4")
    )
    options = parser.parse_args()
    if len(options.scenario) > 1:
        # Django is set up once per process: run each scenario in a process of its own.
        failed = 0
        for name in options.scenario:
            cmd = [sys.executable, __file__, name, "--agents", str(options.agents),
                   "--database-url", options.database_url, "--redis-url", options.redis_url]  # fmt: skip
            failed += subprocess.run(cmd, check=False).returncode != 0
        return 1 if failed else 0
    ok = SCENARIOS[options.scenario[0]](options)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
