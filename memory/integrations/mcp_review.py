"""MCP tools over the review queue: list, decide, restore, decide all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer

from memory.access import (
    actor_of,
    require_scope,
)
from memory.models import ApiToken


def review_tools(server: MCPServer, token: ApiToken, domain_tool: Callable[[Any], Any]) -> None:
    """Register the review tools for `token` on `server`, each wrapped with `domain_tool`."""
    owner = token.owner
    actor = actor_of(token)

    @server.tool()
    @domain_tool
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
    @domain_tool
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
    @domain_tool
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
    @domain_tool
    def review_decide_all(action: Literal["approve", "defer"]) -> dict[str, Any]:
        """Approve or defer every undecided item of today's review batch that offers it."""
        from memory.services import review as review_services

        require_scope(token, "*")
        return {
            "decided": review_services.review_decide_all(owner=owner, action=action, actor=actor)
        }
