"""Trials of imported abstracts: at expiry, reinforced ones go to review, the rest retire."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from exchange import fitness as fitness_maths
from exchange.models import PacketItem
from memory.models import Engram, Event, ReviewItem
from memory.services.engrams import engram_retire
from memory.services.events import event_record

ACTOR = "worker"


def _due(now: datetime) -> Any:
    return PacketItem.objects.filter(trial=PacketItem.Trial.ON_TRIAL).filter(
        Q(engram__isnull=True) | Q(engram__provisional_until__lte=now)
    )


def trial_expire(*, item: PacketItem, now: datetime | None = None) -> str:
    """End one item's trial if it is due; return what happened ("" when nothing was due).

    The item is claimed by a conditional UPDATE on its trial state, so a second run (or a
    concurrent worker) finds nothing to do. Reinforced (followed + positive > 0 and not
    outweighed by contradicted + negative): a provisional review item, engram still a
    candidate. Otherwise retired. Either way a `trial_ended` event records the counts.
    """
    now = now or timezone.now()
    with transaction.atomic():
        engram = (
            Engram.objects.select_for_update().filter(pk=item.engram_id).first()
            if item.engram_id
            else None
        )
        if engram is None or engram.status == Engram.Status.RETIRED:
            # Purged, or retired by a person during the trial: nothing left to decide.
            outcome = "retire"
            state = PacketItem.Trial.RETIRED
        elif engram.status == Engram.Status.ACTIVE:
            # A person approved it before the trial ended.
            outcome = "promote"
            state = PacketItem.Trial.PROMOTED
        else:
            outcome = fitness_maths.trial_outcome(
                engram.followed,
                engram.feedback_positive,
                engram.contradicted,
                engram.feedback_negative,
            )
            state = PacketItem.Trial.PROMOTED if outcome == "promote" else PacketItem.Trial.RETIRED
        claimed = (
            PacketItem.objects.filter(pk=item.pk, trial=PacketItem.Trial.ON_TRIAL)
            .filter(Q(engram__isnull=True) | Q(engram__provisional_until__lte=now))
            .update(trial=state, trial_decided_at=now)
        )
        if not claimed or engram is None:
            return state if claimed else ""
        if engram.status not in (Engram.Status.CANDIDATE, Engram.Status.DORMANT):
            return state
        counts = {
            "followed": engram.followed,
            "positive": engram.feedback_positive,
            "contradicted": engram.contradicted,
            "negative": engram.feedback_negative,
        }
        event_record(
            owner=engram.owner,
            event=Event.TRIAL_ENDED,
            engram=engram,
            actor=ACTOR,
            data={"outcome": outcome, **counts},
            when=now,
        )
        if outcome == "promote":
            ReviewItem.objects.create(
                owner_id=engram.owner_id,
                kind=ReviewItem.Kind.PROVISIONAL,
                engram=engram,
                payload={"item": item.pk, **counts},
                reason=(
                    f"Imported lesson reinforced during its {fitness_maths.TRIAL_DAYS}-day trial "
                    f"({counts['followed']} followed, {counts['positive']} positive)"
                ),
                created_at=now,
            )
        else:
            engram_retire(
                owner=engram.owner,
                engram=engram,
                actor=ACTOR,
                reason="trial ended without reinforcement",
            )
    return state


def trials_expire(*, owner: Any = None, now: datetime | None = None) -> dict[str, int]:
    """End every due trial (of one owner, or all); idempotent. Returns counts by new state."""
    now = now or timezone.now()
    due = _due(now)
    if owner is not None:
        due = due.filter(owner=owner)
    stats: Counter[str] = Counter()
    for item in due.order_by("pk").only("pk", "engram_id"):
        state = trial_expire(item=item, now=now)
        if state:
            stats[state] += 1
    return dict(stats)
