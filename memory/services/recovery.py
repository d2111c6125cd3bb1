"""The periodic sweep: background work whose task never ran (the broker was down when it was
queued, or a worker died and the message was lost) is found from the database and run here.

Every step is the same idempotent service the task runs, so a sweep racing a late task does
the work once: the claim inside each service decides who does it.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from memory.models import AgentSession, LearningSignal
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
    transcripts = _unread_transcripts(now, cutoff, limit)
    failed = 0
    for pk in transcripts:
        try:
            session_capture(session_pk=pk, now=now)
        except Exception:  # one bad item must not stop the sweep of the others
            logger.exception("sweep: capturing the transcript of session %s failed", pk)
            failed += 1
    sessions = list(
        AgentSession.objects.filter(
            ended_at__isnull=False, ended_at__lte=cutoff, attributed_at__isnull=True
        )
        .order_by("ended_at")
        .values_list("pk", flat=True)[:limit]
    )
    for pk in sessions:
        try:
            outcomes_attribute(session_pk=pk)
        except Exception:  # one bad item must not stop the sweep of the others
            logger.exception("sweep: attributing session %s failed", pk)
            failed += 1
    attributed = AgentSession.objects.filter(pk__in=sessions, attributed_at__isnull=False).count()
    signals = list(
        LearningSignal.objects.filter(state=LearningSignal.State.PENDING, created_at__lte=cutoff)
        .order_by("created_at")
        .values_list("pk", flat=True)[:limit]
    )
    for pk in signals:
        try:
            signal_extract(signal_pk=pk)
        except Exception:
            logger.exception("sweep: extracting learning signal %s failed", pk)
            failed += 1
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
