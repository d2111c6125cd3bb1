"""The periodic sweep: background work whose task never ran (the broker was down when it was
queued, or a worker died and the message was lost) is found from the database and run here.

Every step is the same idempotent service the task runs, so a sweep racing a late task does
the work once: the claim inside each service decides who does it.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from memory.models import AgentSession, LearningSignal, SweepFailure
from memory.services import localfiles
from memory.services.learning import session_capture, signal_extract
from memory.services.sessions import outcomes_attribute

logger = logging.getLogger(__name__)

# Work younger than this is left to its own task (it is probably queued or running).
SWEEP_GRACE = timedelta(minutes=2)
# At most this many items of each kind per sweep; the next sweep takes the rest.
SWEEP_LIMIT = 200
# Transcripts of sessions that ended within this window are read again when they grew past
# the session's offset (their capture task was lost); older ones are left alone.
CAPTURE_WINDOW = timedelta(days=1)
# A failing item is retried after SWEEP_BACKOFF·2^(attempts-1), at most SWEEP_MAX_ATTEMPTS times;
# past that it is left alone and shown on the health panel (with a key, each try costs tokens).
SWEEP_BACKOFF = timedelta(minutes=5)
SWEEP_MAX_ATTEMPTS = 5


def _held(kind: str, now: datetime) -> set[int]:
    """Items of `kind` waiting out their back-off or past the attempt limit."""
    return set(
        SweepFailure.objects.filter(kind=kind)
        .filter(Q(next_at__gt=now) | Q(attempts__gte=SWEEP_MAX_ATTEMPTS))
        .values_list("object_id", flat=True)
    )


def _failed(kind: str, pk: int, exc: Exception, now: datetime) -> None:
    row, _ = SweepFailure.objects.get_or_create(kind=kind, object_id=pk)
    row.attempts += 1
    row.next_at = now + SWEEP_BACKOFF * 2 ** (row.attempts - 1)
    row.error = type(exc).__name__[:200]
    row.updated_at = now
    row.save()


def _run(kind: str, pks: list[int], step: Any, now: datetime) -> int:
    """Run `step(pk)` for each item; a failure is recorded (back-off), a success clears it."""
    failed = 0
    for pk in pks:
        try:
            step(pk)
        except Exception as exc:  # one bad item must not stop the sweep of the others
            logger.exception("sweep: %s %s failed", kind, pk)
            _failed(kind, pk, exc, now)
            failed += 1
        else:
            SweepFailure.objects.filter(kind=kind, object_id=pk).delete()
    return failed


def given_up() -> int:
    """Items the sweep no longer retries (past SWEEP_MAX_ATTEMPTS)."""
    return SweepFailure.objects.filter(attempts__gte=SWEEP_MAX_ATTEMPTS).count()


def _unread_transcripts(now: datetime, cutoff: datetime, limit: int) -> list[int]:
    """Ended sessions whose transcript this server may and can read (under
    ENGRAM_TRANSCRIPT_DIRS) and has lines past the offset."""
    rows = (
        AgentSession.objects.filter(ended_at__gte=now - CAPTURE_WINDOW, ended_at__lte=cutoff)
        .exclude(transcript_path="")
        .order_by("ended_at")
        .values_list("pk", "transcript_path", "transcript_offset")[: limit * 5]
    )
    found = []
    for pk, path, offset in rows:
        size = localfiles.transcript_size(path)
        if size is not None and size > offset:
            found.append(pk)
        if len(found) >= limit:
            break
    return found


def pending_sweep(
    *, now: datetime | None = None, grace: timedelta = SWEEP_GRACE, limit: int = SWEEP_LIMIT
) -> dict[str, Any]:
    """Run what was left undone: transcript capture of ended sessions, outcome attribution of
    ended sessions, extraction of pending learning signals. Returns how many of each were found
    and done."""
    now = now or timezone.now()
    cutoff = now - grace
    held = _held("transcript", now)
    transcripts = [
        pk for pk in _unread_transcripts(now, cutoff, limit + len(held)) if pk not in held
    ]
    transcripts = transcripts[:limit]
    failed = _run(
        "transcript", transcripts, lambda pk: session_capture(session_pk=pk, now=now), now
    )
    held = _held("attribution", now)
    sessions = list(
        AgentSession.objects.filter(
            ended_at__isnull=False, ended_at__lte=cutoff, attributed_at__isnull=True
        )
        .exclude(pk__in=held)
        .order_by("ended_at")
        .values_list("pk", flat=True)[:limit]
    )
    failed += _run("attribution", sessions, lambda pk: outcomes_attribute(session_pk=pk), now)
    attributed = AgentSession.objects.filter(pk__in=sessions, attributed_at__isnull=False).count()
    held = _held("signal", now)
    signals = list(
        LearningSignal.objects.filter(state=LearningSignal.State.PENDING, created_at__lte=cutoff)
        .exclude(pk__in=held)
        .order_by("created_at")
        .values_list("pk", flat=True)[:limit]
    )
    failed += _run("signal", signals, lambda pk: signal_extract(signal_pk=pk), now)
    extracted = (
        LearningSignal.objects.filter(pk__in=signals)
        .exclude(state=LearningSignal.State.PENDING)
        .count()
    )
    if transcripts or sessions or signals:
        logger.warning(
            "sweep: %d transcript(s) had unread lines, %d ended session(s) were unattributed "
            "(%d now attributed), %d learning signal(s) were pending (%d now processed)",
            len(transcripts),
            len(sessions),
            attributed,
            len(signals),
            extracted,
        )
    return {
        "transcripts_read": len(transcripts),
        "sessions_found": len(sessions),
        "sessions_attributed": attributed,
        "signals_found": len(signals),
        "signals_processed": extracted,
        "failed": failed,
    }
