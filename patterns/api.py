"""REST API v1 for success patterns, mounted at /api/v1/patterns; thin calls to services.

Nothing here calls Claude. Evaluate and compose answer at once on their deterministic paths
(the rubric, the nearest patterns) and with 202 and a `poll` URL when an LLM task was queued.
The same dict builders serve the MCP tools (patterns.integrations.mcp).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from django.http import HttpRequest
from django.utils import timezone
from ninja import Router, Status

from memory.access import actor_of, require_scope
from memory.api.auth import TokenAuth, token_of
from memory.api.schemas import ErrorOut
from memory.models import ApiToken
from patterns.models import Composition, EvalRecord, SuccessPattern
from patterns.schemas import (
    ComposeIn,
    CompositionOut,
    EvaluateIn,
    EvaluationOut,
    FeedbackOut,
    LearnOut,
    PatternIn,
    PatternOut,
    PromoteOut,
    RecallIn,
    RecallOut,
    RefineIn,
    RefineOut,
    ReusedOut,
    SettingsIn,
    SettingsOut,
)
from patterns.services import compose, evaluation, feedback, promotion, store
from patterns.services import settings as pattern_settings

router = Router(auth=TokenAuth(), tags=["patterns"])
API_PREFIX = "/api/v1/patterns"


def errors(*codes: int) -> dict[int, type[ErrorOut]]:
    return dict.fromkeys((401, 403, 413, 429, *codes), ErrorOut)


# --- dict builders (REST and MCP) -----------------------------------------------------------


def pattern_dict(pattern: SuccessPattern, evals: store.Evals | None = None) -> dict[str, Any]:
    if evals is None:
        multiplier, scores = store.quality_of(pattern)
    else:
        multiplier, scores = evals.multiplier, evals.scores
    return {
        "key": pattern.key,
        "task": pattern.task,
        "design": pattern.design,
        "code": pattern.code,
        "output": pattern.output,
        "inputs": list(pattern.inputs),
        "outputs": list(pattern.outputs),
        "scope": pattern.scope,
        "status": pattern.status,
        "success_score": round(pattern.current_score(timezone.now()), 6),
        "reuse_count": pattern.reuse_count,
        "quality_multiplier": multiplier,
        "eval_scores": scores[-store.maths.MULTIPLIER_WINDOW :],
        "engram_id": pattern.engram_id,
        "created_at": pattern.created_at,
        "updated_at": pattern.updated_at,
        "last_used_at": pattern.last_used_at,
    }


def recalled_dict(item: store.Recalled, now: Any) -> dict[str, Any]:
    pattern = item.pattern
    return {
        "key": pattern.key,
        "task": pattern.task,
        "design": pattern.design,
        "code": pattern.code,
        "output": pattern.output,
        "similarity": round(item.similarity, 6),
        "quality_multiplier": round(item.quality_multiplier, 6),
        "recency": round(item.recency, 6),
        "score": round(item.score, 6),
        "success_score": round(pattern.current_score(now), 6),
        "reuse_count": pattern.reuse_count,
        "eval_scores": item.eval_scores,
    }


def evaluation_dict(record: EvalRecord) -> dict[str, Any]:
    return {
        "key": record.key,
        "pattern": record.pattern.key if record.pattern_id and record.pattern else None,
        "state": record.state,
        "source": record.source,
        "judges": record.judges,
        "score": record.score,
        "spread": record.spread,
        "flagged": record.flagged,
        "judge_scores": list(record.judge_scores),
        "feedback": record.feedback,
        "hardcoding": list(record.hardcoding),
        "note": record.note,
        "poll": f"{API_PREFIX}/evaluations/{record.key}",
        "created_at": record.created_at,
        "finished_at": record.finished_at,
    }


def composition_dict(composition: Composition) -> dict[str, Any]:
    return {
        "key": composition.key,
        "task": composition.task,
        "state": composition.state,
        "source": composition.source,
        "given": list(composition.given),
        "stages": list(composition.stages),
        "valid": composition.valid,
        "errors": list(composition.errors),
        "note": composition.note,
        "poll": f"{API_PREFIX}/compositions/{composition.key}",
        "created_at": composition.created_at,
        "finished_at": composition.finished_at,
    }


def feedback_dict(top: feedback.TopIssues) -> dict[str, Any]:
    return {
        "issues": [
            {
                "text": issue.cluster.text,
                "weight": round(issue.weight, 6),
                "members": len(issue.cluster.members),
                "similarity": None if issue.similarity is None else round(issue.similarity, 6),
                "last_seen": issue.cluster.last_seen,
            }
            for issue in top.issues
        ],
        "prompt": top.prompt,
    }


# --- operations shared by REST and MCP ------------------------------------------------------


def learn(token: ApiToken, data: dict[str, Any]) -> dict[str, Any]:
    require_scope(token, data.get("scope") or "global")
    result = store.pattern_learn(owner=token.owner, **data)
    return {
        "key": result.pattern.key,
        "outcome": result.outcome,
        "duplicate_of": result.duplicate_of,
        "similarity": None if result.similarity is None else round(result.similarity, 6),
    }


def recall(token: ApiToken, data: dict[str, Any]) -> dict[str, Any]:
    if data.get("scope"):
        require_scope(token, data["scope"])
    now = timezone.now()
    found = store.pattern_recall(owner=token.owner, now=now, **data)
    return {
        "results": [
            recalled_dict(item, now) for item in found if token.allows_scope(item.pattern.scope)
        ]
    }


def evaluate(token: ApiToken, key: str | None, data: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    record = evaluation.evaluation_request(owner=token.owner, pattern_key=key, **data)
    status = HTTPStatus.ACCEPTED if record.state == EvalRecord.State.PENDING else HTTPStatus.OK
    return status, evaluation_dict(record)


def refine(token: ApiToken, key: str, eval_score: Any, note: str = "") -> dict[str, Any]:
    record = store.pattern_refine(owner=token.owner, key=key, eval_score=eval_score, note=note)
    assert record.pattern is not None
    multiplier, scores = store.quality_of(record.pattern)
    return {
        "key": key,
        "evaluation": record.key,
        "quality_multiplier": multiplier,
        "eval_scores": scores,
    }


def reused(token: ApiToken, key: str) -> dict[str, Any]:
    pattern = store.pattern_mark_reused(owner=token.owner, key=key)
    return {
        "key": pattern.key,
        "success_score": round(pattern.success_score, 6),
        "reuse_count": pattern.reuse_count,
    }


def composed(token: ApiToken, data: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    result = compose.composition_request(owner=token.owner, **data)
    status = HTTPStatus.ACCEPTED if result.state == Composition.State.PENDING else HTTPStatus.OK
    return status, composition_dict(result)


# --- endpoints ------------------------------------------------------------------------------


@router.post(
    "",
    response={201: LearnOut, 200: LearnOut, **errors(422)},
    summary="Learn a successful run (201 created or replaced; 200 kept or skipped)",
)
def pattern_learn(request: HttpRequest, payload: PatternIn) -> Status[dict[str, Any]]:
    body = learn(token_of(request), payload.model_dump())
    status = HTTPStatus.CREATED if body["outcome"] in ("created", "replaced") else HTTPStatus.OK
    return Status(status, body)


@router.get("", response={200: list[PatternOut], **errors(422)}, summary="The owner's patterns")
def pattern_list(
    request: HttpRequest, status: str = "active", limit: int = 50, offset: int = 0
) -> list[dict[str, Any]]:
    token = token_of(request)
    rows = SuccessPattern.objects.for_owner(token.owner).order_by("-updated_at", "-id")
    if status in ("active", "retired"):
        rows = rows.filter(status=status)
    limit, offset = max(1, min(limit, 200)), max(0, offset)
    page = list(rows[offset : offset + limit])
    scores = store.recent_patterns(page)
    return [pattern_dict(p, scores.get(p.pk, store.Evals())) for p in page]


@router.post(
    "/recall",
    response={200: RecallOut, **errors(422)},
    summary="Patterns for a task, ranked by similarity x quality (x recency); read-only",
)
def pattern_recall(request: HttpRequest, payload: RecallIn) -> dict[str, Any]:
    return recall(token_of(request), payload.model_dump())


@router.get(
    "/feedback",
    response={200: FeedbackOut, **errors(422)},
    summary="Top recurring evaluation issues for a task, ready for a prompt",
)
def pattern_feedback(request: HttpRequest, task: str, limit: int = 5) -> dict[str, Any]:
    token = token_of(request)
    return feedback_dict(feedback.feedback_top(owner=token.owner, task=task, limit=limit))


@router.post(
    "/compose",
    response={200: CompositionOut, 202: CompositionOut, **errors(422)},
    summary="Split a task into stages from stored patterns, or validate given stages",
    description=(
        "With `stages`: only validated (422 `pipeline_invalid` naming each stage and field: an "
        "input neither given nor produced earlier, or a cycle). Without: 200 with the nearest "
        "patterns in dependency order when no LLM is configured, else 202 and a `poll` URL."
    ),
)
def pattern_compose(request: HttpRequest, payload: ComposeIn) -> Status[dict[str, Any]]:
    data = payload.model_dump()
    status, body = composed(token_of(request), data)
    return Status(status, body)


@router.get(
    "/compositions/{key}",
    response={200: CompositionOut, **errors(404)},
    summary="A composition (poll a pending one)",
)
def composition_get(request: HttpRequest, key: str) -> dict[str, Any]:
    token = token_of(request)
    return composition_dict(compose.composition_get(owner=token.owner, key=key))


@router.get(
    "/evaluations/{key}",
    response={200: EvaluationOut, **errors(404)},
    summary="An evaluation (poll a pending one)",
)
def evaluation_get(request: HttpRequest, key: str) -> dict[str, Any]:
    token = token_of(request)
    return evaluation_dict(evaluation.evaluation_get(owner=token.owner, key=key))


@router.post(
    "/evaluate",
    response={200: EvaluationOut, 202: EvaluationOut, **errors(422)},
    summary="Evaluate a task's code that is not (yet) a pattern",
)
def code_evaluate(request: HttpRequest, payload: EvaluateIn) -> Status[dict[str, Any]]:
    status, body = evaluate(token_of(request), None, payload.model_dump())
    return Status(status, body)


@router.get("/settings", response={200: SettingsOut, **errors()}, summary="Pattern settings")
def settings_get(request: HttpRequest) -> dict[str, Any]:
    row = pattern_settings.settings_get(token_of(request).owner)
    return {"feed_inject": row.feed_inject}


@router.put("/settings", response={200: SettingsOut, **errors(422)}, summary="Change settings")
def settings_put(request: HttpRequest, payload: SettingsIn) -> dict[str, Any]:
    row = pattern_settings.settings_update(
        owner=token_of(request).owner, feed_inject=payload.feed_inject
    )
    return {"feed_inject": row.feed_inject}


@router.get("/{key}", response={200: PatternOut, **errors(404)}, summary="One pattern")
def pattern_get(request: HttpRequest, key: str) -> dict[str, Any]:
    return pattern_dict(store.pattern_get(owner=token_of(request).owner, key=key))


@router.post(
    "/{key}/evaluate",
    response={200: EvaluationOut, 202: EvaluationOut, **errors(404, 422)},
    summary="Evaluate a pattern (N LLM judges in a task: 202; no key: the rubric at once: 200)",
    description=(
        "With an LLM configured, the N judges run concurrently in a Celery task: the answer is "
        "202 with the evaluation `key` and a `poll` URL. Without, a deterministic rubric scores "
        "structure, tests and hard-coding (it runs nothing) and answers 200 with "
        "`source: rubric`. Finished evaluations join the pattern's eval store."
    ),
)
def pattern_evaluate(request: HttpRequest, key: str, payload: EvaluateIn) -> Status[dict[str, Any]]:
    status, body = evaluate(token_of(request), key, payload.model_dump())
    return Status(status, body)


@router.post(
    "/{key}/refine",
    response={201: RefineOut, **errors(404, 422)},
    summary="Append an external eval score (CI pass rate, a user's rating) to the eval store",
)
def pattern_refine(request: HttpRequest, key: str, payload: RefineIn) -> Status[dict[str, Any]]:
    return Status(
        HTTPStatus.CREATED,
        refine(token_of(request), key, payload.eval_score, payload.note),
    )


@router.post(
    "/{key}/reused",
    response={200: ReusedOut, **errors(404, 409)},
    summary="The pattern was used: +0.1 success score, capped at 10 (survival, not ranking)",
)
def pattern_reused(request: HttpRequest, key: str) -> dict[str, Any]:
    return reused(token_of(request), key)


@router.post(
    "/{key}/promote",
    response={201: PromoteOut, **errors(404, 409, 422)},
    summary="Promote to a procedural engram (a candidate in the review queue)",
)
def pattern_promote(request: HttpRequest, key: str) -> Status[dict[str, Any]]:
    token = token_of(request)
    pattern = promotion.pattern_promote(owner=token.owner, key=key, actor=actor_of(token))
    return Status(HTTPStatus.CREATED, {"key": pattern.key, "engram_id": pattern.engram_id})
