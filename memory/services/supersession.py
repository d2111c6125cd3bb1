"""Updates of a rule: a newer user rule replaces an older one only where the slot holds one value
(DESIGN v3 "Supersession"), through the model's `retire()` with `superseded_by`; when unsure a
review item asks "does this replace …?" and both stay. Restoring a replaced rule, and the review
kind that decides both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db.models import Q

from memory.maths import learning, textnorm
from memory.models import Engram, Event, LearningDraft, LearningSignal, ReviewItem
from memory.services.engrams import engram_revive
from memory.services.events import event_record
from memory.services.review import kind_register

ACTOR = "learning"
LIVE_REVIEW = (ReviewItem.State.PENDING, ReviewItem.State.DEFERRED)
MAX_VARIANT_CANDIDATES = 500


def variants_of(
    engram: Engram, related: Sequence[Mapping[str, Any]]
) -> tuple[list[Engram], list[Engram]]:
    """The live engrams of the same scope that `engram` replaces, and those it may replace.

    Replaced (v3): only where the slot holds one value — the same naming position, the tool for
    a named role, a number, the same practice reversed (`learning.supersession`); every older
    version is replaced, so two paraphrases of the old rule both go. May replace: the same
    variant key, the same words with another value, or cosine ≥ 0.8 with another value or the
    opposite direction (over the write path's neighbours) — both stay and a person is asked.
    """
    by_id = {str(r["id"]): float(r["cosine"]) for r in related}
    key = textnorm.variant_key(engram.statement)
    norm = textnorm.normalise(engram.statement)
    candidates = (
        Engram.objects.for_owner(engram.owner)
        .filter(scope=engram.scope, superseded_by__isnull=True)
        .exclude(pk=engram.pk)
        .exclude(status=Engram.Status.RETIRED)
        .only("id", "engram_id", "statement", "polarity", "status", "owner_id", "scope")
        .order_by("-created_at")[:MAX_VARIANT_CANDIDATES]
    )
    replaced: list[tuple[float, Engram]] = []
    asked: list[tuple[float, Engram]] = []
    for other in candidates:
        if textnorm.normalise(other.statement) == norm:
            continue
        cosine = by_id.get(other.engram_id, 0.0)
        verdict = learning.supersession(
            engram.statement,
            other.statement,
            cosine=cosine,
            new_polarity=engram.polarity,
            old_polarity=other.polarity,
            same_key=key is not None and key == textnorm.variant_key(other.statement),
        )
        if verdict == learning.REPLACE:
            replaced.append((cosine, other))
        elif verdict == learning.ASK:
            asked.append((cosine, other))
    replaced.sort(key=lambda pair: -pair[0])
    asked.sort(key=lambda pair: -pair[0])
    return [other for _, other in replaced], [other for _, other in asked]


def supersede(*, old: Engram, new: Engram, now: datetime) -> None:
    """The new version is active; the old one is retired (the model's `retire()`) with
    `superseded_by`, and a review item lets a person restore it. Open merge or contradiction
    items between the two are closed."""
    if new.status != Engram.Status.ACTIVE:
        new.activate(now=now)
    old.retire(now=now)
    old.superseded_by = new
    old.save(update_fields=["superseded_by"])
    ReviewItem.objects.filter(
        Q(engram=new, other=old) | Q(engram=old, other=new),
        kind__in=[ReviewItem.Kind.MERGE, ReviewItem.Kind.CONTRADICTION],
        state__in=LIVE_REVIEW,
    ).update(state=ReviewItem.State.DONE, decision="superseded", decided_at=now)
    ReviewItem.objects.create(
        owner=old.owner,
        kind=ReviewItem.Kind.SUPERSEDED,
        engram=old,
        other=new,
        reason=f"{new.engram_id} replaced {old.engram_id}; restore the old version if it still holds",
        created_at=now,
    )
    event_record(
        owner=old.owner,
        event=Event.ENGRAM_SUPERSEDED,
        engram=old,
        actor=ACTOR,
        data={"by": new.engram_id},
        when=now,
    )


def ask_replaces(*, old: Engram, new: Engram, now: datetime) -> None:
    """Unsure whether `new` replaces `old`: both stay active and a review item asks (`replace`
    retires the old one as a supersession would; `keep` keeps both)."""
    if ReviewItem.objects.filter(
        kind=ReviewItem.Kind.SUPERSEDED, engram=old, other=new, state__in=LIVE_REVIEW
    ).exists():
        return
    ReviewItem.objects.create(
        owner=old.owner,
        kind=ReviewItem.Kind.SUPERSEDED,
        engram=old,
        other=new,
        payload={"question": True},
        reason=(
            f'Does {new.engram_id} ("{new.statement[:120]}") replace {old.engram_id} '
            f'("{old.statement[:120]}")? Both stay active until you answer.'
        ),
        created_at=now,
    )


def superseded_apply(
    *,
    owner: Any,
    item: ReviewItem,
    action: str,
    actor: str,
    edits: Mapping[str, Any],
    now: datetime,
) -> Mapping[str, Any] | None:
    """Review of a supersession: `keep` the new version, or `restore` the old one (the newer is
    retired in its place). Of a question "does this replace …?": `replace` retires the old one
    as a supersession, `keep` keeps both."""
    old, new = item.engram, item.other
    if action == "replace" and old is not None and new is not None:
        if old.status != Engram.Status.RETIRED:
            old.retire(now=now)
            old.superseded_by = new
            old.save(update_fields=["superseded_by"])
            event_record(
                owner=owner,
                event=Event.ENGRAM_SUPERSEDED,
                engram=old,
                actor=actor,
                data={"by": new.engram_id},
                when=now,
            )
        return {"replaced": old.engram_id}
    if action != "restore" or old is None:
        return {"kept": new.engram_id if new else ""}
    # The newer one goes first: it may say what the old one says (the live-hash constraint).
    retired = new if new is not None and new.retire(now=now) is not None else None
    engram_restore(owner=owner, engram=old, actor=actor, now=now)
    if retired is not None:
        event_record(
            owner=owner,
            event=Event.ENGRAM_RETIRED,
            engram=retired,
            actor=actor,
            data={"reason": f"{old.engram_id} restored"},
            when=now,
        )
    return {"restored": old.engram_id}


def review_kinds_register() -> None:
    """Called from MemoryConfig.ready(): every process knows how to decide a superseded item."""
    kind_register(
        ReviewItem.Kind.SUPERSEDED,
        actions=("defer", "keep", "restore", "replace"),
        apply=superseded_apply,
    )


def engram_restore(*, owner: Any, engram: Engram, actor: str, now: datetime) -> Engram:
    """Bring a superseded (or undone) engram back: active, no longer superseded."""
    engram_revive(engram, now=now)
    engram.superseded_by = None
    engram.save(update_fields=["superseded_by"])
    event_record(owner=owner, event=Event.ENGRAM_RESTORED, engram=engram, actor=actor, when=now)
    return engram


# --- "forget that rule" ----------------------------------------------------------------------

JUST_SAID_SECONDS = 15 * 60  # a bare "never mind (that)" reaches back to a rule this recent


def _forget_targets(signal: LearningSignal, topic: str) -> list[Engram]:
    """The live rules a forget request names: the last rule the session captured ("forget that
    rule"), the rules of the session's previous signal if just stated ("never mind that"), or
    the captured or user-stated rules of the scope (and global) whose words hold the topic."""
    drafts = (
        LearningDraft.objects.filter(session_id=signal.session_id, engram__isnull=False)
        .exclude(engram__status=Engram.Status.RETIRED)
        .select_related("engram", "signal")
        .order_by("-created_at", "-pk")
    )
    if topic == learning.FORGET_LAST:
        last = drafts.exclude(tier=learning.TIER_INFERRED, signal__kind="error_fix").first()
        return [last.engram] if last and last.engram else []
    if topic == learning.FORGET_JUST_SAID:
        if signal.kind != LearningSignal.Kind.PROMPT:
            return []  # read later from a transcript, "never mind that" is too vague to act on
        previous = (
            LearningSignal.objects.filter(session_id=signal.session_id, pk__lt=signal.pk)
            .order_by("-pk")
            .first()
        )
        if previous is None or previous.kind != LearningSignal.Kind.PROMPT:
            return []
        if (signal.created_at - previous.created_at).total_seconds() > JUST_SAID_SECONDS:
            return []
        return [d.engram for d in drafts.filter(signal=previous) if d.engram is not None]
    rules = (
        Engram.objects.for_owner(signal.owner)
        .live()
        .filter(scope__in={signal.scope, "global"}, superseded_by__isnull=True)
        .filter(Q(source="user") | Q(drafts__isnull=False))
        .distinct()
        .order_by("-created_at")[:MAX_VARIANT_CANDIDATES]
    )
    return [rule for rule in rules if learning.names_rule(topic, rule.statement)]


def rule_forget(
    *, signal: LearningSignal, now: datetime, entry: learning.Entry | None = None
) -> LearningDraft:
    """ "forget that rule" / "never mind that" / "forget the rule about X": retire the one rule
    it names (the model's `retire()`, event `engram_retired` with the quote) and leave a review
    item to restore it (the undo). Naming none, or several, retires nothing and says why."""
    text = entry.text if entry is not None else signal.text
    topic = learning.forget_request(text) or learning.FORGET_LAST
    targets = _forget_targets(signal, topic)
    row = LearningDraft(
        owner=signal.owner,
        signal=signal,
        session_id=signal.session_id,
        statement=f"Forget: {topic}"[:4000],
        tier=learning.TIER_EXPLICIT,
        quote=text[: learning.MAX_QUOTE_CHARS],
        entry_uuid=entry.uuid if entry is not None else "",
        entry_line=max(entry.line, 0) if entry is not None else 0,
        producer="heuristic",
        created_at=now,
    )
    if len(targets) != 1:
        row.result = "rejected"
        row.error = "forget: names no live rule" if not targets else (
            f"forget: names {len(targets)} rules ({', '.join(t.engram_id for t in targets[:5])})"
        )[:300]  # fmt: skip
        row.save()
        return row
    (rule,) = targets
    rule.retire(now=now)
    row.engram, row.result, row.statement = rule, "forgotten", f"Forget: {rule.statement}"[:4000]
    row.save()
    event_record(
        owner=signal.owner,
        event=Event.ENGRAM_RETIRED,
        engram=rule,
        actor=ACTOR,
        data={"reason": "forget", "quote": row.quote},
        when=now,
    )
    ReviewItem.objects.create(
        owner=signal.owner,
        kind=ReviewItem.Kind.SUPERSEDED,
        engram=rule,
        payload={"forgotten": True},
        reason=f'You asked to forget {rule.engram_id} ("{rule.statement[:120]}"); '
        "restore it if that was a mistake",
        created_at=now,
    )
    return row
