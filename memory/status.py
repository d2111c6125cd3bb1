"""What an owner's Engram is doing, per project and as a whole: the reads behind
`GET /api/v1/status`, the MCP `status` tool, the overview's projects panel, `engram status` and
`engram doctor`.

Per project (an engram scope that sessions ran in): the last hook received, the last lesson
captured, the last injection, its lessons (yours / learned / waiting) and whether its hooks still
arrive (`memory.maths.hookhealth`). "Last hook" is read from the rows hooks leave, with no write
on the hook path: a session's start and its last Stop (every turn ends with one), and the newest
tool observation of sessions still open.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Count, Max
from django.utils import timezone

from memory import selectors
from memory.health import run_checks
from memory.maths import hookhealth
from memory.models import (
    ActivityDay,
    AgentSession,
    ApiToken,
    Engram,
    Injection,
    LearningDraft,
    Observation,
)
from memory.services import localfiles
from memory.services.history import IMPORT_AGENT
from memory.services.llm import llm_status

# Projects listed: those with a session in this many days, newest first, at most MAX_PROJECTS.
RECENT_DAYS = 30
MAX_PROJECTS = 20
# Transcript folders are looked at (file times only, never contents) within this many entries.
MAX_TRANSCRIPT_ENTRIES = 2000
# A queued task older than this while the worker answers nothing, or this many waiting, is stuck.
STUCK_AFTER_SECONDS = 600
STUCK_LENGTH = 5000
DEFAULT_TRANSCRIPT_DIRS = localfiles.DEFAULT_TRANSCRIPT_DIRS
_UNSAFE_FOLDER_CHARS = re.compile(r"[^A-Za-z0-9]")


@dataclass
class Lessons:
    """Live lessons by who stated them: yours (the user's own words, active), learned (active,
    inferred by Engram or an agent) and waiting (candidates)."""

    yours: int = 0
    learned: int = 0
    waiting: int = 0

    def add(self, status: str, source: str, n: int) -> None:
        if status == Engram.Status.CANDIDATE:
            self.waiting += n
        elif status == Engram.Status.ACTIVE:
            if source == "user":
                self.yours += n
            else:
                self.learned += n


@dataclass
class ProjectStatus:
    scope: str
    sessions: int
    sessions_recent: int
    last_hook_at: datetime | None
    last_capture_at: datetime | None
    last_injection_at: datetime | None
    lessons: Lessons
    health: hookhealth.HookHealth
    cwd: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "sessions": self.sessions,
            "sessions_recent": self.sessions_recent,
            "last_hook_at": self.last_hook_at,
            "last_capture_at": self.last_capture_at,
            "last_injection_at": self.last_injection_at,
            "lessons": vars(self.lessons),
            "health": {"state": self.health.state, "reason": self.health.reason},
        }


def _newest(*values: datetime | None) -> datetime | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def transcript_dirs() -> list[Path]:
    """The folders this server may look into for Claude Code transcripts (realpath)."""
    return localfiles.transcript_dirs()


def claude_folder_name(cwd: str) -> str:
    """The folder Claude Code keeps a working directory's transcripts in (every character that
    is not a letter or a digit becomes "-")."""
    return _UNSAFE_FOLDER_CHARS.sub("-", cwd.rstrip("/\\"))


def _transcript_written_at(folders: list[str]) -> datetime | None:
    """The newest modification time of a `*.jsonl` in the folders that lie inside the allowed
    transcript folders; None when none can be seen (a server on another machine)."""
    allowed = transcript_dirs()
    newest = None
    for folder in folders:
        real = Path(os.path.realpath(folder))
        if not any(real == root or root in real.parents for root in allowed):
            continue
        try:
            with os.scandir(real) as entries:
                for index, entry in enumerate(entries):
                    if index >= MAX_TRANSCRIPT_ENTRIES:
                        break
                    if entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False):
                        mtime = entry.stat(follow_symlinks=False).st_mtime
                        newest = mtime if newest is None else max(newest, mtime)
        except OSError:
            continue
    return None if newest is None else datetime.fromtimestamp(newest, tz=UTC)


def _folders_of(sessions: list[tuple[str, str]]) -> list[str]:
    """Candidate transcript folders of a project from its sessions' (transcript path, cwd)."""
    folders: list[str] = []
    for path, cwd in sessions:
        if path and os.path.isabs(path):
            folders.append(os.path.dirname(path))
        if cwd and os.path.isabs(cwd):
            folders += [str(root / claude_folder_name(cwd)) for root in transcript_dirs()]
    return list(dict.fromkeys(folders))


def projects_status(
    *, owner: Any, now: datetime | None = None, limit: int = MAX_PROJECTS
) -> list[ProjectStatus]:
    """Projects with a hook or a lesson captured in the last RECENT_DAYS days, most recent
    first. At most 9 queries, whatever the number of projects."""
    now = now or timezone.now()
    since = now - timedelta(days=RECENT_DAYS)
    # Imported sessions (engram import-history) are history: they say nothing about hooks.
    sessions = AgentSession.objects.filter(owner=owner).exclude(agent=IMPORT_AGENT)
    groups = {
        row["scope"]: row
        for row in sessions.values("scope").annotate(
            n=Count("id"), started=Max("started_at"), ended=Max("ended_at")
        )
    }
    recent = dict(
        sessions.filter(started_at__gte=since)
        .values("scope")
        .annotate(n=Count("id"))
        .values_list("scope", "n")
    )
    open_activity = dict(
        Observation.objects.filter(owner=owner, session__ended_at__isnull=True)
        .exclude(session__agent=IMPORT_AGENT)
        .values("session__scope")
        .annotate(last=Max("created_at"))
        .values_list("session__scope", "last")
    )
    last_hook = {
        scope: _newest(row["started"], row["ended"], open_activity.get(scope))
        for scope, row in groups.items()
    }
    captured = dict(
        LearningDraft.objects.filter(owner=owner, engram__isnull=False, created_at__gte=since)
        .values("signal__scope")
        .annotate(last=Max("created_at"))
        .values_list("signal__scope", "last")
    )
    activity = {
        scope: when
        for scope in {*last_hook, *captured}
        if (when := _newest(last_hook.get(scope), captured.get(scope))) and when >= since
    }
    scopes = sorted(activity, key=lambda s: (activity[s], s), reverse=True)[:limit]
    if not scopes:
        return []
    injected = dict(
        Injection.objects.filter(owner=owner, session__scope__in=scopes, created_at__gte=since)
        .exclude(bucket=Injection.Bucket.RECALL)
        .values("session__scope")
        .annotate(last=Max("created_at"))
        .values_list("session__scope", "last")
    )
    lessons = {scope: Lessons() for scope in scopes}
    for row in (
        Engram.objects.for_owner(owner)
        .filter(scope__in=scopes)
        .values("scope", "status", "source")
        .annotate(n=Count("id"))
    ):
        lessons[row["scope"]].add(row["status"], row["source"], row["n"])
    window_start = (now - timedelta(days=hookhealth.HABIT_WINDOW_DAYS + RECENT_DAYS)).date()
    days: dict[str, list[Any]] = {}
    for scope, day in ActivityDay.objects.filter(
        owner=owner, scope__in=scopes, day__gte=window_start
    ).values_list("scope", "day"):
        days.setdefault(scope, []).append(day)
    revoked = list(
        ApiToken.objects.for_owner(owner)
        .filter(revoked_at__isnull=False, revoked_at__gte=since)
        .values_list("revoked_at", "last_used_at")
    )
    # Where the silent projects' transcripts are (the newest sessions' paths and folders).
    silent = [
        s for s in scopes if (w := last_hook.get(s)) and now - w > hookhealth.TRANSCRIPT_GRACE
    ]
    places: dict[str, list[tuple[str, str]]] = {}
    if silent:
        for scope, path, cwd in (
            sessions.filter(scope__in=silent)
            .order_by("-started_at")
            .values_list("scope", "transcript_path", "cwd")[: 5 * len(silent)]
        ):
            places.setdefault(scope, []).append((path, cwd))
    result = []
    for scope in scopes:
        last = last_hook.get(scope)
        if last is None:  # only imported history so far
            result.append(
                ProjectStatus(
                    scope=scope,
                    sessions=0,
                    sessions_recent=0,
                    last_hook_at=None,
                    last_capture_at=captured.get(scope),
                    last_injection_at=injected.get(scope),
                    lessons=lessons[scope],
                    health=hookhealth.hook_health(hookhealth.HookSignals(None), now=now),
                )
            )
            continue
        first_day = (last - timedelta(days=hookhealth.HABIT_WINDOW_DAYS - 1)).date()
        active = sum(1 for d in days.get(scope, []) if first_day <= d <= last.date())
        revoked_after = [
            when
            for when, used in revoked
            if when is not None
            and when > last
            and hookhealth.token_used_by_hooks(last_hook_at=last, token_last_used_at=used)
        ]
        token_revoked = max(revoked_after) if revoked_after else None
        signals = hookhealth.HookSignals(
            last_hook_at=last, active_days=active, token_revoked_at=token_revoked
        )
        if token_revoked is None and now - last > hookhealth.TRANSCRIPT_GRACE:
            written = _transcript_written_at(_folders_of(places.get(scope, [])))
            signals = hookhealth.HookSignals(
                last_hook_at=last, active_days=active, transcript_written_at=written
            )
        result.append(
            ProjectStatus(
                scope=scope,
                sessions=groups[scope]["n"],
                sessions_recent=recent.get(scope, 0),
                last_hook_at=last,
                last_capture_at=captured.get(scope),
                last_injection_at=injected.get(scope),
                lessons=lessons[scope],
                health=hookhealth.hook_health(signals, now=now),
            )
        )
    return result


def lessons_total(*, owner: Any) -> Lessons:
    """The owner's live lessons in every scope: yours, learned, waiting. 1 query."""
    lessons = Lessons()
    for row in (
        Engram.objects.for_owner(owner)
        .filter(status__in=[Engram.Status.ACTIVE, Engram.Status.CANDIDATE])
        .values("status", "source")
        .annotate(n=Count("id"))
    ):
        lessons.add(row["status"], row["source"], row["n"])
    return lessons


@dataclass
class QueueStatus:
    length: int | None
    oldest_seconds: float | None
    detail: str
    stuck: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def queue_status(*, worker_alive: bool) -> QueueStatus:
    """Tasks waiting in the broker: the embedded transport's queue folder, or Redis's list."""
    url: str = settings.CELERY_BROKER_URL
    length: int | None = None
    oldest: float | None = None
    try:
        if url.startswith("filesystem://"):
            folder = Path(settings.BROKER_DIR) / "queue"
            times = [e.stat().st_mtime for e in os.scandir(folder) if e.is_file()]
            length = len(times)
            oldest = time.time() - min(times) if times else None
        elif url.startswith(("redis://", "rediss://")):
            import redis

            client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
            length = int(client.llen("celery"))  # type: ignore[arg-type]
    except Exception as exc:  # a status report states failures, it never raises them
        return QueueStatus(None, None, f"could not read the queue: {type(exc).__name__}: {exc}")
    if length is None:
        return QueueStatus(None, None, "queue length unknown for this broker")
    stuck = length >= STUCK_LENGTH or (
        length > 0 and not worker_alive and (oldest is None or oldest > STUCK_AFTER_SECONDS)
    )
    detail = f"{length} task(s) waiting"
    if oldest is not None:
        detail += f", the oldest for {int(oldest)} s"
    if stuck:
        detail += "; the queue is not draining: start a worker (engram run) or look at its log"
    return QueueStatus(length, oldest, detail, stuck)


def status_report(
    *, owner: Any, token: ApiToken | None = None, now: datetime | None = None
) -> dict[str, Any]:
    """Everything `GET /api/v1/status` returns: the store counts, lessons, projects with their
    hook health, the worker (a ping), the queue, the embedder and the LLM."""
    now = now or timezone.now()
    alive, worker_detail = selectors.worker_check()
    queue = queue_status(worker_alive=alive)
    checks = run_checks()
    llm = llm_status(owner)
    projects = projects_status(owner=owner, now=now)
    if token is not None:  # a token limited to some scopes never learns the others' names
        projects = [p for p in projects if token.allows_scope(p.scope)]
    report: dict[str, Any] = {
        **selectors.store_status(owner=owner, now=now),
        "lessons": vars(lessons_total(owner=owner)),
        "projects": [p.as_dict() for p in projects],
        "worker": {"alive": alive, "detail": worker_detail},
        "queue": {
            "length": queue.length,
            "oldest_seconds": queue.oldest_seconds,
            "stuck": queue.stuck,
            "detail": queue.detail,
        },
        "embedder": {"ok": checks["embedder"].ok, "detail": checks["embedder"].detail},
        "llm": {
            "key_set": llm.key_set,
            "tokens_today": llm.tokens_today,
            "budget": llm.budget,
            "last_failed": llm.last_failed,
            "detail": llm.summary,
        },
        "server_time": now,
    }
    if token is not None:
        report["token"] = {"name": token.name, "scopes": token.scopes}
    return report
