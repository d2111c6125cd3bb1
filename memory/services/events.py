"""The append-only lifecycle log."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.utils import timezone

from memory.models import Engram, Event, LifecycleEvent


def _known(event: str) -> None:
    if event not in Event.values:
        raise ValueError(f"{event!r} is not a lifecycle event (memory.models.Event)")


def event_record(
    *,
    owner: Any,
    event: str,
    engram: Engram | None = None,
    actor: str = "",
    data: dict[str, Any] | None = None,
    when: datetime | None = None,
) -> LifecycleEvent:
    """Append one lifecycle event; `data` must be JSON-serialisable."""
    _known(event)
    return LifecycleEvent.objects.create(
        owner=owner,
        event=event,
        engram=engram,
        engram_ref=engram.engram_id if engram else "",
        actor=actor,
        data=data or {},
        created_at=when or timezone.now(),
    )


def events_record(
    owner: Any,
    rows: Sequence[tuple[str, Engram | None, dict[str, Any]]],
    *,
    actor: str = "",
    when: datetime | None = None,
) -> None:
    """Append several events in one query."""
    for event, _, _ in rows:
        _known(event)
    at = when or timezone.now()
    LifecycleEvent.objects.bulk_create(
        LifecycleEvent(
            owner=owner,
            event=event,
            engram=engram,
            engram_ref=engram.engram_id if engram else "",
            actor=actor,
            data=data,
            created_at=at,
        )
        for event, engram, data in rows
    )
