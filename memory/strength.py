"""Reads of the decay clock: active days per scope and the effective retrieval strength
(RS_eff) they give, for selectors, services and the edges alike. The maths is in
memory.maths.activation; this module reads the rows it needs (two queries for any number of
engrams of one owner)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from memory.maths import activation
from memory.models import ActivityDay, Engram, OwnerSettings


def activity_days(owner: Any, scopes: Iterable[str], since: date) -> dict[str, list[date]]:
    """Active days after `since` per scope, in one query."""
    wanted = set(scopes)
    days: dict[str, list[date]] = defaultdict(list)
    if not wanted:
        return days
    scopes = sorted(wanted)
    # Raw SQL: on inject's hot path (twice a prompt) the ORM cost ~10x the query.
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT scope, day FROM {ActivityDay._meta.db_table} WHERE owner_id = %s "
            f"AND scope IN ({', '.join(['%s'] * len(scopes))}) AND day > %s",
            [getattr(owner, "pk", owner), *scopes, connection.ops.adapt_datefield_value(since)],
        )
        for scope, day in cursor.fetchall():
            # SQLite gives ISO text.
            days[scope].append(day if isinstance(day, date) else date.fromisoformat(day))
    return days


def decay_base_for(owner: Any) -> float:
    custom = OwnerSettings.objects.filter(owner=owner).values_list("decay_base", flat=True).first()
    return float(custom) if custom is not None else float(settings.ENGRAM_DECAY_BASE)


def effective_strengths(
    engrams: Sequence[Engram], *, now: datetime | None = None, decay_base: float | None = None
) -> dict[int, float]:
    """RS_eff for each engram (by pk), from its anchor and its scope's active days; 2 queries."""
    if not engrams:
        return {}
    now = now or timezone.now()
    owner = engrams[0].owner_id
    base = decay_base if decay_base is not None else decay_base_for(owner)
    zone = timezone.get_current_timezone()  # once: Django looks it up per call otherwise

    def local(when: datetime) -> datetime:
        return when.astimezone(zone) if timezone.is_aware(when) else when

    since = min(local(e.rs_anchor_at).date() for e in engrams)
    days = activity_days(owner, {e.scope for e in engrams}, since)
    local_now = local(now)
    result: dict[int, float] = {}
    for engram in engrams:
        active = activation.count_active_days(
            days.get(engram.scope, ()), local(engram.rs_anchor_at), local_now
        )
        result[engram.pk] = activation.effective_rs(
            engram.retrieval_strength,
            active,
            engram.emotional_weight,
            engram.storage_strength,
            floor=settings.ENGRAM_RS_FLOOR,
            base=base,
        )
    return result


def effective_strength(engram: Engram, *, now: datetime | None = None) -> float:
    return effective_strengths([engram], now=now)[engram.pk]
