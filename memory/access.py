"""Token-scoped lookups shared by the REST API, the hook endpoint and the MCP server.

A token sees only its owner's rows, and of those only engrams and sessions in its scopes. Ids of
anything else are answered exactly like ids that do not exist (404), never with a 403 that would
confirm they exist; a 403 is only for writing to a scope the token may not use.
"""

from __future__ import annotations

from typing import Any

from memory.errors import Forbidden, not_found
from memory.models import AgentSession, ApiToken, Engram, EngramQuerySet, Episode
from memory.services.retrieval import InjectResult
from memory.services.sessions import session_start
from memory.strength import effective_strengths
from memory.validation import scope as validate_scope

MAX_ENGRAM_ID = 40
MAX_SESSION_ID = 200


class ScopeForbidden(Forbidden):
    def __init__(self, scope: str) -> None:
        super().__init__(
            f"This token may not use scope {scope!r}.",
            code="scope_forbidden",
            details={"scope": scope},
        )


def actor_of(token: ApiToken) -> str:
    return f"token:{token.name}"[:100]


def require_scope(token: ApiToken, scope: str) -> None:
    if not token.allows_scope(scope):
        raise ScopeForbidden(scope)


def engrams_visible(token: ApiToken) -> EngramQuerySet:
    return Engram.objects.visible_to(token.owner, token.scopes)


def _plausible(value: object, max_length: int) -> bool:
    # A NUL cannot be sent to PostgreSQL at all; no stored id contains one.
    return isinstance(value, str) and 0 < len(value) <= max_length and "\x00" not in value


def engram_for(token: ApiToken, engram_id: str) -> Engram:
    """The token's engram with this public id, or 404 (also for other owners' and scopes')."""
    if not _plausible(engram_id, MAX_ENGRAM_ID):
        raise not_found(f"Engram {str(engram_id)[:MAX_ENGRAM_ID].replace(chr(0), '')!r}")
    engram = engrams_visible(token).filter(engram_id=engram_id).first()
    if engram is None:
        raise not_found(f"Engram {engram_id!r}")
    return engram


def session_for(token: ApiToken, session_id: str) -> AgentSession:
    """The token's session with this id, or 404 (also for other owners' and scopes')."""
    if not _plausible(session_id, MAX_SESSION_ID):
        raise not_found(f"Session {str(session_id)[:MAX_SESSION_ID].replace(chr(0), '')!r}")
    session = AgentSession.objects.filter(owner=token.owner, session_id=session_id).first()
    if session is None or not token.allows_scope(session.scope):
        raise not_found(f"Session {session_id!r}")
    return session


def session_open(
    token: ApiToken,
    *,
    session_id: str | None,
    task: str = "",
    scope: str = "global",
    agent: str = "",
) -> AgentSession:
    """Start or resume a session for a token (REST and MCP): a session the token may not see is
    the same 404 as a missing one, then the scope is validated and must be the token's."""
    if session_id:
        existing = AgentSession.objects.filter(owner=token.owner, session_id=session_id).first()
        if existing is not None and not token.allows_scope(existing.scope):
            session_for(token, session_id)
    scope = validate_scope(scope or "global")
    require_scope(token, scope)
    return session_start(
        owner=token.owner, session_id=session_id, task=task, scope=scope, agent=agent
    )


def engram_dict(engram: Engram, rs: float) -> dict[str, Any]:
    """The public shape of an engram (memory.api.schemas.EngramOut); `rs` is its RS_eff now."""
    return {
        "id": engram.engram_id,
        "statement": engram.statement,
        "rationale": engram.rationale,
        "type": engram.type,
        "scope": engram.scope,
        "status": engram.status,
        "polarity": engram.polarity,
        "visibility": engram.visibility,
        "tags": list(engram.tags or []),
        "domain": engram.domain,
        "entities": list(engram.entities or []),
        "contraindications": list(engram.contraindications or []),
        "trigger_context": engram.trigger_context,
        "emotional_weight": engram.emotional_weight,
        "confidence": engram.confidence,
        "band": engram.band,
        "rs": round(rs, 6),
        "storage_strength": engram.storage_strength,
        "consolidated": engram.consolidated,
        "enforcement": engram.enforcement,
        "derivation_count": engram.derivation_count,
        "counters": {
            "injections": engram.injections,
            "surfaced": engram.surfaced,
            "followed": engram.followed,
            "contradicted": engram.contradicted,
            "ignored": engram.ignored,
            "irrelevant": engram.irrelevant,
            "feedback_positive": engram.feedback_positive,
            "feedback_negative": engram.feedback_negative,
            "feedback_neutral": engram.feedback_neutral,
        },
        "valid_from": engram.valid_from,
        "valid_until": engram.valid_until,
        "created_at": engram.created_at,
        "updated_at": engram.updated_at,
        "version": engram.version,
        "source": engram.source,
    }


def engram_dicts(engrams: list[Engram]) -> list[dict[str, Any]]:
    """Public shapes of several engrams of one owner, with RS_eff read in two queries."""
    strengths = effective_strengths(engrams)
    return [engram_dict(e, strengths[e.pk]) for e in engrams]


def inject_dict(result: InjectResult) -> dict[str, Any]:
    """The public shape of an injection (memory.api.schemas.InjectOut)."""
    return {
        "directives": result.directives,
        "constraints": result.constraints,
        "consider": result.consider,
        "spread": result.spread,
        "rendered": result.rendered,
        "tokens": result.tokens,
    }


def episode_dict(episode: Episode) -> dict[str, Any]:
    """The public shape of an episode (memory.api.schemas.EpisodeOut); select_related("session")."""
    return {
        "id": episode.episode_id,
        "timestamp": episode.timestamp,
        "summary": episode.summary,
        "agent": episode.agent,
        "channel": episode.channel,
        "session_id": episode.session.session_id if episode.session else None,
    }
