"""Dialectic's MCP tools join every Engram MCP server and read what REST reads."""

from __future__ import annotations

import json
import threading
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver.exceptions import ToolError

from dialectic.services import consolidation as stages
from memory.integrations import mcp
from memory.models import ApiToken
from tests.dialectic.helpers import plant

# The tools run in a worker thread with its own connection: the data must be committed.
pytestmark = pytest.mark.django_db(transaction=True)


def call(server: Any, name: str, arguments: dict[str, Any]) -> Any:
    """Call a tool from a fresh thread: it has no running event loop, whatever an earlier test
    (Playwright's sync API keeps one in the main thread) left behind."""
    outcome: dict[str, Any] = {}

    async def run() -> Any:
        return await server.call_tool(name, arguments)

    def worker() -> None:
        try:
            outcome["result"] = anyio.run(run)
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


def test_the_dialectic_tools_list_theses_and_syntheses(owner: Any) -> None:
    plant(owner, habit=6, exceptions=6)
    stages.consolidate(owner=owner)
    token, _ = ApiToken.issue(owner=owner, name="mcp")
    server = mcp.build_server(token)
    theses = data(call(server, "dialectic_theses", {}))
    assert theses["total"] >= 1
    assert any(t["expected_sequence"][-1] == "Read" for t in theses["items"])
    syntheses = data(call(server, "dialectic_syntheses", {"scope": "project:shop"}))
    assert any(s["condition"] for s in syntheses["items"])
    assert data(call(server, "dialectic_clusters", {"limit": 1}))["items"]
    assert data(call(server, "dialectic_artifacts", {"scope": "project:shop"}))["artifacts"] == []


def test_a_bad_scope_is_a_tool_error(owner: Any) -> None:
    token, _ = ApiToken.issue(owner=owner, name="mcp")
    server = mcp.build_server(token)
    with pytest.raises(ToolError, match="validation_error"):
        call(server, "dialectic_theses", {"scope": "not a scope"})
