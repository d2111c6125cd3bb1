"""The decay clock's writes: marking a scope active for the day, and re-anchoring an RS.

The reads (active days, RS_eff) are in memory.strength, below the services."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

from django.utils import timezone

from memory.models import ActivityDay, Engram
from memory.validation import GLOBAL_SCOPE


def _local_day(when: datetime) -> date:
    return timezone.localdate(when) if timezone.is_aware(when) else when.date()


def activity_mark(*, owner: Any, scope: str, when: datetime | None = None) -> None:
    """Record that `scope` (and so the owner, whose days drive `global`) was active that day."""
    activities_mark(owner=owner, scopes=[scope], when=when)


def activities_mark(*, owner: Any, scopes: Iterable[str], when: datetime | None = None) -> None:
    """`activity_mark` for several scopes in one query."""
    day = _local_day(when or timezone.now())
    wanted = {*scopes, GLOBAL_SCOPE}
    ActivityDay.objects.bulk_create(
        [ActivityDay(owner=owner, scope=s, day=day) for s in sorted(wanted)],
        ignore_conflicts=True,
    )


def reanchor(engram: Engram, rs: float, *, now: datetime) -> None:
    """Store a new RS with its anchor at `now` (the caller saves)."""
    engram.retrieval_strength = min(1.0, max(0.0, rs))
    engram.rs_anchor_at = now
