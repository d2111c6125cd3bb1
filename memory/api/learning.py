"""REST for session learning: the captured signals and drafts, the review-all setting, undo."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet
from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import Field

from memory.access import actor_of, engram_for, session_for
from memory.api.auth import TokenAuth, token_of
from memory.api.schemas import ErrorOut
from memory.models import ApiToken, LearningDraft, LearningSignal
from memory.services import learning

router = Router(auth=TokenAuth(), tags=["learning"])
MAX_LIMIT = 200


class SignalOut(Schema):
    id: int
    kind: str
    label: str
    session_id: str | None
    scope: str
    text: str
    redacted: list[str]
    state: str
    producer: str
    offset_start: int
    offset_end: int
    created_at: datetime


class DraftOut(Schema):
    id: int
    signal: int
    session_id: str | None
    engram_id: str | None
    statement: str
    tier: str
    polarity: str
    anti_pattern: str
    quote: str
    producer: str
    result: str
    supersedes: str | None
    error: str
    created_at: datetime
    undone_at: datetime | None


class LearningFilters(Schema):
    session_id: str | None = Field(None, max_length=200)
    limit: int = Field(50, ge=1, le=MAX_LIMIT)


class LearningSettingsIn(Schema):
    review_all: bool


class LearningSettingsOut(Schema):
    review_all: bool
    captured_today: int
    signals_today: int


class UndoOut(Schema):
    id: str
    status: str
    restored: list[str]


def signal_dict(signal: LearningSignal) -> dict[str, Any]:
    return {
        "id": signal.pk,
        "kind": signal.kind,
        "label": signal.label,
        "session_id": signal.session.session_id if signal.session else None,
        "scope": signal.scope,
        "text": signal.text,
        "redacted": list(signal.redacted or []),
        "state": signal.state,
        "producer": signal.producer,
        "offset_start": signal.offset_start,
        "offset_end": signal.offset_end,
        "created_at": signal.created_at,
    }


def draft_dict(draft: LearningDraft) -> dict[str, Any]:
    return {
        "id": draft.pk,
        "signal": draft.signal_id,
        "session_id": draft.session.session_id if draft.session else None,
        "engram_id": draft.engram.engram_id if draft.engram else None,
        "statement": draft.statement,
        "tier": draft.tier,
        "polarity": draft.polarity,
        "anti_pattern": draft.anti_pattern,
        "quote": draft.quote,
        "producer": draft.producer,
        "result": draft.result,
        "supersedes": draft.supersedes.engram_id if draft.supersedes else None,
        "error": draft.error,
        "created_at": draft.created_at,
        "undone_at": draft.undone_at,
    }


def scoped[Q_: QuerySet[Any]](qs: Q_, token: ApiToken, field: str = "scope") -> Q_:
    """Rows whose scope the token may read."""
    if not token.scopes or "*" in token.scopes:
        return qs
    cond = Q()
    for pattern in token.scopes:
        if pattern.endswith("*"):
            cond |= Q(**{f"{field}__startswith": pattern[:-1]})
        else:
            cond |= Q(**{field: pattern})
    return qs.filter(cond)


def signals_list(token: ApiToken, session_id: str | None, limit: int) -> list[dict[str, Any]]:
    qs = LearningSignal.objects.filter(owner=token.owner)
    if session_id:
        qs = qs.filter(session=session_for(token, session_id))
    rows = scoped(qs, token).select_related("session").order_by("-created_at", "-pk")[:limit]
    return [SignalOut(**signal_dict(s)).model_dump(mode="json") for s in rows]


def drafts_list(token: ApiToken, session_id: str | None, limit: int) -> list[dict[str, Any]]:
    qs = LearningDraft.objects.filter(owner=token.owner)
    if session_id:
        qs = qs.filter(session=session_for(token, session_id))
    rows = (
        scoped(qs, token, "signal__scope")
        .select_related("session", "engram", "supersedes")
        .order_by("-created_at", "-pk")[:limit]
    )
    return [DraftOut(**draft_dict(d)).model_dump(mode="json") for d in rows]


def lesson_undo(token: ApiToken, engram_id: str) -> dict[str, Any]:
    engram = engram_for(token, engram_id)
    restored = list(engram.supersedes.values_list("engram_id", flat=True))
    engram = learning.lesson_undo(
        owner=token.owner, engram_id=engram.engram_id, actor=actor_of(token)
    )
    return {"id": engram.engram_id, "status": engram.status, "restored": restored}


def settings_dict(owner: Any) -> dict[str, Any]:
    return {
        "review_all": learning.review_all(owner),
        "captured_today": learning.captured_today(owner=owner),
        "signals_today": learning.signals_today(owner=owner),
    }


@router.get(
    "/learning/signals",
    response={200: dict[str, list[SignalOut]], 404: ErrorOut},
    summary="Captured learning signals (prompts, transcript deltas, error → fix), newest first",
)
def signal_list(request: HttpRequest, filters: Query[LearningFilters]) -> dict[str, Any]:
    return {"items": signals_list(token_of(request), filters.session_id, filters.limit)}


@router.get(
    "/learning/drafts",
    response={200: dict[str, list[DraftOut]], 404: ErrorOut},
    summary="Lessons extracted from signals and what became of them, newest first",
)
def draft_list(request: HttpRequest, filters: Query[LearningFilters]) -> dict[str, Any]:
    return {"items": drafts_list(token_of(request), filters.session_id, filters.limit)}


@router.get("/learning/settings", response=LearningSettingsOut, summary="Session learning settings")
def settings_get(request: HttpRequest) -> dict[str, Any]:
    return settings_dict(token_of(request).owner)


@router.put(
    "/learning/settings",
    response={200: LearningSettingsOut, 422: ErrorOut},
    summary="Send every captured lesson to review (or not)",
)
def settings_put(request: HttpRequest, payload: LearningSettingsIn) -> dict[str, Any]:
    owner = token_of(request).owner
    learning.settings_update(owner=owner, review_all=payload.review_all)
    return settings_dict(owner)


@router.post(
    "/learning/lessons/{engram_id}/undo",
    response={200: UndoOut, 404: ErrorOut},
    summary="Undo a captured lesson: retire it and restore the version it superseded",
)
def lesson_undo_view(request: HttpRequest, engram_id: str) -> dict[str, Any]:
    return lesson_undo(token_of(request), engram_id)
