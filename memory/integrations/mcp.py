"""Engram over MCP (stdio): each tool is a thin call to the same services as the REST API.

The server acts for one API token (ENGRAM_TOKEN): its owner's data, limited to its scopes, with
the same 404-for-anything-not-yours rule. Errors come back as tool errors whose text carries
the API's error code, e.g. `secret_detected: ...`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal

from django.db import close_old_connections
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from memory.access import (
    actor_of,
    engram_dict,
    engram_for,
    episode_dict,
    inject_dict,
    require_scope,
    session_for,
    session_open,
)
from memory.api.schemas import DateTime, EngramOut, EpisodeOut, InjectOut, StatusOut, clean_text
from memory.errors import DomainError
from memory.integrations.mcp_learning import learning_tools
from memory.models import ApiToken
from memory.services import engrams as engram_services
from memory.services import episodes as episode_services
from memory.services import outcomes, retrieval, sessions
from memory.status import status_report
from memory.strength import effective_strength

SERVER_NAME = "engram"
INSTRUCTIONS = (
    "Engram is your long-term memory. Call `inject` (or `session_start`) with the task at hand "
    "to get the lessons that apply; `learn` when you discover something worth keeping; "
    "`feedback` naming an engram id when a lesson helped or misled you; `capture` for notable "
    "events; `session_end` when you are done."
)
MAX_TIMELINE = 200


class TokenInvalid(Exception):
    pass


def token_from(raw: str | None) -> ApiToken:
    token = ApiToken.authenticate((raw or "").strip())
    if token is None:
        raise TokenInvalid("ENGRAM_TOKEN is missing, revoked or not an Engram API token.")
    return token


def _tool[F: Callable[..., Any]](fn: F) -> F:
    """Run a tool with fresh DB connections; domain errors become tool errors with their code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            return fn(*args, **{name: clean_text(value) for name, value in kwargs.items()})
        except DomainError as exc:
            raise ToolError(f"{exc.code}: {exc}") from None
        finally:
            close_old_connections()

    return wrapper  # type: ignore[return-value]


def _engram_json(engram: Any, rs: float | None = None) -> dict[str, Any]:
    rs = effective_strength(engram) if rs is None else rs
    return EngramOut(**engram_dict(engram, rs)).model_dump(mode="json")


def _inject_json(result: retrieval.InjectResult) -> dict[str, Any]:
    return InjectOut.model_validate(inject_dict(result)).model_dump(mode="json")


def _episode_json(episode: Any) -> dict[str, Any]:
    return EpisodeOut.model_validate(episode_dict(episode)).model_dump(mode="json")


# Other apps add their tools from AppConfig.ready() (memory never imports them): each entry is
# called with the server and the token and registers tools on it, wrapped with `domain_tool`.
ToolProvider = Callable[[MCPServer, ApiToken], None]
TOOL_PROVIDERS: list[ToolProvider] = []


def tools_register(provider: ToolProvider) -> None:
    """Add another app's MCP tools to every server built from now on (idempotent)."""
    if provider not in TOOL_PROVIDERS:
        TOOL_PROVIDERS.append(provider)


def domain_tool[F: Callable[..., Any]](fn: F) -> F:
    """What every tool is wrapped with: fresh DB connections, domain errors as tool errors."""
    return _tool(fn)


def build_server(token: ApiToken) -> MCPServer:
    """An MCP server whose tools act for `token`, other apps' registered tools included."""
    server: MCPServer = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS)
    owner = token.owner
    actor = actor_of(token)

    @server.tool()
    @_tool
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
    @_tool
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
    @_tool
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
    @_tool
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
    @_tool
    def forget(engram_id: str, reason: str = "") -> dict[str, Any]:
        """Retire an engram: it is never injected again but stays in the history."""
        engram = engram_for(token, engram_id)
        changed = engram_services.engram_retire(
            owner=owner, engram=engram, actor=actor, reason=reason[:500]
        )
        return {"id": engram.engram_id, "status": engram.status, "changed": changed}

    @server.tool()
    @_tool
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
    @_tool
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

    @server.tool()
    @_tool
    def session_start(
        task: str = "",
        scope: str = "global",
        agent: str = "mcp",
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """Start (or resume) a working session; returns its id and the lessons for the task."""
        session = session_open(token, session_id=session_id, task=task, scope=scope, agent=agent)
        injection = None
        if session.task:
            injection = _inject_json(
                retrieval.inject(
                    owner=owner,
                    prompt=session.task,
                    scope=session.scope,
                    session=session,
                    token_scopes=token.scopes,
                )
            )
        return {"session_id": session.session_id, "scope": session.scope, "injection": injection}

    @server.tool()
    @_tool
    def session_end(
        session_id: str, summary: str = "", engram_suggestions: list[str] | None = None
    ) -> dict[str, Any]:
        """End a session; suggested lessons are learned and outcomes attributed automatically."""
        session = session_for(token, session_id)
        return sessions.session_end(
            owner=owner,
            session=session,
            summary=summary,
            engram_suggestions=list(engram_suggestions or []),
        )

    @server.tool()
    @_tool
    def status() -> dict[str, Any]:
        """Counts, lessons (yours / learned / waiting), projects with last hook, capture and
        injection and whether their hooks still arrive, the worker, the queue, the embedder
        and the LLM: the same as GET /api/v1/status."""
        return StatusOut(**status_report(owner=owner, token=token)).model_dump(mode="json")

    learning_tools(server, token, _tool)

    @server.tool()
    @_tool
    def review_list(kind: str | None = None, limit: int = 50) -> dict[str, Any]:
        """Open review items (proposals, candidates, contradictions...), oldest first, each with
        its proposed change, evidence and the actions review_decide accepts."""
        from memory.api.review import item_dict, open_items

        items = open_items(token, kind or None)
        return {
            "items": [item_dict(i) for i in items[: max(1, min(limit, 200))]],
            "total": len(items),
        }

    @server.tool()
    @_tool
    def review_decide(
        item_id: int, action: str, edits: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Decide one review item with one of its actions (e.g. approve, reject, defer); `edits`
        carries an action's fields (statement, tags, ...), as in the dashboard."""
        from memory.api.review import EDIT_FIELDS, item_dict, item_visible
        from memory.errors import NotFound
        from memory.models import ReviewItem
        from memory.services import review as review_services

        item = (
            ReviewItem.objects.filter(owner=owner, pk=item_id)
            .exclude(kind=ReviewItem.Kind.CALIBRATION)
            .select_related("engram", "other")
            .first()
        )
        if item is None or not item_visible(token, item):
            raise NotFound("Review item")
        clean = {k: v for k, v in (edits or {}).items() if k in EDIT_FIELDS}
        decided = review_services.review_decide(
            owner=owner, item=item, action=action, actor=actor, edits=clean
        )
        decided.refresh_from_db()
        return item_dict(decided)

    @server.tool()
    @_tool
    def review_restore(item_id: int) -> dict[str, Any]:
        """Put an archived candidate (30 days without recurrence or a decision) back in the
        review queue, as the dashboard's Restore does."""
        from memory.api.review import item_dict, item_visible
        from memory.errors import NotFound
        from memory.models import ReviewItem
        from memory.services import review_queue

        item = (
            ReviewItem.objects.filter(owner=owner, pk=item_id)
            .exclude(kind=ReviewItem.Kind.CALIBRATION)
            .select_related("engram", "other")
            .first()
        )
        if item is None or not item_visible(token, item):
            raise NotFound("Review item")
        return item_dict(review_queue.review_restore(owner=owner, item=item, actor=actor))

    @server.tool()
    @_tool
    def review_decide_all(action: Literal["approve", "defer"]) -> dict[str, Any]:
        """Approve or defer every undecided item of today's review batch that offers it."""
        from memory.services import review as review_services

        require_scope(token, "*")
        return {
            "decided": review_services.review_decide_all(owner=owner, action=action, actor=actor)
        }

    for provider in TOOL_PROVIDERS:
        provider(server, token)
    return server


def serve(raw_token: str | None) -> None:
    """Serve MCP over stdin/stdout until the client closes the stream."""
    token = token_from(raw_token)
    build_server(token).run("stdio")
