"""The pattern tools over MCP stdio, driven by the official SDK's client."""

from __future__ import annotations

import sys
import threading
from typing import Any

import anyio
import pytest
from django.conf import settings
from mcp import ClientSession, StdioServerParameters, stdio_client

from memory.models import ApiToken
from tests.memory.test_mcp import error_text, server_env, structured
from tests.patterns.helpers import HONEST_CODE, make_pattern

PATTERN_TOOLS = {
    "patterns_learn", "patterns_recall", "patterns_evaluate", "patterns_evaluation",
    "patterns_refine", "patterns_reused", "patterns_feedback", "patterns_compose",
    "patterns_composition", "patterns_promote",
}  # fmt: skip


@pytest.mark.sqlite
@pytest.mark.django_db(transaction=True)
def test_the_pattern_tools_over_stdio(owner: Any, other_owner: Any) -> None:
    _, raw = ApiToken.issue(owner=owner, name="mcp")
    theirs = make_pattern(other_owner)
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "engram_mcp"],
        env=server_env(raw),
        cwd=str(settings.BASE_DIR),
    )
    seen: dict[str, Any] = {}

    async def calls() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            seen["tools"] = {tool.name for tool in (await session.list_tools()).tools}
            learned = structured(
                await session.call_tool(
                    "patterns_learn",
                    {"task": "Slugify a title for a URL", "eval_score": 8, "code": HONEST_CODE},
                )
            )
            seen["learned"] = learned
            key = learned["key"]
            seen["refined"] = structured(
                await session.call_tool("patterns_refine", {"key": key, "eval_score": 6})
            )
            seen["recall"] = structured(
                await session.call_tool("patterns_recall", {"task": "make a URL slug"})
            )
            seen["reused"] = structured(await session.call_tool("patterns_reused", {"key": key}))
            seen["evaluated"] = structured(
                await session.call_tool("patterns_evaluate", {"pattern_key": key})
            )
            seen["feedback"] = structured(
                await session.call_tool("patterns_feedback", {"task": "make a URL slug"})
            )
            seen["cycle"] = error_text(
                await session.call_tool(
                    "patterns_compose",
                    {
                        "task": "t",
                        "stages": [
                            {"name": "a", "inputs": ["y"], "outputs": ["x"]},
                            {"name": "b", "inputs": ["x"], "outputs": ["y"]},
                        ],
                    },
                )
            )
            seen["theirs"] = error_text(
                await session.call_tool("patterns_reused", {"key": theirs.key})
            )
            seen["empty"] = error_text(await session.call_tool("patterns_recall", {"task": ""}))

    failure: list[BaseException] = []

    def run() -> None:
        try:
            anyio.run(calls)
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    assert seen["tools"] >= PATTERN_TOOLS
    assert seen["learned"]["outcome"] == "created"
    assert seen["refined"]["quality_multiplier"] == pytest.approx(0.85)  # median(8 learned, 6)
    assert seen["recall"]["results"][0]["key"] == seen["learned"]["key"]
    assert seen["reused"]["reuse_count"] == 1
    assert seen["evaluated"]["source"] == "rubric"
    assert seen["evaluated"]["score"] == 10.0
    assert seen["feedback"]["issues"] == []
    assert "pipeline_invalid: stage 'a', field 'y'" in seen["cycle"]
    assert "not_found:" in seen["theirs"]
    assert "validation_error: task" in seen["empty"]
