"""`engram status`: one screen — projects (last hook, last lesson captured, last injection, their
lessons and whether hooks still arrive), lessons yours / learned / waiting, review, worker and
queue. Reads `GET /api/v1/status`."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

from memory.cli.client import Server

HEALTH_STYLE = {"ok": "green", "quiet": "yellow", "stopped": "bold red", "none": "dim"}


def ago(value: Any, now: datetime) -> str:
    """ "3 min ago", "2 h ago", "5 days ago" or "never"."""
    if not value:
        return "never"
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return str(value)
    seconds = max(0, int((now - moment).total_seconds()))
    if seconds < 90:
        return f"{seconds} s ago"
    if seconds < 90 * 60:
        return f"{seconds // 60} min ago"
    if seconds < 36 * 3600:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} days ago"


def render(report: dict[str, Any], *, url: str, out: TextIO, color: bool | None = None) -> None:
    console = Console(file=out, force_terminal=color, width=120, highlight=False)
    now = datetime.fromisoformat(str(report.get("server_time")).replace("Z", "+00:00"))
    lessons = report.get("lessons") or {}
    console.print(
        f"[bold]Engram[/bold] at {url} — token “{(report.get('token') or {}).get('name', '?')}”"
    )
    console.print(
        f"Lessons: [bold]{lessons.get('yours', 0)}[/bold] yours · "
        f"[bold]{lessons.get('learned', 0)}[/bold] learned · "
        f"[bold]{lessons.get('waiting', 0)}[/bold] waiting"
        f"   Review: {report.get('review_open', 0)} open   "
        f"Sessions today: {report.get('sessions_today', 0)}"
    )
    worker, queue = report.get("worker") or {}, report.get("queue") or {}
    state = "[green]alive[/green]" if worker.get("alive") else "[bold red]not answering[/bold red]"
    length = queue.get("length")
    console.print(
        f"Worker: {state}   Queue: {'?' if length is None else length} waiting"
        + (" [bold red](stuck)[/bold red]" if queue.get("stuck") else "")
    )
    projects = report.get("projects") or []
    if not projects:
        console.print(
            "\nNo project has had a session in the last 30 days. Connect Claude Code "
            "(`engram setup claude-code --project PATH`, or the plugin), or import past "
            "sessions with `engram import-history`."
        )
        return
    table = Table(title="Projects (sessions in the last 30 days)", title_justify="left")
    for name in (
        "project",
        "last hook",
        "last captured",
        "last injected",
        "yours",
        "learned",
        "waiting",
        "hooks",
    ):
        table.add_column(
            name, justify="right" if name in {"yours", "learned", "waiting"} else "left"
        )
    notes = []
    for project in projects:
        health = project.get("health") or {}
        state_name = str(health.get("state", "?"))
        table.add_row(
            str(project.get("scope")),
            ago(project.get("last_hook_at"), now),
            ago(project.get("last_capture_at"), now),
            ago(project.get("last_injection_at"), now),
            str((project.get("lessons") or {}).get("yours", 0)),
            str((project.get("lessons") or {}).get("learned", 0)),
            str((project.get("lessons") or {}).get("waiting", 0)),
            f"[{HEALTH_STYLE.get(state_name, '')}]{state_name}[/]",
        )
        if state_name in {"stopped", "quiet"}:
            notes.append(f"{project.get('scope')}: {health.get('reason', '')}")
    console.print(table)
    for note in notes:
        console.print(f"[yellow]![/yellow] {note}")


def status(*, server: Server, out: TextIO, as_json: bool = False) -> int:
    report = server.json("GET", "/api/v1/status")
    if as_json:
        out.write(json.dumps(report, indent=2) + "\n")
        return 0
    render(report, url=server.url, out=out)
    return 0
