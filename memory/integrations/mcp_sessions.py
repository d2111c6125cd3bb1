"""MCP tools over sessions: start, end, and the status report."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer

from memory.access import (
    actor_of,
    session_for,
    session_open,
)
from memory.api.schemas import StatusOut
from memory.integrations.mcp_engrams import _inject_json
from memory.models import ApiToken
from memory.services import retrieval, sessions
from memory.status import status_report


def session_tools(server: MCPServer, token: ApiToken, domain_tool: Callable[[Any], Any]) -> None:
    """Register the session tools for `token` on `server`, each wrapped with `domain_tool`."""
    owner = token.owner
    actor_of(token)

    @server.tool()
    @domain_tool
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
    @domain_tool
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
    @domain_tool
    def status() -> dict[str, Any]:
        """Counts, lessons (yours / learned / waiting), projects with last hook, capture and
        injection and whether their hooks still arrive, the worker, the queue, the embedder
        and the LLM: the same as GET /api/v1/status."""
        return StatusOut(**status_report(owner=owner, token=token)).model_dump(mode="json")
