"""The review queue over REST: open items and decisions, with the dashboard's actions and rules."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from memory.access import actor_of
from memory.api.auth import TokenAuth, token_of
from memory.api.schemas import ErrorOut, InSchema
from memory.errors import NotFound
from memory.models import ApiToken, ReviewItem
from memory.services import review as review_services
from memory.services import review_queue as queue
from memory.services.review_queue import Origin

router = Router(auth=TokenAuth(), tags=["review"])

MAX_REVIEW_PAGE = 200
Kind = Literal[
    "candidate",
    "contradiction",
    "merge",
    "fading",
    "abstraction",
    "maintenance",
    "synthesis",
    "provisional",
    "prompt",
    "superseded",
]
# What a decision may carry besides its action (each action reads the fields it needs).
EDIT_FIELDS = (
    "statement",
    "rationale",
    "tags",
    "scope",
    "type",
    "polarity",
    "new_contraindication",
    "old_contraindication",
    "structure",
    "applies_when",
    "visibility",
)


class ReviewItemOut(Schema):
    id: int
    kind: str
    state: str
    engram_id: str | None = Field(description="The engram the item is about.")
    other_id: str | None = Field(description="The other engram of a contradiction or merge.")
    reason: str
    proposed: dict[str, Any] = Field(
        description="The proposed change: for maintenance, `change`, the new `fields` and the "
        "`before` values they replace."
    )
    evidence: dict[str, Any]
    actions: list[str] = Field(description="What `decide` accepts for this item; defer first.")
    created_at: str
    origin: dict[str, Any] | None = Field(
        None,
        description="Where the lesson came from: `where` (prompt, transcript, error_fix, "
        "dialectic, import, agent), the `quote`, and the agent's `session` when known.",
    )


class ReviewFilters(InSchema):
    kind: Kind | None = None
    limit: int = Field(50, ge=1, le=MAX_REVIEW_PAGE)


class ReviewPage(Schema):
    items: list[ReviewItemOut]
    total: int


class DecideIn(InSchema):
    action: str = Field(min_length=1, max_length=30, examples=["approve"])
    statement: str | None = Field(None, max_length=4000)
    rationale: str | None = Field(None, max_length=8000)
    tags: list[str] | None = Field(None, max_length=50)
    scope: str | None = Field(None, max_length=200)
    type: str | None = Field(None, max_length=20)
    polarity: str | None = Field(None, max_length=10)
    new_contraindication: str | None = Field(None, max_length=2000)
    old_contraindication: str | None = Field(None, max_length=2000)
    structure: str | None = Field(None, max_length=8000)
    applies_when: str | None = Field(None, max_length=8000)
    visibility: str | None = Field(None, max_length=20)


class DecideAllIn(InSchema):
    action: Literal["approve", "defer"]


class DecideAllOut(Schema):
    decided: int


def errors(*codes: int) -> dict[int, type[ErrorOut]]:
    return dict.fromkeys((401, 413, 429, *codes), ErrorOut)


def item_visible(token: ApiToken, item: ReviewItem) -> bool:
    engrams = [e for e in (item.engram, item.other) if e is not None]
    if not engrams:
        return "*" in (token.scopes or ["*"])
    return all(token.allows_scope(e.scope) for e in engrams)


def item_dict(item: ReviewItem, origin: Origin | None = None) -> dict[str, Any]:
    payload = item.payload if isinstance(item.payload, dict) else {}
    proposed = {k: v for k, v in payload.items() if k != "evidence"}
    if origin is None:
        origin = queue.origins([item]).get(item.pk)
    return {
        "id": item.pk,
        "kind": item.kind,
        "state": item.state,
        "engram_id": item.engram.engram_id if item.engram else None,
        "other_id": item.other.engram_id if item.other else None,
        "reason": item.reason,
        "proposed": proposed,
        "evidence": payload.get("evidence") or {},
        "actions": list(review_services.ACTIONS.get(item.kind, ("defer",))),
        "created_at": item.created_at.isoformat(),
        "origin": origin.as_dict() if origin else None,
    }


def open_items(token: ApiToken, kind: str | None = None) -> list[ReviewItem]:
    qs = (
        ReviewItem.objects.filter(owner=token.owner, state__in=review_services.OPEN_STATES)
        .exclude(kind=ReviewItem.Kind.CALIBRATION)  # a calibration item measures a person
        .select_related("engram", "other")
        .order_by("created_at", "pk")
    )
    if kind:
        qs = qs.filter(kind=kind)
    return [item for item in qs if item_visible(token, item)]


@router.get(
    "/review",
    response={200: ReviewPage, **errors(422)},
    summary="Open review items, oldest first",
    description="Every pending or deferred item the token's scopes cover; filter with `kind`.",
)
def review_list(request: HttpRequest, filters: Query[ReviewFilters]) -> dict[str, Any]:
    items = open_items(token_of(request), filters.kind)
    page = items[: filters.limit]
    found = queue.origins(page)
    return {"items": [item_dict(i, found.get(i.pk)) for i in page], "total": len(items)}


@router.post(
    "/review/decide-all",
    response={200: DecideAllOut, **errors(403, 422)},
    summary="Approve or defer every undecided item of today's batch that offers the action",
)
def review_decide_all(request: HttpRequest, payload: DecideAllIn) -> dict[str, Any]:
    token = token_of(request)
    if "*" not in (token.scopes or ["*"]):
        from memory.access import ScopeForbidden

        raise ScopeForbidden("*")
    done = review_services.review_decide_all(
        owner=token.owner, action=payload.action, actor=actor_of(token)
    )
    return {"decided": done}


@router.post(
    "/review/{item_id}/decide",
    response={200: ReviewItemOut, **errors(404, 409, 422)},
    summary="Decide one review item",
    description="The same actions and rules as the dashboard; an item already decided is 409.",
)
def review_decide(request: HttpRequest, item_id: int, payload: DecideIn) -> dict[str, Any]:
    token = token_of(request)
    item = (
        ReviewItem.objects.filter(owner=token.owner, pk=item_id)
        .exclude(kind=ReviewItem.Kind.CALIBRATION)
        .select_related("engram", "other")
        .first()
    )
    if item is None or not item_visible(token, item):
        raise NotFound("Review item")
    edits = {
        name: value
        for name, value in payload.model_dump(exclude_unset=True).items()
        if name in EDIT_FIELDS and value is not None
    }
    decided = review_services.review_decide(
        owner=token.owner, item=item, action=payload.action, actor=actor_of(token), edits=edits
    )
    decided.refresh_from_db()
    return item_dict(decided)


@router.post(
    "/review/{item_id}/restore",
    response={200: ReviewItemOut, **errors(404, 409)},
    summary="Put an archived candidate back in the review queue",
    description="Candidates that neither recur nor are decided within 30 days are archived by "
    "the daily job; this restores one (409 `not_archived` for any other item).",
)
def review_restore(request: HttpRequest, item_id: int) -> dict[str, Any]:
    token = token_of(request)
    item = (
        ReviewItem.objects.filter(owner=token.owner, pk=item_id)
        .exclude(kind=ReviewItem.Kind.CALIBRATION)
        .select_related("engram", "other")
        .first()
    )
    if item is None or not item_visible(token, item):
        raise NotFound("Review item")
    restored = queue.review_restore(owner=token.owner, item=item, actor=actor_of(token))
    return item_dict(restored)
