"""The MCP server, driven over stdio by the official SDK's own client."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from mcp import ClientSession, StdioServerParameters, stdio_client

from memory.errors import InvalidInput
from memory.models import AgentSession, ApiToken, Engram, Episode
from memory.services.engrams import engram_learn

TOOLS = {
    "learn", "recall", "inject", "feedback", "forget", "capture", "timeline", "session_start",
    "session_end", "status", "learning_signals", "learning_drafts", "learning_settings",
    "lesson_undo", "review_list", "review_decide", "review_decide_all",
    "dialectic_clusters", "dialectic_theses", "dialectic_syntheses", "dialectic_artifacts",
}  # fmt: skip
AWS_KEY = "AKIA" + "IOSFODNN7ABCDEFG"


def database_url() -> str:
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return "sqlite:///" + str(Path(db["NAME"]).resolve())
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def server_env(token: str) -> dict[str, str]:
    keep = ("PATH", "HOME", "DEBUG", "ENGRAM_DATA_DIR", "REDIS_URL", "LANG")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update({"DATABASE_URL": database_url(), "ENGRAM_TOKEN": token, "DEBUG": "1"})
    env["ENGRAM_DATA_DIR"] = str(settings.DATA_DIR)
    return env


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content:
        data: dict[str, Any] = result.structured_content
        return data.get("result", data) if set(data) == {"result"} else data
    parsed: dict[str, Any] = json.loads(result.content[0].text)
    return parsed


def error_text(result: Any) -> str:
    assert result.is_error
    text: str = result.content[0].text
    return text


@pytest.mark.django_db(transaction=True)
def test_the_mcp_tools_over_stdio(owner: Any, other_owner: Any) -> None:
    _, raw = ApiToken.issue(owner=owner, name="mcp", scopes=["global", "project:*"])
    engram_learn(owner=other_owner, statement="Bob's first lesson", source="user")
    # Ids are per owner: Bob's second engram has an id Alice never gets in this test.
    bobs = engram_learn(owner=other_owner, statement="Bob's private lesson", source="user").engram
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "engram_mcp"],
        env=server_env(raw),
        cwd=str(settings.BASE_DIR),
    )
    seen: dict[str, Any] = {}

    async def drive() -> None:
        with anyio.fail_after(90):
            await session_calls()

    async def session_calls() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            seen["tools"] = {tool.name for tool in listed.tools}

            learned = structured(
                await session.call_tool(
                    "learn",
                    {
                        "statement": "Run `alembic upgrade head` before starting the API.",
                        "scope": "project:api",
                        "direct_instruction": True,
                        "tags": ["alembic"],
                    },
                )
            )
            seen["learned"] = learned
            engram_id = learned["engram"]["id"]
            seen["secret"] = error_text(
                await session.call_tool("learn", {"statement": f"key {AWS_KEY}"})
            )
            seen["forbidden"] = error_text(
                await session.call_tool("learn", {"statement": "x", "scope": "agent:bot"})
            )
            seen["recall"] = structured(
                await session.call_tool("recall", {"query": "alembic upgrade", "limit": 3})
            )
            started = structured(
                await session.call_tool(
                    "session_start",
                    {"task": "start the API after running alembic", "scope": "project:api"},
                )
            )
            seen["started"] = started
            sid = started["session_id"]
            seen["inject"] = structured(
                await session.call_tool(
                    "inject", {"prompt": "alembic migrations upgrade", "session_id": sid}
                )
            )
            seen["feedback"] = structured(
                await session.call_tool(
                    "feedback", {"engram_id": engram_id, "signal": "positive", "session_id": sid}
                )
            )
            seen["bobs"] = error_text(
                await session.call_tool(
                    "feedback", {"engram_id": bobs.engram_id, "signal": "negative"}
                )
            )
            seen["capture"] = structured(
                await session.call_tool(
                    "capture", {"summary": "Migrated the API database.", "session_id": sid}
                )
            )
            seen["timeline"] = structured(
                await session.call_tool(
                    "timeline", {"q": "migrated", "since": "2020-01-01T00:00:00"}
                )
            )
            seen["ended"] = structured(
                await session.call_tool(
                    "session_end",
                    {"session_id": sid, "engram_suggestions": ["Seed the dev DB after migrating."]},
                )
            )
            seen["status"] = structured(await session.call_tool("status", {}))
            seen["forget"] = structured(await session.call_tool("forget", {"engram_id": engram_id}))

    # A fresh thread has no running event loop, whatever an earlier test (Playwright's sync
    # API keeps one running in the main thread) left behind.
    failure: list[BaseException] = []

    def run() -> None:
        try:
            anyio.run(drive)
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if failure:
        raise failure[0]

    assert seen["tools"] >= TOOLS  # other apps (patterns, ...) add their own tools
    assert seen["learned"]["outcome"] == "created"
    assert seen["learned"]["engram"]["status"] == "active"
    assert "secret_detected:" in seen["secret"]
    assert AWS_KEY not in seen["secret"]
    assert "scope_forbidden:" in seen["forbidden"]
    engram_id = seen["learned"]["engram"]["id"]
    assert seen["recall"]["results"][0]["engram"]["id"] == engram_id
    assert "fused" in seen["recall"]["results"][0]["components"]
    assert engram_id in seen["started"]["injection"]["rendered"]
    assert engram_id in seen["inject"]["rendered"]
    assert seen["feedback"]["engram"]["counters"]["feedback_positive"] == 1
    assert "not_found:" in seen["bobs"]
    assert seen["capture"]["id"].startswith("EP-")
    assert [e["summary"] for e in seen["timeline"]["episodes"]] == ["Migrated the API database."]
    assert seen["ended"]["ended"] is True and len(seen["ended"]["learned"]) == 1
    assert seen["status"]["token"] == {"name": "mcp", "scopes": ["global", "project:*"]}
    assert seen["forget"] == {"id": engram_id, "status": "retired", "changed": True}

    # The tools wrote through the same services as the API.
    assert Engram.objects.get(owner=owner, engram_id=engram_id).status == "retired"
    assert AgentSession.objects.get(owner=owner).ended_at is not None
    assert Episode.objects.get(owner=owner).session is not None
    assert Engram.objects.get(pk=bobs.pk).feedback_negative == 0


@pytest.mark.django_db
@pytest.mark.parametrize("value", [None, "", "eng_not-a-token-at-all"])
def test_the_mcp_server_refuses_to_start_without_a_valid_token(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("ENGRAM_TOKEN", raising=False)
    else:
        monkeypatch.setenv("ENGRAM_TOKEN", value)
    with pytest.raises(CommandError, match="ENGRAM_TOKEN"):
        call_command("engram_mcp")


@pytest.mark.django_db
def test_another_apps_tools_join_every_server(token: str) -> None:
    from memory.integrations import mcp

    def provider(server: Any, api_token: Any) -> None:
        @server.tool()
        @mcp.domain_tool
        def shout(text: str) -> dict[str, Any]:
            """Echo loudly."""
            if not text:
                raise InvalidInput("text", "must not be empty")
            return {"text": text.upper(), "owner": api_token.owner.username}

    mcp.tools_register(provider)
    mcp.tools_register(provider)
    try:
        server = mcp.build_server(ApiToken.authenticate(token))
        names = [tool.name for tool in anyio.run(server.list_tools)]
        assert names.count("shout") == 1
    finally:
        mcp.TOOL_PROVIDERS.remove(provider)
    again = mcp.build_server(ApiToken.authenticate(token))
    assert "shout" not in [tool.name for tool in anyio.run(again.list_tools)]
