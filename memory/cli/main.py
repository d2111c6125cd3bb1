"""`engram`: the one command of an installed Engram (`pipx install …`).

engram run [--bind HOST:PORT]            migrate, first-run owner and token, web + worker + beat
engram setup claude-code [--project P]   Claude Code hooks (engram_claude_setup's options)
engram mcp                               the MCP server over stdio (ENGRAM_TOKEN)
engram doctor [--project PATH]           every check, one line each; exit 0 when all pass
engram import-history [PATH …]           past Claude Code sessions into memory
engram status [--json]                   projects, lessons, last capture/injection, queue
engram manage COMMAND …                  any manage.py command (engram_token, engram_backup…)
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import date
from pathlib import Path
from typing import TextIO

from memory.cli.client import Server, ServerError

SETTINGS = "engramsite.settings"


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD)") from None


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="engram",
        description="Engram: local-first memory for AI coding agents.",
        epilog="doctor, status and import-history talk to the server at ENGRAM_URL "
        "(default http://127.0.0.1:8000) with the API token in ENGRAM_TOKEN.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="start Engram: web, worker and beat (what `make run` does)")
    run.add_argument(
        "--bind",
        default=os.environ.get("ENGRAM_BIND", "127.0.0.1:8000"),
        help="HOST:PORT to listen on (default: ENGRAM_BIND or 127.0.0.1:8000)",
    )
    run.add_argument("--web-workers", type=int, default=2)
    run.add_argument("--concurrency", type=int, default=1, help="Celery worker processes")
    run.add_argument("--no-worker", action="store_true", help="web only (no worker, no beat)")

    setup = sub.add_parser("setup", help="connect an agent: `engram setup claude-code`")
    setup.add_argument("agent", choices=["claude-code"])
    setup.add_argument(
        "options",
        nargs=argparse.REMAINDER,
        help="--project PATH, --command, --url, --scope, --user, --token-scopes",
    )

    sub.add_parser("mcp", help="serve Engram's MCP tools over stdio for ENGRAM_TOKEN")

    doctor = sub.add_parser("doctor", help="check everything Claude Code needs; 0 when all pass")
    doctor.add_argument("--project", type=Path, default=Path.cwd(), help="project folder")
    doctor.add_argument("--url", help="Engram's URL (default: ENGRAM_URL)")

    history = sub.add_parser(
        "import-history", help="learn from past Claude Code sessions (one per transcript file)"
    )
    history.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="transcript files or folders (default: ~/.claude/projects/*/*.jsonl)",
    )
    history.add_argument("--project", help="only sessions of this project (its folder's name)")
    history.add_argument("--since", type=_date, help="only sessions active on or after DATE")
    history.add_argument(
        "--dry-run", action="store_true", help="print the lessons it would keep; write nothing"
    )
    history.add_argument("--url", help="Engram's URL (default: ENGRAM_URL)")

    status = sub.add_parser("status", help="one screen: projects, lessons, capture, queue")
    status.add_argument("--json", action="store_true", help="the raw GET /api/v1/status answer")
    status.add_argument("--url", help="Engram's URL (default: ENGRAM_URL)")

    manage = sub.add_parser("manage", help="run any manage.py command (e.g. engram_token list)")
    manage.add_argument("arguments", nargs=argparse.REMAINDER)
    return top


def _django(argv: list[str]) -> int:
    """Run a management command in this process, with the installed settings."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", SETTINGS)
    from django.core.management import execute_from_command_line

    execute_from_command_line(["engram", *argv])
    return 0


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    args = parser().parse_args(argv)
    stream = out or sys.stdout
    try:
        if args.command == "run":
            from memory.cli.run import run

            return run(
                bind=args.bind,
                web_workers=args.web_workers,
                concurrency=args.concurrency,
                no_worker=args.no_worker,
            )
        if args.command == "setup":
            return _django(["engram_claude_setup", *args.options])
        if args.command == "mcp":
            return _django(["engram_mcp"])
        if args.command == "manage":
            return _django(args.arguments or ["help"])
        if args.command == "doctor":
            from memory.cli.doctor import doctor

            return doctor(project=args.project, out=stream, url=args.url)
        if args.command == "status":
            from memory.cli.screen import status

            return status(server=Server.from_env(url=args.url), out=stream, as_json=args.json)
        if args.command == "import-history":
            from memory.cli.history import default_roots, import_history

            paths = args.paths or default_roots(Path.home())
            return import_history(
                server=Server.from_env(url=args.url),
                paths=paths,
                project=args.project,
                since=args.since,
                dry=args.dry_run,
                out=stream,
                progress=stream.isatty(),
            )
    except ServerError as exc:
        print(f"engram {args.command}: {exc} (run `engram doctor`)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`engram doctor | head -3`): stop quietly, as `cat` would, and
        # keep Python from reporting the failed flush of stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    return 2


if __name__ == "__main__":
    sys.exit(main())
