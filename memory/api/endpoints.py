"""REST API v1 for memory: every endpoint is a thin call to a service.

Every query starts from the token's owner and scopes (memory.access): another owner's ids, or
ids outside the token's scopes, are 404; writing into a scope the token may not use is 403.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import datetime
from http import HTTPStatus
from typing import Any, Literal, get_args

from django.db import transaction
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Schema, Status

from memory import selectors
from memory.access import (
    ScopeForbidden,
    actor_of,
    engram_dict,
    engram_dicts,
    engram_for,
    engrams_visible,
    episode_dict,
    inject_dict,
    require_scope,
    session_for,
    session_open,
)
from memory.api.auth import TokenAuth, token_of
from memory.api.errors import ApiError, status_of
from memory.api.schemas import (
    BatchIn,
    BatchOut,
    EngramFilters,
    EngramIn,
    EngramOut,
    EngramPage,
    EngramPatch,
    EpisodeFilters,
    EpisodeIn,
    EpisodeOut,
    EpisodePage,
    ErrorOut,
    FeedbackIn,
    FeedbackItem,
    FeedbackOut,
    HookIn,
    HookOut,
    ImportOut,
    InjectIn,
    InjectOut,
    LearnOut,
    ObservationsIn,
    ObservationsOut,
    RecallIn,
    RecallOut,
    RetireOut,
    SessionEndIn,
    SessionEndOut,
    SessionIn,
    SessionOut,
    StatusOut,
    clean_text,
)
from memory.errors import DomainError, envelope, envelope_of
from memory.integrations.claude_code import hook_handle, project_scope
from memory.interop import FORMATS as IMPORT_FORMATS
from memory.interop import detect_format
from memory.models import AgentSession, ApiToken, Episode
from memory.search.legs import STOP_WORDS
from memory.services import engrams as engram_services
from memory.services import episodes as episode_services
from memory.services import interop as interop_services
from memory.services import listing, outcomes, retrieval, sessions
from memory.status import status_report
from memory.strength import effective_strength

router = Router(auth=TokenAuth(), tags=["memory"])

_WORD = re.compile(r"\w{3,}")
# Fields an explicit null may clear; for the others null means "leave as it is".
_NULLABLE = {"polarity", "valid_from", "valid_until"}


def errors(*codes: int) -> dict[int, type[ErrorOut]]:
    """Response entries for the error statuses an operation documents (plus 401/413/429)."""
    return dict.fromkeys((401, 413, 429, *codes), ErrorOut)


def _invalid(field: str, message: str) -> ApiError:
    return ApiError(HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error", message, {"field": field})


# --- cursors: opaque base64 of the last row's sort key ---------------------------------------


def _cursor_encode(when: datetime, pk: int) -> str:
    raw = json.dumps([when.isoformat(), pk], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor_decode(cursor: str) -> tuple[datetime, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        when_text, pk = json.loads(raw)
        when = datetime.fromisoformat(when_text)
        if not isinstance(pk, int) or not 0 < pk < 2**63 or when.tzinfo is None:
            raise ValueError
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise _invalid("cursor", "cursor is not one this API returned") from None
    return when, pk


# --- who am I -----------------------------------------------------------------------------


class WhoAmIOut(Schema):
    owner: str
    token: str
    scopes: list[str]


@router.get(
    "/whoami",
    response={200: WhoAmIOut, **errors()},
    summary="The token's owner and allowed scopes",
    tags=["store"],
)
def whoami(request: HttpRequest) -> WhoAmIOut:
    token = token_of(request)
    return WhoAmIOut(owner=token.owner.get_username(), token=token.name, scopes=token.scopes)


# --- engrams ------------------------------------------------------------------------------


@router.post(
    "/engrams",
    response={201: LearnOut, **errors(403, 422)},
    summary="Learn a lesson",
    description=(
        "Runs the write path: secret and prompt-injection scan (422 `secret_detected` with the "
        "categories, never the secret), recurrence, merge and contradiction detection."
    ),
    tags=["engrams"],
)
def engram_create(request: HttpRequest, payload: EngramIn) -> Status[dict[str, Any]]:
    token = token_of(request)
    require_scope(token, payload.scope)
    result = engram_services.engram_learn(
        owner=token.owner, actor=actor_of(token), **payload.model_dump()
    )
    return Status(
        HTTPStatus.CREATED,
        {
            "engram": engram_dict(result.engram, effective_strength(result.engram)),
            "outcome": result.outcome,
            "related": result.related,
        },
    )


@router.post(
    "/engrams/batch",
    response={200: BatchOut, **errors(422)},
    summary="Learn up to 500 lessons, each succeeding or failing on its own",
    tags=["engrams"],
)
def engram_batch(request: HttpRequest, payload: BatchIn) -> dict[str, Any]:
    token = token_of(request)
    results: list[dict[str, Any] | None] = [None] * len(payload.items)
    todo: list[tuple[int, dict[str, Any]]] = []
    for index, item in enumerate(payload.items):
        if not token.allows_scope(item.scope):
            status, body = _failure(ScopeForbidden(item.scope))
            results[index] = {"index": index, "status": status, "error": body}
        else:
            todo.append((index, item.model_dump()))
    learned = engram_services.engram_learn_batch(
        owner=token.owner, items=[item for _, item in todo], actor=actor_of(token)
    )
    ok = [r for r in learned if not isinstance(r, DomainError)]
    shapes = iter(engram_dicts([r.engram for r in ok]))
    for (index, _), outcome in zip(todo, learned, strict=True):
        if isinstance(outcome, DomainError):
            status, body = _failure(outcome)
            results[index] = {"index": index, "status": status, "error": body}
        else:
            results[index] = {
                "index": index,
                "status": HTTPStatus.CREATED,
                "engram": next(shapes),
                "outcome": outcome.outcome,
                "related": outcome.related,
            }
    done = [r for r in results if r is not None]
    return {"results": done, "learned": len(ok), "failed": len(done) - len(ok)}


def _failure(exc: DomainError | ApiError) -> tuple[int, dict[str, Any]]:
    """(status, error body) of one failed item in a batch: the same envelope as a whole request."""
    if isinstance(exc, DomainError):
        return status_of(exc), envelope_of(exc)
    return exc.status_code, envelope(exc.code, str(exc), exc.details)


@router.get(
    "/engrams",
    response={200: EngramPage, **errors(422)},
    summary="List engrams, newest change first",
    description=(
        "Filters combine with AND. Retired engrams are listed only with `status=retired`. "
        "Pages are keyset-paginated: pass `next_cursor` back as `cursor`. With `q`, the "
        "filtered engrams are ranked by relevance (hybrid recall, nothing recorded), best "
        "first, up to 100 in all."
    ),
    tags=["engrams"],
)
def engram_list(request: HttpRequest, filters: Query[EngramFilters]) -> dict[str, Any]:
    token = token_of(request)
    if filters.cursor and selectors.cursor_mark(filters.cursor, "datetime") is None:
        raise _invalid("cursor", "cursor is not one this API returned")
    query = selectors.EngramQuery(
        q=filters.q or "",
        status=filters.status or "",
        type=filters.type or "",
        scope=filters.scope or "",
        band=filters.band or "",
        quadrant=filters.quadrant or "",
        tag=filters.tag or "",
    )
    page = listing.engram_list(
        owner=token.owner,
        query=query,
        cursor=filters.cursor,
        limit=filters.limit,
        visible=engrams_visible(token),
    )
    return {
        "items": [engram_dict(row.engram, row.rs_eff) for row in page.rows],
        "next_cursor": page.next_cursor,
    }


@router.get(
    "/engrams/{engram_id}",
    response={200: EngramOut, **errors(404)},
    summary="One engram",
    tags=["engrams"],
)
def engram_detail(request: HttpRequest, engram_id: str) -> dict[str, Any]:
    engram = engram_for(token_of(request), engram_id)
    return engram_dict(engram, effective_strength(engram))


@router.patch(
    "/engrams/{engram_id}",
    response={200: EngramOut, **errors(403, 404, 409, 422)},
    summary="Edit an engram",
    description="Send `version` to refuse the edit (409) when the engram changed meanwhile.",
    tags=["engrams"],
)
def engram_edit(request: HttpRequest, engram_id: str, payload: EngramPatch) -> dict[str, Any]:
    token = token_of(request)
    engram = engram_for(token, engram_id)
    changes = {
        name: value
        for name, value in payload.model_dump(exclude_unset=True).items()
        if value is not None or name in _NULLABLE
    }
    expected = changes.pop("version", None)
    if "scope" in changes:
        require_scope(token, changes["scope"])
    engram = engram_services.engram_update(
        owner=token.owner,
        engram=engram,
        changes=changes,
        actor=actor_of(token),
        expected_version=expected,
    )
    return engram_dict(engram, effective_strength(engram))


@router.delete(
    "/engrams/{engram_id}",
    response={200: RetireOut, **errors(404)},
    summary="Retire (forget) an engram; it stays in the history",
    tags=["engrams"],
)
def engram_delete(request: HttpRequest, engram_id: str) -> dict[str, Any]:
    token = token_of(request)
    engram = engram_for(token, engram_id)
    changed = engram_services.engram_retire(
        owner=token.owner, engram=engram, actor=actor_of(token), reason="retired over the API"
    )
    return {"id": engram.engram_id, "status": engram.status, "changed": changed}


# --- recall and inject --------------------------------------------------------------------


def _episodes_matching(owner: Any, query: str, limit: int) -> list[Episode]:
    words = [w for w in _WORD.findall(query.lower()) if w not in STOP_WORDS][:8]
    if not words:
        return []
    cond = Q()
    for word in words:
        cond |= Q(summary__icontains=word)
    qs = episode_services.episode_timeline(owner=owner).filter(cond).select_related("session")
    return list(qs[:limit])


@router.post(
    "/recall",
    response={200: RecallOut, **errors(404, 422)},
    summary="Ranked engrams for a query, with score components",
    description=(
        "Read-only unless `session_id` is given (then each result counts as an access). "
        "`scope` means that scope plus global."
    ),
    tags=["retrieval"],
)
def recall(request: HttpRequest, payload: RecallIn) -> dict[str, Any]:
    token = token_of(request)
    session = session_for(token, payload.session_id) if payload.session_id else None
    results = retrieval.recall(
        owner=token.owner,
        query=payload.query,
        scope=payload.scope,
        limit=payload.limit,
        mode=payload.mode,
        session=session,
        token_scopes=token.scopes,
    )
    body: dict[str, Any] = {
        "results": [
            {
                "engram": engram_dict(r.engram, r.rs_eff),
                "score": r.score,
                "components": r.components,
            }
            for r in results
        ]
    }
    if payload.include_episodes:
        episodes = _episodes_matching(token.owner, payload.query, payload.limit)
        body["episodes"] = [episode_dict(e) for e in episodes]
    return body


@router.post(
    "/inject",
    response={200: InjectOut, **errors(404, 422)},
    summary="What to put in front of the model for a prompt, within a token budget",
    description="With `session_id`, every surfaced engram is recorded as an injection.",
    tags=["retrieval"],
)
def inject(request: HttpRequest, payload: InjectIn) -> dict[str, Any]:
    token = token_of(request)
    session = session_for(token, payload.session_id) if payload.session_id else None
    result = retrieval.inject(
        owner=token.owner,
        prompt=payload.prompt,
        scope=payload.scope or (session.scope if session else None),
        session=session,
        budget_tokens=payload.budget_tokens,
        token_scopes=token.scopes,
    )
    return inject_dict(result)


# --- feedback -----------------------------------------------------------------------------


def _feedback_one(token: ApiToken, item: FeedbackItem) -> dict[str, Any]:
    engram = engram_for(token, item.engram_id)
    session = session_for(token, item.session_id) if item.session_id else None
    engram = outcomes.feedback_record(
        owner=token.owner,
        engram=engram,
        signal=item.signal,
        session=session,
        actor=actor_of(token),
    )
    return {
        "engram_id": engram.engram_id,
        "status": HTTPStatus.OK,
        "signal": item.signal,
        "engram": engram_dict(engram, effective_strength(engram)),
    }


@router.post(
    "/feedback",
    response={200: FeedbackOut, **errors(404, 422)},
    summary="Feedback on engrams: positive, negative, neutral, or an explicit outcome",
    description=(
        "One signal, or `signals` (each answered on its own). With a session, the signal also "
        "sets the outcome of the engram's injections there, overriding automatic attribution."
    ),
    tags=["retrieval"],
)
def feedback(request: HttpRequest, payload: FeedbackIn) -> dict[str, Any]:
    token = token_of(request)
    if payload.signals is None:
        assert payload.engram_id is not None and payload.signal is not None
        item = FeedbackItem(
            engram_id=payload.engram_id, signal=payload.signal, session_id=payload.session_id
        )
        return {"results": [_feedback_one(token, item)]}
    results = []
    for item in payload.signals:
        try:
            with transaction.atomic():
                results.append(_feedback_one(token, item))
        except (DomainError, ApiError) as exc:
            status, body = _failure(exc)
            results.append(
                {
                    "engram_id": item.engram_id,
                    "status": status,
                    "signal": item.signal,
                    "error": body,
                }
            )
    return {"results": results}


# --- sessions -----------------------------------------------------------------------------


@router.post(
    "/sessions",
    response={201: SessionOut, **errors(403, 404, 422)},
    summary="Start (or resume) a session; the task is injected for at once",
    tags=["sessions"],
)
def session_create(request: HttpRequest, payload: SessionIn) -> Status[dict[str, Any]]:
    token = token_of(request)
    session = session_open(
        token,
        session_id=payload.session_id,
        task=payload.task,
        scope=payload.scope or "global",
        agent=payload.agent,
    )
    injection = None
    if session.task:
        injection = inject_dict(
            retrieval.inject(
                owner=token.owner,
                prompt=session.task,
                scope=session.scope,
                session=session,
                token_scopes=token.scopes,
            )
        )
    return Status(
        HTTPStatus.CREATED,
        {
            "session_id": session.session_id,
            "scope": session.scope,
            "agent": session.agent,
            "started_at": session.started_at,
            "injection": injection,
        },
    )


@router.post(
    "/sessions/{session_id}/end",
    response={200: SessionEndOut, **errors(404, 422)},
    summary="End a session: co-access, suggested lessons, then automatic outcome attribution",
    description="Ending twice is harmless: the second call reports `ended: false`.",
    tags=["sessions"],
)
def session_finish(request: HttpRequest, session_id: str, payload: SessionEndIn) -> dict[str, Any]:
    token = token_of(request)
    session = session_for(token, session_id)
    return sessions.session_end(
        owner=token.owner,
        session=session,
        summary=payload.summary,
        engram_suggestions=list(payload.engram_suggestions),
        last_assistant_message=payload.last_assistant_message,
    )


# --- episodes and observations ------------------------------------------------------------


@router.post(
    "/episodes",
    response={201: EpisodeOut, **errors(404, 422)},
    summary="Capture an episode (append-only)",
    tags=["episodes"],
)
def episode_create(request: HttpRequest, payload: EpisodeIn) -> Status[dict[str, Any]]:
    token = token_of(request)
    session = session_for(token, payload.session_id) if payload.session_id else None
    episode = episode_services.episode_capture(
        owner=token.owner,
        summary=payload.summary,
        agent=payload.agent,
        channel=payload.channel,
        session=session,
        timestamp=payload.timestamp,
    )
    return Status(HTTPStatus.CREATED, episode_dict(episode))


@router.get(
    "/episodes",
    response={200: EpisodePage, **errors(422)},
    summary="The timeline, newest first",
    tags=["episodes"],
)
def episode_list(request: HttpRequest, filters: Query[EpisodeFilters]) -> dict[str, Any]:
    token = token_of(request)
    qs = episode_services.episode_timeline(
        owner=token.owner,
        since=filters.since,
        until=filters.until,
        agent=filters.agent,
        channel=filters.channel,
        q=filters.q,
    ).select_related("session")
    if filters.cursor:
        when, pk = _cursor_decode(filters.cursor)
        qs = qs.filter(Q(timestamp__lt=when) | Q(timestamp=when, pk__lt=pk))
    fetched = list(qs[: filters.limit + 1])
    page, more = fetched[: filters.limit], len(fetched) > filters.limit
    return {
        "items": [episode_dict(e) for e in page],
        "next_cursor": _cursor_encode(page[-1].timestamp, page[-1].pk) if more and page else None,
    }


@router.post(
    "/observations",
    response={201: ObservationsOut, **errors(404, 422)},
    summary="Store tool uses (secrets are redacted before storage)",
    description="One tool use, or `observations` (up to 200); all are stored or none.",
    tags=["sessions"],
)
def observation_create(request: HttpRequest, payload: ObservationsIn) -> Status[dict[str, Any]]:
    token = token_of(request)
    stored = []
    with transaction.atomic():
        found: dict[str, AgentSession] = {}
        for item in payload.items():
            session = None
            if item.session_id:
                session = found.get(item.session_id) or session_for(token, item.session_id)
                found[item.session_id] = session
            stored.append(
                sessions.observation_record(
                    owner=token.owner,
                    tool=item.tool,
                    tool_input=item.input,
                    tool_output=item.output,
                    success=item.success,
                    session=session,
                )
            )
    return Status(
        HTTPStatus.CREATED,
        {
            "stored": len(stored),
            "observations": [
                {"id": o.pk, "tool": o.tool, "success": o.success, "redacted": o.redacted}
                for o in stored
            ],
        },
    )


# --- status, import, export ---------------------------------------------------------------


@router.get(
    "/status",
    response={200: StatusOut, **errors()},
    summary="Counts, lessons, projects with their hook health, worker, queue, embedder, LLM",
    description=(
        "Per project (a scope sessions ran in during the last 30 days): last hook received, "
        "last lesson captured, last injection, lessons (yours / learned / waiting) and "
        "`health.state`: `stopped` when sessions ran but their hooks did not arrive, `quiet` "
        "when a daily project fell silent, `ok`, or `none`. With `?cwd=` (and `?root=`, the "
        "checkout's main folder), `project_scope` names the scope hooks from that folder use. `engram status` and `engram doctor` "
        "read this."
    ),
    tags=["store"],
)
def status(request: HttpRequest, cwd: str | None = None, root: str | None = None) -> dict[str, Any]:
    token = token_of(request)
    report = status_report(owner=token.owner, token=token)
    if cwd is not None:
        # The scope hooks from this folder write into, so a client finds its project (`root`:
        # the checkout's main folder, which engram-hook sends beside cwd).
        report["project_scope"] = project_scope(cwd[:1000], root[:1000] if root else None)
    return report


def _require_all_scopes(token: ApiToken) -> None:
    # Import and export work on the whole store; a scope-limited token would see past its scopes.
    if "*" not in (token.scopes or ["*"]):
        raise ApiError(
            HTTPStatus.FORBIDDEN,
            "scope_forbidden",
            "Import and export need a token with all scopes (*).",
            {"scope": "*"},
        )


ImportFormat = Literal["plur-yaml", "datacore-yaml", "toejough-toml", "mem0-json"]
assert set(get_args(ImportFormat)) == set(IMPORT_FORMATS), "import formats changed"


@router.post(
    "/import",
    response={200: ImportOut, **errors(403, 422)},
    summary="Import an engram file (the raw file is the request body); all or nothing",
    description=(
        "Formats: PLUR or Datacore YAML, toejough TOML, Mem0 JSON. Without `format` it is "
        "detected from the content. `dry_run=true` validates and counts without writing."
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "text/plain": {"schema": {"type": "string"}},
                "application/yaml": {"schema": {"type": "string"}},
                "application/json": {"schema": {}},
            },
        }
    },
    tags=["store"],
)
def engram_import(
    request: HttpRequest, format: ImportFormat | None = None, dry_run: bool = False
) -> dict[str, Any]:
    token = token_of(request)
    _require_all_scopes(token)
    try:
        text = clean_text(request.body.decode("utf-8"))
    except UnicodeDecodeError:
        raise _invalid("body", "the file must be UTF-8 text") from None
    if not text.strip():
        raise _invalid("body", "the request body is the file to import; it is empty")
    fmt = format or detect_format(None, text)
    if fmt is None:
        raise ApiError(
            HTTPStatus.UNPROCESSABLE_ENTITY,
            "import_rejected",
            "Could not tell the file's format; pass ?format= "
            f"({', '.join(IMPORT_FORMATS)}). Nothing was imported.",
            {"line": None, "field": "format", "index": None},
        )
    report = interop_services.engrams_import(
        owner=token.owner, text=text, fmt=fmt, dry_run=dry_run, actor=actor_of(token)
    )
    return report.as_dict()


@router.get(
    "/export",
    response={200: None, **errors(403, 422)},
    summary="Export the store as PLUR engrams.yaml",
    openapi_extra={
        "responses": {
            200: {
                "description": "PLUR engrams.yaml",
                "content": {"application/yaml": {"schema": {"type": "string"}}},
            }
        }
    },
    tags=["store"],
)
def engram_export(
    request: HttpRequest, format: Literal["plur-yaml"] = "plur-yaml", include_retired: bool = False
) -> HttpResponse:
    token = token_of(request)
    _require_all_scopes(token)
    text = interop_services.engrams_export(
        owner=token.owner, fmt=format, include_retired=include_retired
    )
    response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="engrams.yaml"'
    return response


# --- Claude Code hooks --------------------------------------------------------------------


@router.post(
    "/hooks/claude-code",
    response={200: HookOut, **errors(403, 422)},
    exclude_none=True,
    summary="Claude Code HTTP hook (every event)",
    description=(
        "Takes the hook payload as Claude Code sends it and answers in the documented shape: "
        "`hookSpecificOutput` with `hookEventName` and `additionalContext` for SessionStart, "
        "UserPromptSubmit and PreToolUse when there is something to add, `{}` otherwise. "
        "The scope is `project:<name>` unless `?scope=` says otherwise: the basename of "
        "`engram_project_root` when `engram-hook` sent it (the git checkout's main folder), "
        "else of cwd, where a worktree folder of a known layout (`<repo>/.worktrees/<name>`, "
        "`<repo>/.claude/worktrees/<name>`, `conductor/workspaces/<repo>/<name>`) names its "
        "repository."
    ),
    tags=["hooks"],
)
def claude_code_hook(
    request: HttpRequest, payload: HookIn, scope: str | None = None
) -> dict[str, Any]:
    token = token_of(request)
    if scope is not None and (len(scope) > 200 or "\x00" in scope):
        raise _invalid("scope", "not a valid scope")
    return hook_handle(token=token, payload=payload.model_dump(exclude_unset=True), scope=scope)
