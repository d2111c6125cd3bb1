"""The daily review (DESIGN "Review queue"): today's batch, decisions, calibration, abstraction.

A batch is the set of review items stamped with today's date (`payload["batch_day"]`). It is
filled once with items drawn in a per-day pseudo-random order, so reloading the page shows the
same items in the same order, and deciding one never pulls a new one in: the day's size is a
budget of decisions, not a window. Every decision is a `review_decided` lifecycle event next to
the specific events of the services it calls (engram_promoted, engram_retired, engram_merged…).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, Protocol

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from memory import validation
from memory.errors import Conflict, NotFound
from memory.models import (
    Association,
    Engram,
    Event,
    IdSequence,
    LifecycleEvent,
    OwnerSettings,
    ReviewItem,
)
from memory.services import drafting
from memory.services.activity import activity_mark
from memory.services.engrams import (
    InvalidInput,
    embed_texts,
    engram_activate,
    engram_build,
    engram_reinforce,
    engram_retire,
    engram_update,
)
from memory.services.events import event_record, events_record
from memory.services.review_queue import answer_remember
from memory.validation import MAX_STATEMENT_CHARS, check_text

FIRST_WEEKS_DAYS = 14  # the owner's first two weeks get the larger batch
FIRST_WEEKS_BATCH = 15
STEADY_BATCH = 5
APPROVAL_WINDOW_DAYS = 7
APPROVAL_WARN_ABOVE = 0.9
# Below this many approve-or-reject decisions in the window the rate is shown but not flagged:
# two approvals out of two say nothing about rubber-stamping.
APPROVAL_MIN_DECISIONS = 5
AUTO_DEFER_ACTOR = "auto-defer"
BATCH_KEY = "batch_day"

OPEN_STATES = (ReviewItem.State.PENDING, ReviewItem.State.DEFERRED)
K = ReviewItem.Kind

# Actions per kind, the default (defer) first. A calibration item offers a candidate's actions:
# it must look like any other candidate, or it would measure nothing.
ACTIONS: dict[str, tuple[str, ...]] = {
    K.CANDIDATE: ("defer", "approve", "reject", "edit", "one_off", "wrong"),
    K.CALIBRATION: ("defer", "approve", "reject", "edit", "one_off", "wrong"),
    K.CONTRADICTION: ("defer", "keep_new", "keep_old", "merge", "both_valid"),
    K.MERGE: ("defer", "merge", "keep_both", "reject"),
    K.FADING: ("defer", "reinforce", "let_fade", "retire"),
    K.ABSTRACTION: ("defer", "write", "dismiss"),
    K.MAINTENANCE: ("defer", "approve", "reject"),
    K.SYNTHESIS: ("defer", "approve", "reject"),
    K.PROVISIONAL: ("defer", "approve", "reject"),
    K.PROMPT: ("defer", "approve", "reject"),
}
# Decisions that count as approvals, and those that count in the approval rate's denominator.
APPROVALS = frozenset({"approve", "edit"})
JUDGED = frozenset({"approve", "edit", "reject", "one_off", "wrong"})
# "It was a one-off" and "wrong": a candidate's answers that are remembered (review_queue).
ANSWERS = ("one_off", "wrong")

# Sections of the review page, in display order; a calibration item sits among the candidates.
SECTIONS: tuple[tuple[str, str, str], ...] = (
    (K.CANDIDATE, "New candidates", "Lessons an agent inferred. Approve to make them active."),
    (K.CONTRADICTION, "Contradictions", "Two engrams that disagree. Decide which one holds."),
    (K.MERGE, "Merge proposals", "A new engram that repeats an existing one."),
    (K.FADING, "Fading", "Engrams whose strength fell below 0.1. Reinforce, let fade or retire."),
    (
        K.ABSTRACTION,
        "Abstraction prompts",
        "A lesson seen again and again: write its general form.",
    ),
    (K.MAINTENANCE, "Maintenance proposals", "Changes proposed from effectiveness data."),
    (K.SYNTHESIS, "Syntheses", "Rules distilled from repeated behaviour."),
    (K.PROVISIONAL, "Provisional imports", "Lessons received from peers, on trial."),
    (K.PROMPT, "Prompt proposals", "Prompt changes drawn from recurring evaluation feedback."),
)
SECTION_OF: dict[str, str] = {K.CALIBRATION: K.CANDIDATE}


# --- kinds other apps decide --------------------------------------------------------------


class KindApply(Protocol):
    def __call__(
        self,
        *,
        owner: Any,
        item: ReviewItem,
        action: str,
        actor: str,
        edits: Mapping[str, Any],
        now: datetime,
    ) -> Mapping[str, Any] | None: ...


@dataclass(frozen=True)
class KindHandler:
    """How another app's review kind is decided; `apply` runs inside the decision's transaction
    for every action but defer and returns what to add to the `review_decided` event."""

    actions: tuple[str, ...]
    apply: KindApply


HANDLERS: dict[str, KindHandler] = {}


def kind_register(kind: str, *, actions: tuple[str, ...], apply: KindApply) -> None:
    """Called from another app's `AppConfig.ready()` (so memory never imports that app): items of
    `kind` offer `actions` (defer first) and are decided by `apply`."""
    if not actions or actions[0] != "defer":
        raise ValueError("a review kind's actions start with defer")
    if kind not in K.values:
        raise ValueError(f"{kind!r} is not a ReviewItem.Kind")
    HANDLERS[kind] = KindHandler(actions=actions, apply=apply)
    ACTIONS[kind] = actions


# Statements anyone should reject in 2026: the fallback calibration items when the owner has no
# retired engram to show again.
OBSOLETE_STATEMENTS = (
    "Write new Python code for Python 2.7 and use print statements without parentheses.",
    "Add Internet Explorer 6 hacks to every new stylesheet.",
    "Commit the node_modules folder so installs work offline.",
    "Disable TLS certificate verification in production HTTP clients to avoid errors.",
    "Store user passwords in plain text so support can read them back.",
    "Load jQuery 1.4 from a public CDN on every new page.",
)


# --- batch ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ApprovalRate:
    """Approvals / (approvals + rejections) over the last 7 days; calibration hits alike."""

    approvals: int
    judged: int
    calibration_right: int
    calibration_total: int

    @property
    def rate(self) -> float | None:
        return self.approvals / self.judged if self.judged else None

    @property
    def flagged(self) -> bool:
        rate = self.rate
        return (
            rate is not None
            and self.judged >= APPROVAL_MIN_DECISIONS
            and rate > APPROVAL_WARN_ABOVE
        )


@dataclass
class Section:
    kind: str
    title: str
    help: str
    items: list[ReviewItem] = field(default_factory=list)


@dataclass
class Batch:
    """Today's review: undecided items in their randomised order, and the day's figures."""

    day: date
    size: int
    items: list[ReviewItem]
    decided: int
    waiting: int  # open items outside today's batch

    @property
    def real_left(self) -> int:
        """Undecided items of today's batch, the calibration item not counted (open_count's
        rule: today's batch plus `waiting` is open_count)."""
        return sum(1 for item in self.items if item.kind != K.CALIBRATION)

    @property
    def sections(self) -> list[Section]:
        sections: dict[str, Section] = {
            str(kind): Section(kind, title, text) for kind, title, text in SECTIONS
        }
        for item in self.items:
            sections[str(SECTION_OF.get(item.kind, item.kind))].items.append(item)
        return [s for s in sections.values() if s.items]


def _day_start(now: datetime) -> datetime:
    local = timezone.localtime(now)
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def _tomorrow(now: datetime) -> datetime:
    # Local midnight of the next day, computed on the date so DST days are not 23 or 25 hours.
    start = _day_start(now)
    next_day = start.date() + timedelta(days=1)
    return start.replace(year=next_day.year, month=next_day.month, day=next_day.day)


def batch_size_for(owner: Any, *, now: datetime, configured: int | None = None) -> int:
    """The owner's setting, else 15 a day in their first 14 days, then 5."""
    if configured:
        return int(configured)
    joined = getattr(owner, "date_joined", None)
    if joined is not None and now - joined < timedelta(days=FIRST_WEEKS_DAYS):
        return FIRST_WEEKS_BATCH
    return STEADY_BATCH


def _rank(seed: str, pk: int) -> str:
    """A stable pseudo-random sort key for one item on one day."""
    return hashlib.sha256(f"{seed}:{pk}".encode()).hexdigest()


def _due(owner: Any, now: datetime) -> Any:
    return ReviewItem.objects.filter(owner=owner, state__in=OPEN_STATES).filter(
        Q(deferred_until__isnull=True) | Q(deferred_until__lte=now)
    )


def _stamp(item: ReviewItem, key: str) -> None:
    item.payload = {**(item.payload or {}), BATCH_KEY: key}
    item.state = ReviewItem.State.PENDING
    item.deferred_until = None
    item.save(update_fields=["payload", "state", "deferred_until"])


def _expire_leftovers(owner: Any, key: str, now: datetime, *, auto_defer: bool) -> None:
    """Close yesterday's undecided calibration; with auto-defer, defer the rest of old batches."""
    stale = list(
        ReviewItem.objects.filter(owner=owner, state=ReviewItem.State.PENDING)
        .filter(payload__has_key=BATCH_KEY)
        .exclude(payload__batch_day=key)
        .select_related("engram")
    )
    if not stale:
        return
    tomorrow = _tomorrow(now)
    events: list[tuple[str, Engram | None, dict[str, Any]]] = []
    for item in stale:
        if item.kind == K.CALIBRATION:
            item.state = ReviewItem.State.DONE
            item.decision = "expired"
            item.decided_at = now
            item.save(update_fields=["state", "decision", "decided_at"])
        elif auto_defer:
            item.state = ReviewItem.State.DEFERRED
            item.decision = "defer"
            item.deferred_until = tomorrow
            item.decided_at = now
            item.save(update_fields=["state", "decision", "deferred_until", "decided_at"])
            events.append(
                (
                    Event.REVIEW_DECIDED,
                    item.engram,
                    {"item": item.pk, "kind": item.kind, "action": "defer", "auto": True},
                )
            )
    if events:
        events_record(owner, events, actor=AUTO_DEFER_ACTOR, when=now)


def _calibration_create(owner: Any, key: str, seed: str, now: datetime) -> ReviewItem:
    """One known-obsolete item: a retired engram shown again, or an obviously outdated line."""
    retired = Engram.objects.for_owner(owner).filter(
        status=Engram.Status.RETIRED, kind=Engram.Kind.CONCRETE
    )
    count = retired.count()
    pick = int(hashlib.sha256(seed.encode()).hexdigest(), 16)
    payload: dict[str, Any] = {BATCH_KEY: key}
    engram: Engram | None = None
    if count:
        engram = retired.order_by("pk")[pick % count]
        payload.update(source="retired", statement=engram.statement)
    else:
        payload.update(
            source="synthetic", statement=OBSOLETE_STATEMENTS[pick % len(OBSOLETE_STATEMENTS)]
        )
    return ReviewItem.objects.create(
        owner=owner,
        kind=K.CALIBRATION,
        engram=engram,
        payload=payload,
        reason="New lesson from agent",
        created_at=now,
    )


def review_batch(*, owner: Any, now: datetime | None = None) -> Batch:
    """Today's batch, filling it on first use; stable across reloads (per-day seed).

    Size: OwnerSettings.review_batch_size, else 15 in the owner's first 14 days, then 5; one of
    the slots is a calibration item whenever there is anything real to review. With auto-defer
    on, items left undecided in an earlier day's batch are deferred (an event each) first.
    """
    now = now or timezone.now()
    day = timezone.localdate(now)
    key = day.isoformat()
    seed = f"{owner.pk}:{key}"
    prefs = (
        OwnerSettings.objects.filter(owner=owner)
        .values_list("review_batch_size", "auto_defer")
        .first()
    )
    configured, auto_defer = prefs if prefs else (None, False)
    size = batch_size_for(owner, now=now, configured=configured)
    start = _day_start(now)
    members_qs = (
        ReviewItem.objects.filter(owner=owner, payload__batch_day=key)
        .filter(Q(state__in=OPEN_STATES) | Q(decided_at__gte=start))
        .select_related("engram", "other")
    )
    members = list(members_qs)
    if len(members) < size:
        with transaction.atomic():
            # Two tabs opening the review at once must not fill the batch (or calibrate) twice:
            # the owner's row serialises the fill, and the members are read again under it.
            get_user_model().objects.select_for_update().filter(pk=owner.pk).exists()
            members = list(members_qs.all())
            if not members:
                # First look of the day: tidy earlier batches and refresh abstraction prompts.
                _expire_leftovers(owner, key, now, auto_defer=bool(auto_defer))
                abstraction_prompts_refresh(owner=owner, now=now)
            has_calibration = any(m.kind == K.CALIBRATION for m in members)
            real_slots = size - len(members) - (0 if has_calibration else 1)
            member_pks = {m.pk for m in members}
            pool = [
                pk
                for pk in _due(owner, now)
                .exclude(kind=K.CALIBRATION)
                .values_list("pk", flat=True)
                .order_by()
                if pk not in member_pks
            ]
            picks = sorted(pool, key=lambda pk: _rank(seed, pk))[: max(0, real_slots)]
            if picks:
                for item in ReviewItem.objects.filter(pk__in=picks):
                    _stamp(item, key)
            real = [m for m in members if m.kind != K.CALIBRATION]
            calibrated_today = ReviewItem.objects.filter(
                owner=owner, kind=K.CALIBRATION, payload__batch_day=key
            ).exists()
            calibrate = bool(picks or real) and not calibrated_today
            if calibrate:
                _calibration_create(owner, key, seed, now)
            if picks or calibrate:
                members = list(members_qs.all())
    undecided = [m for m in members if m.state == ReviewItem.State.PENDING]
    undecided.sort(key=lambda m: _rank(seed, m.pk))
    # A missing key compares as NULL in SQL, so "not in today's batch" is spelled out.
    outside = Q(payload__batch_day__isnull=True) | ~Q(payload__batch_day=key)
    waiting = _due(owner, now).filter(outside).exclude(kind=K.CALIBRATION).count()
    return Batch(
        day=day,
        size=size,
        items=undecided,
        decided=len(members) - len(undecided),
        waiting=waiting,
    )


def approval_rate(*, owner: Any, now: datetime | None = None) -> ApprovalRate:
    """Approvals / (approvals + rejections) of the person's decisions over the last 7 days."""
    now = now or timezone.now()
    rows = (
        LifecycleEvent.objects.filter(
            owner=owner,
            event=Event.REVIEW_DECIDED,
            created_at__gte=now - timedelta(days=APPROVAL_WINDOW_DAYS),
        )
        .exclude(actor=AUTO_DEFER_ACTOR)
        .values_list("data", flat=True)
    )
    approvals = judged = right = calibrations = 0
    for data in rows:
        action = data.get("action") if isinstance(data, dict) else None
        if action in JUDGED:
            judged += 1
            approvals += action in APPROVALS
        if isinstance(data, dict) and data.get("kind") == K.CALIBRATION and action in JUDGED:
            calibrations += 1
            right += bool(data.get("correct"))
    return ApprovalRate(approvals, judged, right, calibrations)


def open_count(*, owner: Any, now: datetime | None = None) -> int:
    """The one count of what waits for review: open items due now, the calibration item not
    counted. The overview, the navigation badge and the review page all show it; one query."""
    return _due(owner, now or timezone.now()).exclude(kind=K.CALIBRATION).count()


# --- decisions ------------------------------------------------------------------------------


class AlreadyDecided(Conflict):
    def __init__(self, item: ReviewItem) -> None:
        super().__init__(
            f"This {item.kind} item was already decided ({item.decision or item.state}).",
            code="already_decided",
        )


MERGED_COUNTERS = (
    "surfaced", "followed", "contradicted", "ignored", "irrelevant", "injections", "hits",
    "misses", "frequency", "feedback_positive", "feedback_negative", "feedback_neutral",
)  # fmt: skip


def _merge_into(*, owner: Any, new: Engram, old: Engram, actor: str) -> None:
    """Merge `new` into `old`: the survivor takes the loser's counters, derivation count, tags
    and associations; the loser is retired pointing at it (`superseded_by`), its own history
    (injections, outcomes, events) kept."""
    now = timezone.now()
    new.refresh_from_db()
    old.refresh_from_db()
    updates: dict[str, Any] = {name: F(name) + getattr(new, name) for name in MERGED_COUNTERS}
    updates["derivation_count"] = F("derivation_count") + max(1, new.derivation_count)
    tags = list(old.tags or [])
    tags += [t for t in new.tags or [] if t not in tags]
    Engram.objects.filter(pk=old.pk).update(**updates, tags=tags[:50], updated_at=now)
    moved = 0
    for link in Association.objects.filter(Q(source=new) | Q(target=new)):
        source = old if link.source_id == new.pk else link.source
        target = old if link.target_id == new.pk else link.target
        if source.pk == target.pk:
            continue
        _, created = Association.objects.get_or_create(
            owner=link.owner,
            source=source,
            target=target,
            type=link.type,
            defaults={"strength": link.strength, "updated_at": now},
        )
        moved += int(created)
    Association.objects.filter(Q(source=new) | Q(target=new)).delete()
    Engram.objects.filter(pk=new.pk).update(superseded_by=old)
    engram_retire(owner=owner, engram=new, actor=actor, reason=f"merged into {old.engram_id}")
    old.refresh_from_db()
    event_record(
        owner=owner,
        event=Event.ENGRAM_MERGED,
        engram=old,
        actor=actor,
        data={
            "merged": new.engram_id,
            "derivation_count": old.derivation_count,
            "counters": {name: getattr(new, name) for name in MERGED_COUNTERS},
            "associations_moved": moved,
        },
    )


def _activate(*, owner: Any, engram: Engram, actor: str, item: ReviewItem, now: datetime) -> None:
    engram_activate(owner=owner, engram=engram, actor=actor)
    if item.kind == K.CANDIDATE and engram.source == "agent" and drafting.quotes_the_person(engram):
        # The person kept their own words as a rule: from now on it is one they stated (as a
        # candidate they state again is, `learning._promote_on_recurrence`).
        Engram.objects.filter(pk=engram.pk).update(source="user")
        engram.source = "user"
    # Its other open candidate or merge items are answered by this decision.
    ReviewItem.objects.filter(
        engram=engram, kind__in=[K.CANDIDATE, K.MERGE], state__in=OPEN_STATES
    ).exclude(pk=item.pk).update(state=ReviewItem.State.DONE, decision="superseded", decided_at=now)


def _add_contraindication(*, owner: Any, engram: Engram, text: str, actor: str) -> None:
    current = [c for c in engram.contraindications or [] if isinstance(c, str)]
    if text not in current:
        engram_update(
            owner=owner,
            engram=engram,
            changes={"contraindications": [*current, text]},
            actor=actor,
        )


def _required(edits: Mapping[str, Any], name: str, *, limit: int = 2000) -> str:
    return str(validation.text(name, edits.get(name, ""), limit=limit, required=True))


def _sources_of(item: ReviewItem) -> list[Engram]:
    ids = [i for i in (item.payload or {}).get("sources", []) if isinstance(i, str)]
    found = sorted(
        Engram.objects.for_owner(item.owner_id).filter(engram_id__in=ids),
        key=lambda e: ids.index(e.engram_id),
    )
    if item.engram is not None and all(e.pk != item.engram.pk for e in found):
        found.insert(0, item.engram)
    return found


def review_decide(
    *,
    owner: Any,
    item: ReviewItem,
    action: str,
    actor: str,
    edits: Mapping[str, Any] | None = None,
    now: datetime | None = None,
) -> ReviewItem:
    """Apply one decision to one review item; atomic, so a bad edit changes nothing.

    Raises InvalidInput (422, with the field) for an unknown action or missing input, and
    AlreadyDecided (409) for an item already done.
    """
    if item.owner_id != owner.pk:
        raise NotFound("Review item")
    allowed = ACTIONS.get(item.kind, ("defer",))
    if action not in allowed:
        raise InvalidInput("action", f"must be one of {', '.join(allowed)}")
    edits = edits or {}
    now = now or timezone.now()
    data: dict[str, Any] = {"item": item.pk, "kind": item.kind, "action": action}
    with transaction.atomic():
        locked = ReviewItem.objects.select_for_update().get(pk=item.pk)
        if locked.state == ReviewItem.State.DONE:
            raise AlreadyDecided(locked)
        new, old = item.engram, item.other
        kind = item.kind
        if action == "defer":
            pass
        elif kind in HANDLERS:
            data.update(
                HANDLERS[kind].apply(
                    owner=owner, item=locked, action=action, actor=actor, edits=edits, now=now
                )
                or {}
            )
        elif kind == K.CALIBRATION:
            # Nothing changes: the item only measures attention. Reject is the right answer.
            data["correct"] = action in ("reject", *ANSWERS)
        elif kind == K.CANDIDATE and new is not None:
            if action == "approve":
                _activate(owner=owner, engram=new, actor=actor, item=item, now=now)
            elif action == "reject":
                engram_retire(owner=owner, engram=new, actor=actor, reason="rejected in review")
            elif action in ANSWERS:
                reason = "a one-off, not a rule" if action == "one_off" else "wrong"
                engram_retire(owner=owner, engram=new, actor=actor, reason=reason)
                answer_remember(owner=owner, engram=new, answer=action, now=now)
            elif action == "edit":
                changes = {
                    name: edits[name]
                    for name in ("statement", "rationale", "tags", "scope", "type", "polarity")
                    if name in edits
                }
                engram_update(owner=owner, engram=new, changes=changes, actor=actor)
                _activate(owner=owner, engram=new, actor=actor, item=item, now=now)
        elif kind in (K.CONTRADICTION, K.MERGE) and new is not None and old is not None:
            data["new"], data["old"] = new.engram_id, old.engram_id
            if action == "keep_new":
                engram_retire(owner=owner, engram=old, actor=actor, reason=f"{new.engram_id} holds")
                _activate(owner=owner, engram=new, actor=actor, item=item, now=now)
            elif action in ("keep_old", "reject"):
                engram_retire(owner=owner, engram=new, actor=actor, reason=f"{old.engram_id} holds")
            elif action == "merge":
                _merge_into(owner=owner, new=new, old=old, actor=actor)
            elif action == "keep_both":
                _activate(owner=owner, engram=new, actor=actor, item=item, now=now)
            elif action == "both_valid":
                new_text = _required(edits, "new_contraindication")
                old_text = _required(edits, "old_contraindication")
                _add_contraindication(owner=owner, engram=new, text=new_text, actor=actor)
                _add_contraindication(owner=owner, engram=old, text=old_text, actor=actor)
                _activate(owner=owner, engram=new, actor=actor, item=item, now=now)
                engram_activate(owner=owner, engram=old, actor=actor, event=Event.STATUS_CHANGED)
        elif kind == K.FADING and new is not None:
            if action == "reinforce":
                engram_reinforce(owner=owner, engram=new, actor=actor)
            elif action == "retire":
                engram_retire(owner=owner, engram=new, actor=actor, reason="let go in review")
        elif kind == K.ABSTRACTION:
            if action == "write":
                sources = _sources_of(item)
                abstract = abstract_create(
                    owner=owner,
                    sources=sources,
                    statement=edits.get("statement", ""),
                    structure=edits.get("structure", ""),
                    applies_when=edits.get("applies_when", ""),
                    visibility=edits.get("visibility") or Engram.Visibility.PRIVATE,
                    actor=actor,
                )
                data["abstract"] = abstract.engram_id
        elif new is not None:  # maintenance, synthesis, provisional
            if action == "approve" and new.status in (
                Engram.Status.CANDIDATE,
                Engram.Status.DORMANT,
            ):
                _activate(owner=owner, engram=new, actor=actor, item=item, now=now)
            elif action == "reject" and kind == K.PROVISIONAL:
                engram_retire(owner=owner, engram=new, actor=actor, reason="rejected import")
        if action == "defer":
            item.state = ReviewItem.State.DEFERRED
            item.deferred_until = _tomorrow(now)
        else:
            item.state = ReviewItem.State.DONE
        item.decision = action
        item.decided_by = owner
        item.decided_at = now
        item.save(update_fields=["state", "deferred_until", "decision", "decided_by", "decided_at"])
        # A calibration item may point at a retired engram: the event must not give it away in
        # that engram's history, so it names only the item.
        event_engram = None if kind == K.CALIBRATION else new
        event_record(
            owner=owner, event=Event.REVIEW_DECIDED, engram=event_engram, actor=actor, data=data
        )
    return item


def review_decide_all(*, owner: Any, action: str, actor: str, now: datetime | None = None) -> int:
    """Approve or defer every undecided item of today's batch that offers that action."""
    if action not in ("approve", "defer"):
        raise InvalidInput("action", "must be approve or defer")
    now = now or timezone.now()
    done = 0
    for item in review_batch(owner=owner, now=now).items:
        if action in ACTIONS.get(item.kind, ()):
            review_decide(owner=owner, item=item, action=action, actor=actor, now=now)
            done += 1
    return done


# --- abstraction ----------------------------------------------------------------------------


def abstraction_prompts_refresh(*, owner: Any, now: datetime | None = None) -> int:
    """Create abstraction prompts for lessons seen repeatedly; idempotent, returns the count.

    A prompt is due for an active concrete engram without an abstract when its
    derivation_count ≥ 2, or when the same content hash is live in two or more scopes (one
    prompt for the group). An engram already named by any abstraction prompt is skipped.
    """
    now = now or timezone.now()
    prompted: set[str] = set()
    for engram_pk, payload in ReviewItem.objects.filter(
        owner=owner, kind=K.ABSTRACTION
    ).values_list("engram_id", "payload"):
        if engram_pk is not None:
            prompted.add(f"pk:{engram_pk}")
        if isinstance(payload, dict):
            prompted.update(str(s) for s in payload.get("sources", []))
    base = Engram.objects.for_owner(owner).filter(
        status=Engram.Status.ACTIVE, kind=Engram.Kind.CONCRETE, abstract=""
    )
    shared = list(
        base.values("content_hash")
        .annotate(scopes=Count("scope", distinct=True))
        .filter(scopes__gte=2)
        .values_list("content_hash", flat=True)
    )
    candidates = list(
        base.filter(Q(derivation_count__gte=2) | Q(content_hash__in=shared))
        .order_by("pk")
        .only("pk", "engram_id", "content_hash", "derivation_count", "scope")
    )
    groups: dict[str, list[Engram]] = {}
    for engram in candidates:
        group_key = engram.content_hash if engram.content_hash in shared else f"one:{engram.pk}"
        groups.setdefault(group_key, []).append(engram)
    new_items: list[ReviewItem] = []
    for members in groups.values():
        if any(f"pk:{m.pk}" in prompted or m.engram_id in prompted for m in members):
            continue
        scopes = sorted({m.scope for m in members})
        if len(members) > 1:
            reason = f"The same lesson in {len(scopes)} scopes: {', '.join(scopes)}"
        else:
            reason = f"Learned {members[0].derivation_count} times"
        new_items.append(
            ReviewItem(
                owner=owner,
                kind=K.ABSTRACTION,
                engram=members[0],
                payload={"sources": [m.engram_id for m in members], "scopes": scopes},
                reason=reason,
                created_at=now,
            )
        )
    ReviewItem.objects.bulk_create(new_items)
    return len(new_items)


def abstract_create(
    *,
    owner: Any,
    sources: Sequence[Engram],
    statement: str,
    structure: str,
    applies_when: str,
    visibility: str = Engram.Visibility.PRIVATE,
    actor: str = "person",
) -> Engram:
    """Write the abstract sibling (ABS-) of concrete engrams; it starts active and private.

    Derived from the sources (their ids in `derived_from`, its id in their `abstract`), global
    scope, the sources' type, tags and summed derivation count. Secrets and prompt injections
    are refused (422) like on every other write path.
    """
    statement = validation.text("statement", statement, limit=MAX_STATEMENT_CHARS, required=True)
    structure = validation.text("structure", structure, required=True)
    applies_when = validation.text("applies_when", applies_when, required=True)
    visibility = validation.choice("visibility", visibility, Engram.Visibility.values)
    sources = list(sources)
    if not sources:
        raise InvalidInput("sources", "name at least one concrete engram")
    if any(s.owner_id != owner.pk for s in sources):
        raise InvalidInput("sources", "must be your own engrams")
    check_text(statement, structure, applies_when)
    now = timezone.now()
    first = sources[0]
    polarities = {s.polarity for s in sources}
    tags: list[str] = []
    for source in sources:
        for tag in source.tags or []:
            if isinstance(tag, str) and tag not in tags and len(tags) < 50:
                tags.append(tag)
    with transaction.atomic():
        abstract = engram_build(
            owner=owner,
            now=now,
            vector=embed_texts([statement])[0],
            engram_id=IdSequence.next_id(owner=owner, prefix="ABS", when=now),
            kind=Engram.Kind.ABSTRACT,
            status=Engram.Status.ACTIVE,
            type=first.type,
            scope="global",
            visibility=visibility,
            polarity=polarities.pop() if len(polarities) == 1 else None,
            statement=statement,
            structure=structure,
            applies_when=applies_when,
            tags=tags,
            domain=first.domain,
            source="person",
            derivation_count=sum(max(1, s.derivation_count) for s in sources),
            derived_from=[s.engram_id for s in sources],
            provenance={"origin": "local", "actor": actor, "derived_from": len(sources)},
        )
        try:
            with transaction.atomic():
                abstract.save()
        except IntegrityError:  # the live-hash constraint: a global engram already says this
            raise Conflict(
                "A live global engram already states this abstraction.", code="duplicate"
            ) from None
        Engram.objects.filter(pk__in=[s.pk for s in sources]).update(
            abstract=abstract.engram_id, updated_at=now
        )
        event_record(
            owner=owner,
            event=Event.ENGRAM_CREATED,
            engram=abstract,
            actor=actor,
            data={"kind": "ABS", "derived_from": abstract.derived_from, "status": "active"},
            when=now,
        )
        events_record(
            owner,
            [(Event.ABSTRACT_LINKED, s, {"abstract": abstract.engram_id}) for s in sources],
            actor=actor,
            when=now,
        )
        activity_mark(owner=owner, scope="global", when=now)
    return abstract
