"""REST for past Claude Code sessions (`engram import-history`): where a session's capture
stands, and its transcript lines, captured the same way as a live session's Stop."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import Field

from memory.access import ScopeForbidden
from memory.api.auth import TokenAuth, token_of
from memory.api.errors import ApiError
from memory.api.schemas import DateTime, ErrorOut, InSchema
from memory.integrations.claude_code import hook_scope
from memory.services import history

router = Router(auth=TokenAuth(), tags=["history"])
MAX_LINES = history.MAX_LINES
MAX_OFFSET = 2**62  # a byte offset; the column is a signed 64-bit integer


class TranscriptQuery(InSchema):
    session_id: str = Field(..., min_length=1, max_length=200)


class TranscriptIn(InSchema):
    session_id: str = Field(..., min_length=1, max_length=200)
    cwd: str = Field("", max_length=500, description="The session's working directory.")
    root: str = Field(
        "",
        max_length=4096,
        description=(
            "The checkout's main folder (the parent of git's common directory), when the client "
            "knows it: every worktree and subfolder of one repository is one project."
        ),
    )
    scope: str | None = Field(
        None,
        max_length=200,
        description="Engram scope; default `project:<name>` from `root`, else from `cwd`.",
    )
    offset: int = Field(
        ..., ge=0, le=MAX_OFFSET, description="Byte offset of the first line in the file."
    )
    lines: list[str] = Field(..., max_length=MAX_LINES, description="Complete JSONL lines.")
    started_at: DateTime | None = None
    ended_at: DateTime | None = None


class TranscriptOut(Schema):
    session_id: str
    scope: str
    offset: int = Field(description="Bytes of the session's transcript captured so far.")
    created: bool = False
    signal: int | None = None


def _errors(*codes: int) -> dict[int, type[ErrorOut]]:
    return dict.fromkeys((401, 413, 429, *codes), ErrorOut)


@router.get(
    "/transcripts",
    response={200: TranscriptOut, **_errors(404)},
    summary="Where capture of a session's transcript stands (its byte offset)",
)
def transcript_state(request: HttpRequest, query: Query[TranscriptQuery]) -> dict[str, Any]:
    token = token_of(request)
    session = history.history_offset(owner=token.owner, session_id=query.session_id.strip())
    if session is None or not token.allows_scope(session.scope):
        raise ApiError(HTTPStatus.NOT_FOUND, "not_found", "No session with this id.")
    return {
        "session_id": session.session_id,
        "scope": session.scope,
        "offset": session.transcript_offset,
    }


@router.post(
    "/transcripts",
    response={200: TranscriptOut, **_errors(403, 422)},
    summary="Capture a past session's transcript lines (engram import-history)",
    description=(
        "One transcript file is one session. The lines from byte `offset` go through the same "
        "capture as a live session's Stop hook (a learning signal, then the extraction task); "
        "lines before the session's current offset are not stored twice. The answer's `offset` "
        "says how far capture stands; send the next lines from there."
    ),
)
def transcript_import(request: HttpRequest, payload: TranscriptIn) -> dict[str, Any]:
    token = token_of(request)
    scope = hook_scope(token, payload.cwd or None, payload.scope, root=payload.root or None)
    existing = history.history_offset(owner=token.owner, session_id=payload.session_id.strip())
    if existing is not None and not token.allows_scope(existing.scope):
        raise ScopeForbidden(existing.scope)
    result = history.history_import(
        owner=token.owner,
        session_id=payload.session_id.strip(),
        scope=scope,
        cwd=payload.cwd,
        offset=payload.offset,
        lines=payload.lines,
        started_at=payload.started_at,
        ended_at=payload.ended_at,
    )
    return result.as_dict()
