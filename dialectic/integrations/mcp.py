"""Dialectic's MCP tools, added to every Engram MCP server from DialecticConfig.ready():
read-only views of clusters, theses, syntheses and artifacts (decisions go through the review
queue's own tools)."""

from __future__ import annotations

from typing import Any

from dialectic import selectors
from memory.access import require_scope
from memory.errors import InvalidInput
from memory.integrations.mcp import domain_tool
from memory.validation import scope as validate_scope


def _limit(value: int) -> int:
    return max(1, min(int(value), selectors.MAX_PAGE))


def tools(server: Any, token: Any) -> None:
    owner = token.owner

    def _scope(scope: str | None) -> str | None:
        if scope:
            require_scope(token, validate_scope(scope))
        elif token.scopes and "*" not in token.scopes:
            raise InvalidInput("scope", "this token is limited to some scopes: name one")
        return scope or None

    @server.tool()
    @domain_tool
    def dialectic_clusters(
        scope: str | None = None, limit: int = 50, offset: int = 0
    ) -> dict[str, Any]:
        """Clusters of observed tool use (size, cohesion, thesis id), largest first."""
        rows, total = selectors.clusters_page(
            owner, scope=_scope(scope), limit=_limit(limit), offset=max(0, offset)
        )
        return {"items": [selectors.cluster_dict(c) for c in rows], "total": total}

    @server.tool()
    @domain_tool
    def dialectic_theses(
        scope: str | None = None, limit: int = 50, offset: int = 0
    ) -> dict[str, Any]:
        """Theses: habits seen in cohesive clusters, with conf(T) and antithesis counts."""
        rows, total = selectors.theses_page(
            owner, scope=_scope(scope), limit=_limit(limit), offset=max(0, offset)
        )
        return {
            "items": [selectors.thesis_dict(t, antitheses=t.antithesis_count) for t in rows],
            "total": total,
        }

    @server.tool()
    @domain_tool
    def dialectic_syntheses(
        scope: str | None = None, limit: int = 50, offset: int = 0
    ) -> dict[str, Any]:
        """Syntheses ("T, except when C") with Q and its factors, output type and state."""
        rows, total = selectors.syntheses_page(
            owner, scope=_scope(scope), limit=_limit(limit), offset=max(0, offset)
        )
        return {"items": [selectors.synthesis_dict(s) for s in rows], "total": total}

    @server.tool()
    @domain_tool
    def dialectic_artifacts(scope: str | None = None) -> dict[str, Any]:
        """Published rules and skills of a scope (and the user scope), with their files."""
        return {"artifacts": selectors.delivery_list(owner, _scope(scope))}
