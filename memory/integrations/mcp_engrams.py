"""MCP tools over engrams: learn, recall, inject, feedback, forget, capture, timeline."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer

from memory.access import (
    actor_of,
    engram_dict,
    engram_for,
    episode_dict,
    inject_dict,
    require_scope,
    session_for,
)
from memory.api.schemas import DateTime, EngramOut, EpisodeOut, InjectOut
from memory.models import ApiToken
from memory.services import engrams as engram_services
from memory.services import episodes as episode_services
from memory.services import outcomes, retrieval
from memory.strength import effective_strength

MAX_TIMELINE = 200  # episodes per timeline call


def _engram_json(engram: Any, rs: float | None = None) -> dict[str, Any]:
    rs = effective_strength(engram) if rs is None else rs
    return EngramOut(**engram_dict(engram, rs)).model_dump(mode="json")


def _inject_json(result: retrieval.InjectResult) -> dict[str, Any]:
    return InjectOut.model_validate(inject_dict(result)).model_dump(mode="json")


def _episode_json(episode: Any) -> dict[str, Any]:
    return EpisodeOut.model_validate(episode_dict(episode)).model_dump(mode="json")


def engram_tools(server: MCPServer, token: ApiToken, domain_tool: Callable[[Any], Any]) -> None:
    """Register the engram tools for `token` on `server`, each wrapped with `domain_tool`."""
    owner = token.owner
    actor = actor_of(token)

    @server.tool()
    @domain_tool
    def learn(
        statement: str,
        scope: str = "global",
        type: Literal["behavioral", "terminological", "procedural", "architectural"] = (
            "behavioral"
        ),
        polarity: Literal["do", "dont"] | None = None,
        rationale: str = "",
        tags: list[str] | None = None,
        domain: str = "",
        direct_instruction: bool = False,
    ) -> dict[str, Any]:
        """Store a lesson. direct_instruction=true when the user told you this explicitly.

        Returns the engram with the outcome: created, recurrence, merge_proposed or
        contradiction_flagged (the last two wait in the owner's review queue).
        """
        require_scope(token, scope)
        result = engram_services.engram_learn(
            owner=owner,
            statement=statement,
            scope=scope,
            type=type,
            polarity=polarity,
            rationale=rationale,
            tags=tags,
            domain=domain,
            direct_instruction=direct_instruction,
            actor=actor,
        )
        return {
            "engram": _engram_json(result.engram),
            "outcome": result.outcome,
            "related": result.related,
        }

    @server.tool()
    @domain_tool
    def recall(
        query: str,
        scope: str | None = None,
        limit: int = 10,
        mode: Literal["hybrid", "lexical", "dense"] = "hybrid",
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """Search memory: engrams ranked for the query, each with its score components."""
        session = session_for(token, session_id) if session_id else None
        results = retrieval.recall(
            owner=owner,
            query=query,
            scope=scope,
            limit=max(1, min(limit, retrieval.MAX_RECALL_LIMIT)),
            mode=mode,
            session=session,
            token_scopes=token.scopes,
        )
        return {
            "results": [
                {
                    "engram": _engram_json(r.engram, r.rs_eff),
                    "score": r.score,
                    "components": r.components,
                }
                for r in results
            ]
        }

    @server.tool()
    @domain_tool
    def inject(
        prompt: str,
        scope: str | None = None,
        session_id: str | None = None,
        budget_tokens: int | None = None,
    ) -> dict[str, Any]:
        """The lessons to keep in mind for a task, rendered as markdown within a token budget."""
        session = session_for(token, session_id) if session_id else None
        result = retrieval.inject(
            owner=owner,
            prompt=prompt,
            scope=scope or (session.scope if session else None),
            session=session,
            budget_tokens=max(50, min(budget_tokens, 20000)) if budget_tokens else None,
            token_scopes=token.scopes,
        )
        return _inject_json(result)

    @server.tool()
    @domain_tool
    def feedback(
        engram_id: str,
        signal: Literal[
            "positive", "negative", "neutral", "followed", "contradicted", "ignored", "irrelevant"
        ],
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """Say whether an engram helped (positive), misled (negative) or was irrelevant."""
        engram = engram_for(token, engram_id)
        session = session_for(token, session_id) if session_id else None
        engram = outcomes.feedback_record(
            owner=owner, engram=engram, signal=signal, session=session, actor=actor
        )
        return {"engram": _engram_json(engram), "signal": signal}

    @server.tool()
    @domain_tool
    def forget(engram_id: str, reason: str = "") -> dict[str, Any]:
        """Retire an engram: it is never injected again but stays in the history."""
        engram = engram_for(token, engram_id)
        changed = engram_services.engram_retire(
            owner=owner, engram=engram, actor=actor, reason=reason[:500]
        )
        return {"id": engram.engram_id, "status": engram.status, "changed": changed}

    @server.tool()
    @domain_tool
    def capture(
        summary: str, agent: str = "", channel: str = "", session_id: str | None = None
    ) -> dict[str, Any]:
        """Record an episode: something that happened, worth remembering as an event."""
        session = session_for(token, session_id) if session_id else None
        episode = episode_services.episode_capture(
            owner=owner, summary=summary, agent=agent, channel=channel, session=session
        )
        return _episode_json(episode)

    @server.tool()
    @domain_tool
    def timeline(
        since: DateTime | None = None,
        until: DateTime | None = None,
        agent: str | None = None,
        channel: str | None = None,
        q: str | None = None,
        limit: int = 20,
    ) -> dict[str, Any]:
        """Episodes newest first, filtered by time range, agent, channel and words."""
        qs = episode_services.episode_timeline(
            owner=owner, since=since, until=until, agent=agent, channel=channel, q=q
        ).select_related("session")
        return {"episodes": [_episode_json(e) for e in qs[: max(1, min(limit, MAX_TIMELINE))]]}
