"""Celery tasks: thin, idempotent wrappers that take ids and call one service.

Each task imports its service inside its body: tasks sit above services, and services queue
work by task name (`memory.services.jobs`), so no import runs the other way.
"""

from __future__ import annotations

from celery import shared_task


@shared_task(name="engram.ping")
def ping(value: str = "pong") -> str:
    """Echo a value; used by health checks and tests to prove a worker runs tasks."""
    return value


@shared_task(name="engram.attribute_session")
def attribute_session(session_pk: int) -> int:
    """Give every injection of an ended session an outcome; a second run does nothing."""
    from memory.services import sessions

    return sessions.outcomes_attribute(session_pk=session_pk)


@shared_task(name="engram.refresh_bands")
def refresh_bands() -> dict[str, int]:
    """Periodic: recompute bands and active/dormant status for every owner."""
    from memory.services import lifecycle

    return lifecycle.bands_refresh_all()


@shared_task(name="engram.reembed_stale")
def reembed_stale() -> int:
    """Periodic: move a bounded number of vectors from an older embedding model to the current."""
    from memory.services import embeddings

    return embeddings.reembed(embeddings.stale(), limit=embeddings.PERIODIC_LIMIT)


@shared_task(name="engram.refresh_abstraction_prompts")
def refresh_abstraction_prompts() -> int:
    """Periodic: prompt for abstract siblings of lessons seen repeatedly; idempotent."""
    from django.contrib.auth import get_user_model

    from memory.services import review

    owners = get_user_model().objects.filter(engram__isnull=False).distinct()
    return sum(review.abstraction_prompts_refresh(owner=owner) for owner in owners)


@shared_task(name="engram.learning_extract")
def learning_extract(signal_pk: int) -> int:
    """Turn one captured signal into lessons through the write path; a second run does nothing."""
    from memory.services import learning

    return learning.signal_extract(signal_pk=signal_pk)


@shared_task(name="engram.learning_capture")
def learning_capture(session_pk: int) -> dict[str, int]:
    """Read a session's transcript delta, pair errors with fixes and extract what is pending."""
    from memory.services import learning

    return learning.session_capture(session_pk=session_pk)


@shared_task(name="engram.maintain")
def maintain() -> dict[str, int]:
    """Daily: maintenance proposals from effectiveness, and automatic de-escalation; a second
    run the same day makes nothing new."""
    from memory.services import maintenance

    return maintenance.maintain_all()


@shared_task(name="engram.session_suppress")
def session_suppress(session_pk: int) -> list[str]:
    """At SessionStart: the engrams the project's own rules already state, left out of the
    session's injections and proposed for retirement; running it again changes nothing."""
    from memory.services import suppression

    return suppression.session_suppress(session_pk=session_pk)


@shared_task(name="engram.sweep_pending")
def sweep_pending() -> dict[str, int]:
    """Periodic: attribute ended sessions and extract pending signals whose own task never ran
    (the broker was down, a worker died); idempotent, like the tasks it stands in for."""
    from memory.services import recovery

    return recovery.pending_sweep()
