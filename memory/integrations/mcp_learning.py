"""MCP tools for session learning, the same calls as the REST endpoints in memory.api.learning."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer

from memory.api import learning as api
from memory.models import ApiToken
from memory.services import learning


def learning_tools(server: MCPServer, token: ApiToken, domain_tool: Callable[[Any], Any]) -> None:
    """Register the learning tools for `token` on `server`, each wrapped with `domain_tool`."""

    @server.tool()
    @domain_tool
    def learning_signals(session_id: str = "", limit: int = 50) -> dict[str, Any]:
        """Captured learning signals (prompts that stated a rule, transcript deltas, error → fix
        pairs), newest first; optionally of one session."""
        return {"items": api.signals_list(token, session_id or None, max(1, min(limit, 200)))}

    @server.tool()
    @domain_tool
    def learning_drafts(session_id: str = "", limit: int = 50) -> dict[str, Any]:
        """Lessons extracted from the signals (tier, quote, engram made, superseded version),
        newest first; optionally of one session."""
        return {"items": api.drafts_list(token, session_id or None, max(1, min(limit, 200)))}

    @server.tool()
    @domain_tool
    def learning_settings(review_all: bool | None = None) -> dict[str, Any]:
        """Read, or with `review_all` set, whether every captured lesson waits in review."""
        if review_all is not None:
            learning.settings_update(owner=token.owner, review_all=review_all)
        return api.settings_dict(token.owner)

    @server.tool()
    @domain_tool
    def lesson_undo(engram_id: str) -> dict[str, Any]:
        """Undo a captured lesson: retire it and restore the version it superseded, if any."""
        return api.lesson_undo(token, engram_id)
