"""Periodic lifecycle: bands and status from effective strength, compaction, store status."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from memory.maths import activation
from memory.models import Engram, Event, LifecycleEvent, ReviewItem
from memory.services.events import events_record
from memory.strength import decay_base_for, effective_strengths

BATCH = 500


def bands_refresh(*, owner: Any, now: datetime | None = None) -> dict[str, int]:
    """Recompute bands, move active <-> dormant, queue retirement candidates; idempotent.

    Strength is never written here: RS_eff is computed from the anchor on every read, so running
    this once or thirty times a day gives the same result.
    """
    now = now or timezone.now()
    base = decay_base_for(owner)
    stats: Counter[str] = Counter()
    qs = (
        Engram.objects.for_owner(owner)
        .filter(status__in=[Engram.Status.ACTIVE, Engram.Status.DORMANT])
        .order_by("pk")
    )
    last_pk = 0
    while True:
        chunk = list(qs.filter(pk__gt=last_pk)[:BATCH])
        if not chunk:
            break
        last_pk = chunk[-1].pk
        strengths = effective_strengths(chunk, now=now, decay_base=base)
        pending_fading = set(
            ReviewItem.objects.filter(
                engram__in=chunk,
                kind=ReviewItem.Kind.FADING,
                state__in=[ReviewItem.State.PENDING, ReviewItem.State.DEFERRED],
            ).values_list("engram_id", flat=True)
        )
        events: list[tuple[str, Engram | None, dict[str, Any]]] = []
        with transaction.atomic():
            for engram in chunk:
                rs_eff = strengths[engram.pk]
                band = activation.band(rs_eff)
                status = activation.lifecycle_status_for_band(engram.status, band)  # type: ignore[arg-type]
                changed: list[str] = []
                if band != engram.band:
                    events.append(
                        (
                            Event.BAND_CHANGED,
                            engram,
                            {"from": engram.band, "to": band, "rs_eff": round(rs_eff, 6)},
                        )
                    )
                    engram.band = band
                    changed.append("band")
                    stats[f"band_{band}"] += 1
                if status != engram.status:
                    events.append(
                        (Event.STATUS_CHANGED, engram, {"from": engram.status, "to": status})
                    )
                    engram.status = status
                    changed.append("status")
                    stats[f"status_{status}"] += 1
                if changed:
                    Engram.objects.filter(pk=engram.pk).update(
                        **{name: getattr(engram, name) for name in changed}
                    )
                if band == "retire" and engram.pk not in pending_fading:
                    ReviewItem.objects.create(
                        owner=owner,
                        kind=ReviewItem.Kind.FADING,
                        engram=engram,
                        payload={"rs_eff": round(rs_eff, 6)},
                        reason=f"Effective strength {rs_eff:.2f} is below 0.1",
                        created_at=now,
                    )
                    stats["retirement_candidates"] += 1
            if events:
                events_record(owner, events, actor="worker", when=now)
    return dict(stats)


def bands_refresh_all(*, now: datetime | None = None) -> dict[str, int]:
    total: Counter[str] = Counter()
    owners = get_user_model().objects.filter(engram__isnull=False).distinct()
    for owner in owners:
        total.update(bands_refresh(owner=owner, now=now))
    return dict(total)


def engrams_compact(
    *, owner: Any, retention_days: int | None = None, now: datetime | None = None
) -> int:
    """Purge retired engrams retired longer ago than the retention; events keep their ids."""
    now = now or timezone.now()
    days = retention_days if retention_days is not None else settings.ENGRAM_RETENTION_DAYS
    cutoff = now - timedelta(days=days)
    doomed = list(
        Engram.objects.for_owner(owner).filter(status=Engram.Status.RETIRED, retired_at__lt=cutoff)
    )
    if not doomed:
        return 0
    with transaction.atomic():
        LifecycleEvent.objects.bulk_create(
            LifecycleEvent(
                owner=owner,
                event=Event.ENGRAM_PURGED,
                engram=None,
                engram_ref=e.engram_id,
                actor="compact",
                data={"retired_at": e.retired_at.isoformat() if e.retired_at else None},
                created_at=now,
            )
            for e in doomed
        )
        Engram.objects.filter(pk__in=[e.pk for e in doomed]).delete()
    return len(doomed)
