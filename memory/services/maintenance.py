"""Maintenance: turn each classified engram's effectiveness into one concrete, reviewable change.

The daily job (`engram.maintain`, or `manage.py engram_maintain`) classifies every engram of an
owner (memory.selectors.classified, the one quadrant implementation), asks
`memory.maths.effectiveness.maintenance_action` what to do, and opens at most one maintenance
review item per engram with the change and its evidence:

- Working, not updated for 90 days: a staleness review (approve = still true).
- Leech: a rewritten statement (Claude; fallback: the statement with its anti-pattern and
  trigger made explicit), or, when that changes nothing, the next enforcement level.
- Hidden Gem: added tags (Claude; fallback: the salient words of the prompts it was followed in).
- Noise: retirement.
- Mostly irrelevant (share > 0.6 over at least 5 outcomes): narrower use, as contraindications
  (Claude; fallback: the salient words of the prompts it was judged irrelevant in), which the
  prompt path then skips (`memory.maths.delivery.contraindicated`). Only deliveries a prompt's
  words chose count here: the brief carries a project's rules by scope, so a rule judged
  irrelevant in sessions it reached through the brief alone gets no narrowing proposal. It is
  judged where it applied instead: ESCALATE_MIN_DELIVERED or more outcomes there, followed in
  fewer than half, and it is proposed for a rewrite or emphasis like a leech.

Before any of these, the statement must read as a lesson (`lesson_of`, built on the capture's
`memory.maths.learning.lesson_check`); one that does not (assistant text, a question, a one-off
task) gets one proposal only: "not a lesson: retire", with the check's reason. Escalation needs
ESCALATE_MIN_DELIVERED outcomes (each one is an injection's, so from a session the engram was
delivered in) where it applied (followed, ignored or contradicted: emphasising a rule that was
mostly irrelevant where it came would add noise) and shows their evidence quotes. Retiring a rule
the user stated needs more: USER_RETIRE_MIN_OUTCOMES outcomes at effectiveness ≤
USER_RETIRE_MAX_EFFECTIVENESS, and irrelevant in at most half of them (when it applied and was
not followed, it is proposed for a rewrite or emphasis instead). A learned rule delivered in that
many sessions, never followed and irrelevant in most, is proposed for retirement
(`_never_applies`); a stated one is left alone.

A rule that rules out an action ("do not commit anything", "let me commit") which the person
then asked the agent for in two or more later sessions it was delivered in ("commit and push")
is never emphasised: it gets one proposal, retire, with those prompts as its evidence
(`memory.services.reversals`).

Idempotent: an engram with an open proposal gets no other; a rejected proposal is not made again
for 30 days unless the engram's outcome count moved by 5 or more. The same job de-escalates an
escalated engram after 3 seven-day windows at or above its pre-escalation effectiveness, and
proposes the next rung (reminder) after 3 windows all below it.
Applying a proposal is one review decision (dashboard, REST or MCP); see `proposal_apply`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from memory import selectors
from memory.errors import Conflict
from memory.maths import effectiveness, learning, textnorm
from memory.models import Engram, Event, Outcome, ReviewItem
from memory.services import llm, reversals
from memory.services.drafting import agent_prompts_prune
from memory.services.engrams import engram_retire, engram_update
from memory.services.events import event_record
from memory.services.maintenance_keywords import KEYWORD_BUCKETS, keywords, merged
from memory.services.review_queue import archive_stale

REJECTED_MEMORY_DAYS = 30
RECOUNT_OUTCOMES = 5
LLM_CHANGES = {"rewrite", "broaden", "refine_keywords"}
# Escalating needs this many outcomes, each from a session the engram was delivered in (an
# Outcome row belongs to one Injection); counters merged or imported from elsewhere do not count.
ESCALATE_MIN_DELIVERED = 5
EVIDENCE_QUOTES = 3
# A rule the user stated is retired only on three times the evidence an inferred one needs
# (Noise: ≥ 5 outcomes at effectiveness < 0.5), and only when it is almost never followed.
USER_RETIRE_MIN_OUTCOMES = 15
USER_RETIRE_MAX_EFFECTIVENESS = 0.1
# Applied in this many delivered sessions and never followed: the agent misses a rule you stated
# (emphasise it, never retire it), however often it did not apply elsewhere.
USER_MISSED_MIN_SESSIONS = 5
USER_SOURCES = selectors.USER_SOURCES
NOT_A_LESSON = "not_a_lesson"
ASKED_AGAINST = "asked_against"  # the person later asked for what it rules out
WITHDRAWN = "withdrawn"  # an open proposal a newer one replaced
RETIRING = frozenset({"retire", NOT_A_LESSON, "redundant"})  # changes that retire the engram
# lesson_check's verdict when it finds no rule marker (tests pin both readings of it).
NO_MARKER_REASON = "a one-off request or remark, not a standing rule"
# A statement that says when it applies ("after changing settings") is a standing practice.
_STANDING = re.compile(r"\b(?:before|after|when|whenever|every|each|always|never)\b", re.I)

K = ReviewItem.Kind
OPEN = (ReviewItem.State.PENDING, ReviewItem.State.DEFERRED)

REWRITE_SCHEMA = {
    "type": "object",
    "properties": {
        "statement": {"type": "string", "minLength": 8, "maxLength": 400},
        "reason": {"type": "string", "maxLength": 300},
    },
    "required": ["statement"],
}


@dataclass(frozen=True)
class Proposal:
    """One proposed change: `change` names the kind, `fields` what approving writes."""

    change: str  # staleness_review | rewrite | escalate | broaden | retire | refine_keywords
    fields: dict[str, Any]
    producer: str  # llm | heuristic
    summary: str


# --- the daily job ------------------------------------------------------------------------


def maintain_all(*, now: datetime | None = None) -> dict[str, int]:
    """The daily job for every owner with engrams: archive the candidates 30 days without
    recurrence or a decision (review_queue.archive_stale), then maintenance; the proposals
    each owner got, by username. It also forgets the agent's prompts kept for capture
    (`drafting.agent_prompts_prune`)."""
    agent_prompts_prune(now=now or timezone.now())
    owners = get_user_model().objects.filter(engram__isnull=False).distinct()
    made: dict[str, int] = {}
    for owner in owners:
        archive_stale(owner=owner, now=now)
        made[owner.get_username()] = len(maintain(owner=owner, now=now))
    return made


def maintain(*, owner: Any, now: datetime | None = None) -> list[ReviewItem]:
    """Open the maintenance proposals the owner's engrams call for now; the new items."""
    now = now or timezone.now()
    groups = selectors.classified(owner)
    engrams = Engram.objects.for_owner(owner).filter(
        pk__in=list(groups.by_pk), status=Engram.Status.ACTIVE
    )
    busy = {
        item.engram_id: item
        for item in ReviewItem.objects.filter(owner=owner, kind=K.MAINTENANCE, state__in=OPEN)
    }
    rejected = _recently_rejected(owner, now)
    made: list[ReviewItem] = []
    for engram in engrams.defer("embedding"):
        c = groups.by_pk[engram.pk]
        action: str | None = effectiveness.maintenance_action(
            c, updated_days_ago=(now - engram.updated_at).total_seconds() / 86400
        )
        # The person's later prompts ask for what it rules out: never emphasise it, ask to retire
        # (an open proposal to emphasise it is withdrawn: its evidence is older than their words).
        waiting = busy.get(engram.pk)
        if waiting is not None and waiting.payload.get("change") in RETIRING:
            continue
        asked = reversals.asked_against(engram)
        if waiting is not None and not asked:
            continue
        if action is None and _rule_inside(engram):
            # Stored before capture kept the rule itself: "create a rule that …" as it stands
            # asks the agent to write the rule again.
            action = "rule_inside"
        if action == "refine_keywords" and not _mostly_irrelevant_by_words(engram):
            # Judged irrelevant where the brief carried it, not where a prompt's words found
            # it: narrower keywords would change nothing the agent is given. One that never
            # applied in many sessions may not be a rule at all (see _never_applies); one
            # that applied in enough of them and was mostly not followed there is missed.
            brief = _delivered(engram)
            if engram.source not in USER_SOURCES and _never_applies(brief):
                action = "retire_unused"
            elif _missed_where_it_applied(brief):
                action = "rewrite_or_escalate"
            else:
                action = None
        if engram.pre_escalation_effectiveness is not None and action != "refine_keywords":
            # On the escalation ladder: judged by its windows since escalating (de-escalation
            # below, or the next rung when it stays below), not by the history before.
            action = "next_rung" if _still_below(engram, now) else None
        action = ASKED_AGAINST if asked else action
        if action is None:
            continue
        at_rejection = rejected.get(engram.pk)
        if at_rejection is not None and abs(c.outcomes - at_rejection) < RECOUNT_OUTCOMES:
            continue
        delivered = _delivered(engram)
        reason = lesson_of(engram.statement, quote=engram.rationale)
        if reason:
            proposal: Proposal | None = Proposal(
                NOT_A_LESSON,
                {"status": "retired"},
                "heuristic",
                f"Not a lesson: retire. {reason[:1].upper()}{reason[1:]}.",
            )
            action = NOT_A_LESSON
        elif asked:
            delivered = replace(delivered, quotes=asked)
            summary = reversals.asked_against_summary(asked)
            proposal = Proposal("retire", {"status": "retired"}, "heuristic", summary)
        else:
            proposal = _propose(owner, engram, action, c, delivered)
        if proposal is None:
            continue
        with transaction.atomic():  # the replaced proposal closes with the new one's opening
            if waiting is not None:
                _withdraw(waiting, now)
            made.append(_open(owner, engram, action, proposal, c, groups.median, now, delivered))
    _deescalate(owner, now)
    return made


def _withdraw(item: ReviewItem, now: datetime) -> None:
    """Close an open proposal nobody decided, because a newer one replaces it."""
    item.state, item.decision, item.decided_at = ReviewItem.State.DONE, WITHDRAWN, now
    item.payload = {**(item.payload or {}), "withdrawn_at": now.isoformat()}
    item.save(update_fields=["state", "decision", "decided_at", "payload"])


def lesson_of(statement: str, *, quote: str = "") -> str:
    """Why `statement` is not a lesson ("" when it is), by the capture's `lesson_check`.

    lesson_check reads a person's words and wants a rule's marker ("always", "from now on");
    a stored statement was cleaned of it ("use relative paths in scripts"). So when the check
    finds no marker, the lesson stands if the quote it came from passes the check, or if the
    statement names a concrete practice or the moment it applies, with no evidence against it
    (`names_practice`, `negative_evidence`). Assistant text and questions fail outright."""
    check = learning.lesson_check(statement)
    if check.ok:
        return ""
    if check.reason != NO_MARKER_REASON:
        return check.reason  # empty, assistant text, a question: never a lesson
    if quote and quote.strip() != statement.strip() and learning.lesson_check(quote).ok:
        return ""
    if learning.negative_evidence(statement):
        return check.reason
    if learning.names_practice(statement) or _STANDING.search(statement):
        return ""
    return check.reason


@dataclass(frozen=True)
class Delivered:
    """Outcomes of sessions the engram was delivered in: how many, and the latest evidence."""

    outcomes: int
    followed: int
    quotes: tuple[dict[str, str], ...]
    irrelevant: int = 0
    contradicted: int = 0

    @property
    def effectiveness(self) -> float | None:
        return self.followed / self.outcomes if self.outcomes else None

    @property
    def relevant(self) -> int:
        """Outcomes where it applied: followed, ignored or contradicted."""
        return self.outcomes - self.irrelevant


def _never_applies(delivered: Delivered) -> bool:
    """Delivered in USER_RETIRE_MIN_OUTCOMES sessions or more, never followed, and judged
    irrelevant in most: a learned rule this work does not need. Never a reason to retire a rule
    the user stated: on real sessions (bench/maintenance_real.py) such rules were real ones with
    no occasion yet (a spelling style, "we only do patch releases"), since an outcome's
    "irrelevant" only says no tool input or prompt touched the rule's words."""
    return (
        delivered.outcomes >= USER_RETIRE_MIN_OUTCOMES
        and delivered.followed == 0
        and delivered.irrelevant > effectiveness.IRRELEVANT_SHARE_ABOVE * delivered.outcomes
    )


def _missed_where_it_applied(delivered: Delivered) -> bool:
    """At least ESCALATE_MIN_DELIVERED outcomes where it applied (followed, ignored or
    contradicted), followed in fewer than half of them: the brief carries it into sessions
    where it mostly has no occasion, and where it had one the agent missed it."""
    return (
        delivered.relevant >= ESCALATE_MIN_DELIVERED
        and delivered.followed < effectiveness.HIGH_EFFECTIVENESS * delivered.relevant
    )


def _delivered(engram: Engram) -> Delivered:
    rows = Outcome.objects.filter(engram=engram)
    total, followed, irrelevant, contradicted = _counts(rows)
    quotes = tuple(
        {"session": session, "result": result, "evidence": evidence[:300]}
        for session, result, evidence in rows.exclude(evidence="")
        .order_by("-created_at", "-pk")
        .values_list("injection__session__session_id", "result", "evidence")[:EVIDENCE_QUOTES]
    )
    return Delivered(total, followed, quotes, irrelevant, contradicted)


def _mostly_irrelevant_by_words(engram: Engram) -> bool:
    """At least MIN_OUTCOMES outcomes of deliveries a prompt's words chose, and more than
    IRRELEVANT_SHARE_ABOVE of them irrelevant (the refine-keywords rule on those alone)."""
    total, _, irrelevant, _ = _counts(
        Outcome.objects.filter(engram=engram, injection__bucket__in=KEYWORD_BUCKETS)
    )
    if total < effectiveness.MIN_OUTCOMES:
        return False
    return irrelevant / total > effectiveness.IRRELEVANT_SHARE_ABOVE


def _counts(rows: Any) -> tuple[int, int, int, int]:
    """(outcomes, followed, irrelevant, contradicted) of an Outcome queryset, in one query."""
    found = rows.aggregate(
        total=Count("pk"),
        followed=Count("pk", filter=Q(result=Outcome.Result.FOLLOWED)),
        irrelevant=Count("pk", filter=Q(result=Outcome.Result.IRRELEVANT)),
        contradicted=Count("pk", filter=Q(result=Outcome.Result.CONTRADICTED)),
    )
    return (
        int(found["total"]),
        int(found["followed"]),
        int(found["irrelevant"]),
        int(found["contradicted"]),
    )


def _still_below(engram: Engram, now: datetime) -> bool:
    """Escalated, and the last 3 windows since then all below the pre-escalation value."""
    since = _escalated_at(engram)
    if since is None or engram.pre_escalation_effectiveness is None:
        return False
    windows = window_effectiveness(engram, since, now)
    return effectiveness.should_escalate_further(
        windows, float(engram.pre_escalation_effectiveness)
    )


def _escalated_at(engram: Engram) -> datetime | None:
    return (
        engram.events.filter(event=Event.ENGRAM_ESCALATED)
        .order_by("-created_at")
        .values_list("created_at", flat=True)
        .first()
    )


def _recently_rejected(owner: Any, now: datetime) -> dict[int, int]:
    """Engram pk -> its outcome count when a person last decided a proposal for it (30 days).

    A rejected proposal is not made again, and an applied one not followed by another, until
    the counts move by RECOUNT_OUTCOMES or the 30 days pass."""
    since = now - timedelta(days=REJECTED_MEMORY_DAYS)
    found: dict[int, int] = {}
    for engram_id, payload in (
        ReviewItem.objects.filter(
            owner=owner,
            kind=K.MAINTENANCE,
            decision__in=("reject", "approve"),
            decided_at__gte=since,
        )
        .order_by("decided_at")
        .values_list("engram_id", "payload")
    ):
        evidence = payload.get("evidence", {}) if isinstance(payload, dict) else {}
        found[engram_id] = int(evidence.get("outcomes", 0))
    return found


def _open(
    owner: Any,
    engram: Engram,
    action: str,
    proposal: Proposal,
    c: effectiveness.Classification,
    median: float | None,
    now: datetime,
    delivered: Delivered,
) -> ReviewItem:
    evidence = {
        "quadrant": c.quadrant,
        "effectiveness": None if c.effectiveness is None else round(c.effectiveness, 4),
        "outcomes": c.outcomes,
        "surfaced": engram.surfaced,
        "surfaced_median": median,
        "followed": engram.followed,
        "contradicted": engram.contradicted,
        "ignored": engram.ignored,
        "irrelevant": engram.irrelevant,
        "irrelevant_share": None if c.irrelevant_share is None else round(c.irrelevant_share, 4),
        "sessions": _example_sessions(engram),
        "delivered_outcomes": delivered.outcomes,
        "quotes": list(delivered.quotes),
        "stated_by": "you" if engram.source in USER_SOURCES else "learned",
    }
    before = {name: _jsonable(getattr(engram, name)) for name in proposal.fields}
    with transaction.atomic():
        item = ReviewItem.objects.create(
            owner=owner,
            kind=K.MAINTENANCE,
            engram=engram,
            payload={
                "action": action,
                "change": proposal.change,
                "fields": proposal.fields,
                "before": before,
                "producer": proposal.producer,
                "evidence": evidence,
            },
            reason=proposal.summary,
            created_at=now,
        )
        event_record(
            owner=owner,
            event=Event.MAINTENANCE_PROPOSED,
            engram=engram,
            actor="maintenance",
            data={"item": item.pk, "change": proposal.change, "producer": proposal.producer},
            when=now,
        )
    return item


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, list | tuple) else value


def _example_sessions(engram: Engram, limit: int = 3) -> list[str]:
    return list(
        Outcome.objects.filter(engram=engram)
        .order_by("-created_at")
        .values_list("injection__session__session_id", flat=True)[:limit]
    )


# --- what to propose ------------------------------------------------------------------------


def _escalation(engram: Engram, delivered: Delivered, why: str) -> Proposal | None:
    level = effectiveness.next_level(engram.enforcement)  # type: ignore[arg-type]
    if level is None or delivered.relevant < ESCALATE_MIN_DELIVERED:
        # At the top, or too little evidence from sessions it was delivered in and applied to:
        # emphasising a rule that was mostly irrelevant where it came would only add noise.
        return None
    return Proposal("escalate", {"enforcement": level}, "heuristic", f"{why} escalate to {level}.")


def _propose(
    owner: Any,
    engram: Engram,
    action: str,
    c: effectiveness.Classification,
    delivered: Delivered,
) -> Proposal | None:
    if action == "next_rung":
        return _escalation(
            engram,
            delivered,
            "Still below its effectiveness before escalating, 3 weeks running:",
        )
    if action == "rule_inside":
        return Proposal(
            "rewrite",
            {"statement": _rule_inside(engram)},
            "heuristic",
            "Stored as a request to record a rule: keep the rule it states.",
        )
    if action == "staleness_review":
        return Proposal(
            "staleness_review",
            {},
            "heuristic",
            "Working well, but unchanged for 90 days: is it still true?",
        )
    if action == "retire":
        if engram.source in USER_SOURCES:
            share = delivered.effectiveness
            if (
                delivered.outcomes < USER_RETIRE_MIN_OUTCOMES
                or share is None
                or share > USER_RETIRE_MAX_EFFECTIVENESS
            ):
                return None  # you said it: rarely surfacing is not enough to drop it
            missed = (
                delivered.followed == 0
                and delivered.relevant >= USER_MISSED_MIN_SESSIONS
                and not learning.hedged(engram.statement)
            )
            if delivered.irrelevant * 2 <= delivered.outcomes or missed:
                # It applied in half its sessions or more and was (almost) never followed, or
                # applied in several and was never followed: the agent misses a rule you stated.
                # Retiring it would act against what you said; say it so it cannot be missed
                # instead. (A hedged line, "I'm most interested in …", is no such rule.)
                return _propose(owner, engram, "rewrite_or_escalate", c, delivered)
            return Proposal(
                "retire",
                {"status": "retired"},
                "heuristic",
                # "You stated this rule" would claim too much of a line stored from the
                # person's words that may never have been meant as one (a product vision).
                f"Stored from your words as a rule, but it was followed in "
                f"{delivered.followed} of the {delivered.outcomes} sessions it was delivered in "
                f"and did not apply in {delivered.irrelevant} of them.",
            )
        return Proposal(
            "retire", {"status": "retired"}, "heuristic", "Rarely surfaced and rarely followed."
        )
    inferred = engram.source not in USER_SOURCES
    if action == "retire_unused" or (
        action == "rewrite_or_escalate" and inferred and _never_applies(delivered)
    ):
        return Proposal(
            "retire",
            {"status": "retired"},
            "heuristic",
            f"Learned, never followed in the {delivered.outcomes} sessions it was delivered in, "
            f"and it did not apply in {delivered.irrelevant} of them.",
        )
    if (
        action == "rewrite_or_escalate"
        and not inferred
        and _never_applies(delivered)
        and not _missed_where_it_applied(delivered)
    ):
        # A rule you stated that had no occasion to apply (a style, a release rule) is not
        # wrong for it: the outcomes say nothing to change.
        return None
    if action == "rewrite_or_escalate":
        # The counts behind it, whichever rule found it: a person decides on evidence.
        why = (
            f"Delivered in {delivered.outcomes} sessions, it applied in {delivered.relevant} "
            f"and was followed in {delivered.followed} of them:"
        )
        if engram.polarity == "dont":
            # Keeping a prohibition leaves nothing in the tool calls to see: "not followed"
            # would claim a miss the outcomes do not show. Say how often it was broken.
            why = (
                f"Delivered in {delivered.outcomes} sessions, it applied in "
                f"{delivered.relevant} and was broken in {delivered.contradicted} of them (a "
                f"rule against an action leaves no trace when kept):"
            )
        rewritten, producer = _rewrite(owner, engram)
        if rewritten and textnorm.content_hash(rewritten) != engram.content_hash:
            return Proposal(
                "rewrite",
                {"statement": rewritten},
                producer,
                f"{why} say it so it cannot be missed.",
            )
        return _escalation(engram, delivered, why)
    if action == "broaden":
        words, producer = keywords(owner, engram, result="followed", task="broaden")
        tags = merged(engram.tags, words)
        if tags == list(engram.tags or []):
            return None
        return Proposal(
            "broaden",
            {"tags": tags},
            producer,
            "Followed when it surfaces, but it rarely does: more ways to find it.",
        )
    if action == "refine_keywords":
        words, producer = keywords(owner, engram, result="irrelevant", task="refine")
        if not words:
            return None
        note = "not for: " + ", ".join(words)
        current = list(engram.contraindications or [])
        if note in current:
            return None
        return Proposal(
            "refine_keywords",
            {"contraindications": [*current, note]},
            producer,
            "Mostly judged irrelevant where it surfaces: narrow where it applies.",
        )
    return None


def _rule_inside(engram: Engram) -> str:
    """The rule a stored request to record one carries ("" when it is no such request)."""
    inside = learning.rule_inside(engram.statement)
    if inside == engram.statement or textnorm.content_hash(inside) == engram.content_hash:
        return ""
    return inside


def rewrite_fallback(statement: str, anti_pattern: str, trigger_context: str) -> str:
    """The statement with its anti-pattern and trigger made explicit (no LLM). A request to
    record a rule ("create a skill that makes sure, whenever docs change, …") becomes the rule
    it carries: emphasised as it stands, it would ask the agent to write the rule again."""
    text = learning.rule_inside(statement.strip()).rstrip(".")
    parts = [text]
    if anti_pattern and anti_pattern.lower() not in text.lower():
        parts.append(f"never {anti_pattern.strip().rstrip('.')}")
    trigger = " or ".join(t.strip() for t in re.split(r"[,|\n]+", trigger_context) if t.strip())
    if trigger and trigger.lower() not in text.lower():
        parts.insert(0, f"When {trigger}:")
        return f"{parts[0]} {'; '.join(parts[1:])}."
    return "; ".join(parts) + "."


def _rewrite(owner: Any, engram: Engram) -> tuple[str, str]:
    anti = engram.extra.get("anti_pattern", "") if isinstance(engram.extra, dict) else ""
    anti = anti if isinstance(anti, str) else ""
    try:
        answer = llm.llm_run(
            owner=owner,
            task="maintenance.rewrite",
            schema=REWRITE_SCHEMA,
            instructions=(
                "This rule for a coding agent is often shown to the agent but rarely followed. "
                "Rewrite it as one short imperative sentence that states the trigger, the action "
                "and what not to do, keeping its meaning. Reply with the new statement."
            ),
            data=f"Rule: {engram.statement}\nAnti-pattern: {anti}\nWhen: {engram.trigger_context}",
        )
        return str(answer["statement"]).strip(), llm.PRODUCER_LLM
    except llm.LlmUnavailable:
        fallback = rewrite_fallback(engram.statement, anti, engram.trigger_context)
        return fallback, llm.PRODUCER_HEURISTIC


def proposal_apply(
    *,
    owner: Any,
    item: ReviewItem,
    action: str,
    actor: str,
    edits: Mapping[str, Any],
    now: datetime,
) -> dict[str, Any]:
    """Decide a maintenance item (inside the review decision's transaction).

    approve: write the proposed change (an edited statement or tags may replace it); a rewrite
    keeps the old text in the engram's history (event `engram_updated` with both). reject: keep
    the engram as it is; the proposal is not made again for 30 days unless its counts move.
    retire: retire the engram whatever was proposed.
    """
    engram = item.engram
    payload = item.payload if isinstance(item.payload, dict) else {}
    change = str(payload.get("change", ""))
    if engram is None:
        return {"change": change}
    engram.refresh_from_db()
    if action == "retire":
        engram_retire(owner=owner, engram=engram, actor=actor, reason="maintenance")
        return {"change": change, "applied": "retire"}
    if action != "approve":
        return {"change": change}
    if engram.status == Engram.Status.RETIRED:
        raise Conflict(
            f"{engram.engram_id} is retired; the proposal no longer applies.", code="engram_retired"
        )
    fields = dict(payload.get("fields") or {})
    for name in ("statement", "tags"):
        if name in edits and name in fields:
            fields[name] = edits[name]
    if change == "retire":
        asked = payload.get("action") == ASKED_AGAINST
        why = "you later asked for what it rules out" if asked else "noise: rarely followed"
        engram_retire(owner=owner, engram=engram, actor=actor, reason=why)
    elif change == NOT_A_LESSON:
        engram_retire(owner=owner, engram=engram, actor=actor, reason="not a lesson")
    elif change == "redundant":
        engram_retire(owner=owner, engram=engram, actor=actor, reason="the project's rules say it")
    elif change == "staleness_review":
        Engram.objects.filter(pk=engram.pk).update(updated_at=now)
    elif change == "escalate":
        level = str(fields["enforcement"])
        before = engram.enforcement
        if engram.pre_escalation_effectiveness is None:
            # The next rung keeps the first rung's baseline: "still below" means below that.
            engram.pre_escalation_effectiveness = effectiveness.effectiveness(
                engram.followed, engram.contradicted, engram.ignored, engram.irrelevant
            )
            engram.save(update_fields=["pre_escalation_effectiveness"])
        engram_update(owner=owner, engram=engram, changes={"enforcement": level}, actor=actor)
        event_record(
            owner=owner,
            event=Event.ENGRAM_ESCALATED,
            engram=engram,
            actor=actor,
            data={
                "from": before,
                "to": level,
                "effectiveness": engram.pre_escalation_effectiveness,
            },
            when=now,
        )
    else:
        engram_update(owner=owner, engram=engram, changes=fields, actor=actor)
    return {"change": change, "applied": fields or change}


def review_kinds_register() -> None:
    """From MemoryConfig.ready(): maintenance items are decided here."""
    from memory.services.review import kind_register

    kind_register(
        K.MAINTENANCE, actions=("defer", "approve", "reject", "retire"), apply=proposal_apply
    )


# --- de-escalation --------------------------------------------------------------------------


def window_effectiveness(engram: Engram, since: datetime, now: datetime) -> list[float]:
    """Effectiveness in each complete 7-day window since `since` with an outcome, oldest first."""
    return [value for _, value in selectors.effectiveness_windows(engram, since=since, now=now)]


def _deescalate(owner: Any, now: datetime) -> int:
    done = 0
    escalated = Engram.objects.for_owner(owner).filter(
        ~Q(enforcement=Engram.Enforcement.ADVISORY),
        pre_escalation_effectiveness__isnull=False,
        status=Engram.Status.ACTIVE,
    )
    for engram in escalated.defer("embedding"):
        since = _escalated_at(engram)
        if since is None:
            continue
        windows = window_effectiveness(engram, since, now)
        pre = float(engram.pre_escalation_effectiveness or 0.0)
        if not effectiveness.should_deescalate(windows, pre):
            continue
        level = effectiveness.previous_level(engram.enforcement)  # type: ignore[arg-type]
        if level is None:
            continue
        with transaction.atomic():
            before = engram.enforcement
            engram.enforcement = level
            engram.pre_escalation_effectiveness = None if level == "advisory" else pre
            engram.updated_at = now
            engram.save(update_fields=["enforcement", "pre_escalation_effectiveness", "updated_at"])
            event_record(
                owner=owner,
                event=Event.ENGRAM_DEESCALATED,
                engram=engram,
                actor="maintenance",
                data={
                    "from": before,
                    "to": level,
                    "windows": [round(w, 4) for w in windows[-3:]],
                    "pre_escalation": pre,
                },
                when=now,
            )
        done += 1
    return done
