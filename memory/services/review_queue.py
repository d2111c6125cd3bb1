"""A review queue a person can finish: where each item came from, one-click answers that are
remembered, and the 30-day archive of candidates nobody looked at (issue #26 item 5).

- `origins`: for each item, the quote it came from and where (a prompt, a transcript, an
  error → fix pair, the dialectic), with the session when known. Reads in a fixed number of
  queries whatever the batch size.
- `answer_remember` / `text_answered`: a candidate answered "it was a one-off" or "wrong" is
  retired and its text remembered (AnsweredText, by content hash); capture asks
  `text_answered` before it writes a draft, so the same text is not captured again.
- `archive_stale`: candidates that neither recurred nor were decided within ARCHIVE_AFTER_DAYS
  leave the queue (the item is closed with decision "archived", the engram stays a candidate,
  nothing is deleted); `review_restore` puts one back. Idempotent: an archived item is closed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory.errors import Conflict
from memory.maths import textnorm
from memory.models import (
    AnsweredText,
    Engram,
    Event,
    LearningDraft,
    LearningSignal,
    LifecycleEvent,
    ReviewItem,
)
from memory.services.events import event_record, events_record

ARCHIVE_AFTER_DAYS = 30
ARCHIVED = "archived"
ANSWERS = ("one_off", "wrong")
OPEN_STATES = (ReviewItem.State.PENDING, ReviewItem.State.DEFERRED)
K = ReviewItem.Kind

WHERE_LABELS = {
    "prompt": "your prompt",
    "transcript": "the session transcript",
    "error_fix": "an error → fix in a session",
    "dialectic": "repeated behaviour (dialectic)",
    "import": "an import",
    "agent": "an agent",
}


# --- where an item came from ----------------------------------------------------------------


@dataclass(frozen=True)
class Origin:
    """Where a review item's lesson came from; `quote` is empty when it says nothing more."""

    where: str  # prompt | transcript | error_fix | dialectic | import | agent
    quote: str = ""
    session_id: str = ""  # the agent's session id
    session_pk: int | None = None  # for the link to the session page

    @property
    def label(self) -> str:
        return WHERE_LABELS.get(self.where, self.where)

    def as_dict(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "quote": self.quote,
            "session": self.session_id,
            "session_pk": self.session_pk,
        }


def _learning_of(engram: Engram | None) -> dict[str, Any]:
    extra = engram.extra if engram is not None and isinstance(engram.extra, dict) else {}
    found = extra.get("learning")
    return found if isinstance(found, dict) else {}


def origins(items: Iterable[ReviewItem]) -> dict[int, Origin]:
    """Item pk -> where its lesson came from; 2 queries for any number of items."""
    items = list(items)
    signal_pks = {
        int(pk) for item in items if isinstance(pk := _learning_of(item.engram).get("signal"), int)
    }
    signals = {
        s.pk: s
        for s in LearningSignal.objects.filter(pk__in=signal_pks)
        .select_related("session")
        .only("pk", "kind", "session__id", "session__session_id")
    }
    engram_pks = {item.engram_id for item in items if item.engram_id is not None}
    quotes: dict[int, str] = {}
    for engram_pk, quote in (
        LearningDraft.objects.filter(engram_id__in=engram_pks)
        .exclude(quote="")
        .order_by("created_at", "pk")
        .values_list("engram_id", "quote")
    ):
        quotes.setdefault(engram_pk, quote)
    found: dict[int, Origin] = {}
    for item in items:
        engram = item.engram
        if item.kind == K.SYNTHESIS:
            found[item.pk] = Origin("dialectic", quote=item.reason)
            continue
        if engram is None:
            continue
        signal = signals.get(_learning_of(engram).get("signal"))  # type: ignore[arg-type]
        quote = quotes.get(engram.pk) or engram.rationale
        if quote.strip().rstrip(".").lower() == engram.statement.strip().rstrip(".").lower():
            quote = ""  # the same text twice says nothing
        if signal is not None:
            session = signal.session
            found[item.pk] = Origin(
                str(signal.kind),
                quote=quote,
                session_id=session.session_id if session else "",
                session_pk=session.pk if session else None,
            )
        elif item.kind == K.PROVISIONAL or (engram.provenance or {}).get("origin") == "import":
            found[item.pk] = Origin("import", quote=quote)
        else:
            found[item.pk] = Origin("agent", quote=quote)
    return found


# --- one-off and wrong, remembered ----------------------------------------------------------


def answer_remember(*, owner: Any, engram: Engram, answer: str, now: datetime) -> None:
    """Remember that `engram`'s text was answered one-off or wrong (the first answer stays)."""
    AnsweredText.objects.get_or_create(
        owner=owner,
        content_hash=engram.content_hash or textnorm.content_hash(engram.statement),
        defaults={"answer": answer, "statement": engram.statement[:2000], "created_at": now},
    )


def text_answered(*, owner: Any, statement: str) -> str:
    """The answer ("one_off" or "wrong") a person gave this text in review, or "" (1 query).

    Capture calls it before writing a draft: text answered once is not captured again."""
    if not isinstance(statement, str) or not statement.strip():
        return ""
    return (
        AnsweredText.objects.filter(owner=owner, content_hash=textnorm.content_hash(statement))
        .values_list("answer", flat=True)
        .first()
        or ""
    )


# --- the 30-day archive ---------------------------------------------------------------------


def _clock(item: ReviewItem) -> datetime:
    """When the item's 30 days started: its creation, or its last restore."""
    restored = (item.payload or {}).get("restored_at")
    if isinstance(restored, str):
        try:
            return max(item.created_at, datetime.fromisoformat(restored))
        except ValueError:
            pass
    return item.created_at


def archive_stale(*, owner: Any, now: datetime | None = None) -> int:
    """Archive the owner's candidates that neither recurred nor were decided in 30 days.

    A candidate item still open (pending or deferred: a deferral is not a decision) whose
    engram is still a candidate, created (or restored) more than 30 days ago, and whose engram
    had no recurrence in those 30 days. Returns how many were archived; a second run finds none.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(days=ARCHIVE_AFTER_DAYS)
    stale = [
        item
        for item in ReviewItem.objects.filter(
            owner=owner,
            kind=K.CANDIDATE,
            state__in=OPEN_STATES,
            created_at__lt=cutoff,
            engram__status=Engram.Status.CANDIDATE,
        ).select_related("engram")
        if _clock(item) < cutoff
    ]
    if not stale:
        return 0
    recurred = set(
        LifecycleEvent.objects.filter(
            owner=owner,
            event=Event.RECURRENCE_DETECTED,
            engram_id__in=[i.engram_id for i in stale],
            created_at__gte=cutoff,
        ).values_list("engram_id", flat=True)
    )
    archived = [i for i in stale if i.engram_id not in recurred]
    with transaction.atomic():
        for item in archived:
            item.payload = {**(item.payload or {}), "archived_at": now.isoformat()}
            item.state = ReviewItem.State.DONE
            item.decision = ARCHIVED
            item.decided_at = now
            item.deferred_until = None
        ReviewItem.objects.bulk_update(
            archived, ["payload", "state", "decision", "decided_at", "deferred_until"]
        )
        events_record(
            owner,
            [
                (Event.REVIEW_ARCHIVED, i.engram, {"item": i.pk, "days": ARCHIVE_AFTER_DAYS})
                for i in archived
            ],
            actor="archive",
            when=now,
        )
    return len(archived)


def archived_items(*, owner: Any) -> Any:
    """The owner's archived candidates, newest archive first (a QuerySet)."""
    return (
        ReviewItem.objects.filter(owner=owner, decision=ARCHIVED, state=ReviewItem.State.DONE)
        .select_related("engram")
        .order_by("-decided_at", "-pk")
    )


def review_restore(
    *, owner: Any, item: ReviewItem, actor: str, now: datetime | None = None
) -> ReviewItem:
    """Put an archived candidate back in the queue; its 30 days start again.

    Raises Conflict (409, `not_archived`) for an item that is not archived, or whose engram
    was meanwhile activated or retired (the queue has nothing left to ask about it)."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = ReviewItem.objects.select_for_update().get(pk=item.pk, owner=owner)
        if locked.decision != ARCHIVED or locked.state != ReviewItem.State.DONE:
            raise Conflict("This item is not archived.", code="not_archived")
        engram = locked.engram
        if engram is None or engram.status != Engram.Status.CANDIDATE:
            raise Conflict(
                "Its lesson is no longer a candidate; nothing to review.", code="not_archived"
            )
        payload = {k: v for k, v in (locked.payload or {}).items() if k != "archived_at"}
        payload["restored_at"] = now.isoformat()
        # Out of any day's batch: it is drawn again like any open item.
        payload.pop("batch_day", None)
        locked.payload = payload
        locked.state = ReviewItem.State.PENDING
        locked.decision = ""
        locked.decided_at = None
        locked.decided_by = None
        locked.save(update_fields=["payload", "state", "decision", "decided_at", "decided_by"])
        event_record(
            owner=owner,
            event=Event.REVIEW_RESTORED,
            engram=engram,
            actor=actor,
            data={"item": locked.pk},
            when=now,
        )
    return locked
