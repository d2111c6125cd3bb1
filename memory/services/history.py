"""Past Claude Code sessions (`engram import-history`): one transcript file is one session, and
its lines go through the same capture as a live session's Stop — `learning.transcript_attach`
stores the lines past the session's offset as a learning signal and queues the extraction task.
There is no second extractor: whatever capture does to a live transcript, it does to these.

A second import of the same file stores nothing: the session's offset already stands at the end.
A session that hooks captured live continues from where they stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory.errors import InvalidInput
from memory.models import AgentSession
from memory.services import learning
from memory.services.sessions import session_start

# Sessions made by an import carry this agent: they say nothing about whether hooks arrive.
IMPORT_AGENT = "claude-code-import"
MAX_LINES = learning.MAX_ATTACHED_LINES


@dataclass(frozen=True)
class HistoryResult:
    session_id: str
    scope: str
    offset: int
    created: bool
    signal: int | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "scope": self.scope,
            "offset": self.offset,
            "created": self.created,
            "signal": self.signal,
        }


def history_offset(*, owner: Any, session_id: str) -> AgentSession | None:
    """The owner's session with this id (its `transcript_offset`: bytes captured), or None."""
    return AgentSession.objects.filter(owner=owner, session_id=session_id).first()


def history_import(
    *,
    owner: Any,
    session_id: str,
    scope: str,
    cwd: str,
    offset: int,
    lines: list[str],
    started_at: datetime | None = None,
    ended_at: datetime | None = None,
    now: datetime | None = None,
) -> HistoryResult:
    """Capture transcript `lines` (starting at byte `offset` of the session's file) for the
    session `session_id`, made (ended, as history) when it is new. Lines that do not start at
    the session's offset store nothing; the returned offset says where capture stands."""
    now = now or timezone.now()
    if not session_id.strip():
        raise InvalidInput("session_id", "must name the session (the transcript's sessionId)")
    if not isinstance(offset, int) or offset < 0:
        raise InvalidInput("offset", "must be a byte offset (an integer >= 0)")
    if len(lines) > MAX_LINES:
        raise InvalidInput("lines", f"at most {MAX_LINES} lines per request")
    if any(not isinstance(line, str) for line in lines):
        raise InvalidInput("lines", "must be a list of strings (the transcript's lines)")
    if started_at and ended_at and ended_at < started_at:
        raise InvalidInput("ended_at", "must not be before started_at")
    with transaction.atomic():
        session = AgentSession.objects.filter(owner=owner, session_id=session_id).first()
        created = session is None
        if session is None:
            begun = min(started_at or now, now)
            session = session_start(
                owner=owner,
                session_id=session_id,
                scope=scope,
                agent=IMPORT_AGENT,
                cwd=cwd[:500],
                now=begun,
            )
            # History: nothing was injected in it, so there is nothing to attribute either.
            finished = min(max(ended_at or begun, begun), now)
            AgentSession.objects.filter(pk=session.pk).update(ended_at=finished, attributed_at=now)
        signal = learning.transcript_attach(
            session=session,
            attached={"offset": offset, "lines": lines},
            transcript_path=None,
            now=now,
        )
        captured = (
            AgentSession.objects.filter(pk=session.pk)
            .values_list("transcript_offset", flat=True)
            .get()
        )
    return HistoryResult(
        session_id=session.session_id,
        scope=session.scope,
        offset=int(captured),
        created=created,
        signal=signal.pk if signal is not None else None,
    )
