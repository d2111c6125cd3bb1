"""Per-project status: GET /api/v1/status, the MCP status tool and the overview's projects
panel read the same rows (memory.status) and the same health rule."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.integrations.mcp import build_server
from memory.models import AgentSession, ApiToken
from memory.services.engrams import engram_learn
from memory.services.history import IMPORT_AGENT
from memory.services.sessions import session_start
from memory.status import claude_folder_name, projects_status

CWD = "/home/dev/shop"


def hooked_session(
    owner: Any, sid: str, *, hours_ago: float, cwd: str = CWD, transcript: str = ""
) -> AgentSession:
    """A session whose hooks last arrived `hours_ago` (its Stop)."""
    started = timezone.now() - timedelta(hours=hours_ago, minutes=30)
    name = cwd.rstrip("/").rsplit("/", 1)[-1]
    session = session_start(
        owner=owner,
        session_id=sid,
        scope=f"project:{name}",
        agent="claude-code",
        cwd=cwd,
        now=started,
    )
    AgentSession.objects.filter(pk=session.pk).update(
        ended_at=started + timedelta(minutes=30), transcript_path=transcript
    )
    return session


def test_status_lists_each_project_with_its_last_hook_and_lessons(api: Client, owner: Any) -> None:
    hooked_session(owner, "s1", hours_ago=2)
    engram_learn(
        owner=owner, statement="Use pnpm in this repo.", scope="project:shop", source="user"
    )
    engram_learn(owner=owner, statement="Run the linter first.", scope="project:shop")
    body = api.get("/api/v1/status").json()
    [project] = body["projects"]
    assert project["scope"] == "project:shop"
    assert project["last_hook_at"] is not None
    assert project["lessons"] == {"yours": 1, "learned": 0, "waiting": 1}
    assert project["health"]["state"] == "ok"
    assert body["lessons"] == {"yours": 1, "learned": 0, "waiting": 1}
    assert set(body) >= {"worker", "queue", "embedder", "llm", "engrams", "token"}
    assert body["llm"]["key_set"] is False


def test_status_maps_a_folder_to_the_scope_its_hooks_use(api: Client) -> None:
    body = api.get("/api/v1/status", {"cwd": "/home/dev/My Shop"}).json()
    assert body["project_scope"] == "project:My-Shop"


def test_a_token_limited_to_one_project_never_sees_the_others(owner: Any) -> None:
    hooked_session(owner, "s1", hours_ago=1)
    hooked_session(owner, "s2", hours_ago=1, cwd="/home/dev/secret")
    _, raw = ApiToken.issue(owner=owner, name="shop-only", scopes=["project:shop"])
    body = Client(headers={"Authorization": f"Bearer {raw}"}).get("/api/v1/status").json()
    assert [p["scope"] for p in body["projects"]] == ["project:shop"]


def test_a_project_whose_transcript_moved_on_without_hooks_turns_red(
    api: Client, owner: Any, tmp_path: Path, settings: Any
) -> None:
    settings.ENGRAM_TRANSCRIPT_DIRS = (str(tmp_path),)
    folder = tmp_path / claude_folder_name(CWD)
    folder.mkdir()
    transcript = folder / "s1.jsonl"
    transcript.write_text("{}\n")
    hooked_session(owner, "s1", hours_ago=5, transcript=str(transcript))
    os.utime(transcript)  # Claude Code wrote to it just now: a session ran, no hook came
    [project] = api.get("/api/v1/status").json()["projects"]
    assert project["health"]["state"] == "stopped"
    assert "transcript" in project["health"]["reason"]


def test_transcripts_outside_the_allowed_folders_are_never_looked_at(
    api: Client, owner: Any, tmp_path: Path, settings: Any
) -> None:
    settings.ENGRAM_TRANSCRIPT_DIRS = (str(tmp_path / "allowed"),)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "s1.jsonl").write_text("{}\n")
    hooked_session(owner, "s1", hours_ago=5, transcript=str(elsewhere / "s1.jsonl"))
    [project] = api.get("/api/v1/status").json()["projects"]
    assert project["health"]["state"] == "ok"


def test_revoking_the_token_the_hooks_used_turns_the_project_red(owner: Any) -> None:
    hooked_session(owner, "s1", hours_ago=3)
    token, _ = ApiToken.issue(owner=owner, name="claude-code")
    last = timezone.now() - timedelta(hours=3)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=last)
    token.refresh_from_db()
    token.revoke()
    [project] = projects_status(owner=owner)
    assert project.health.red and "revoked" in project.health.reason


def test_imported_history_lists_its_lessons_but_says_nothing_about_hooks(owner: Any) -> None:
    session_start(owner=owner, session_id="old", scope="project:shop", agent=IMPORT_AGENT)
    assert projects_status(owner=owner) == []  # no hook, no capture: nothing to show


def test_the_mcp_status_tool_returns_the_same_projects(owner: Any) -> None:
    hooked_session(owner, "s1", hours_ago=1)
    token, _ = ApiToken.issue(owner=owner, name="mcp")
    tool = build_server(token)._tool_manager.get_tool("status")
    assert tool is not None
    # The tool's own function (without the wrapper that recycles connections), in this thread
    # and this test's transaction.
    body = tool.fn.__wrapped__()
    assert [p["scope"] for p in body["projects"]] == ["project:shop"]
    assert "worker" in body and "queue" in body


def test_the_overview_shows_each_projects_hooks_and_explains_red(
    logged_in: Client, owner: Any, tmp_path: Path, settings: Any
) -> None:
    settings.ENGRAM_TRANSCRIPT_DIRS = (str(tmp_path),)
    hooked_session(owner, "s1", hours_ago=1)
    folder = tmp_path / claude_folder_name("/home/dev/api")
    folder.mkdir()
    (folder / "x.jsonl").write_text("{}\n")
    hooked_session(
        owner, "s2", hours_ago=6, cwd="/home/dev/api", transcript=str(folder / "x.jsonl")
    )
    body = logged_in.get("/").content.decode()
    assert "Last hook received" in body and "Last lesson captured" in body
    assert "project:shop" in body and "project:api" in body
    assert 'class="row-bad"' in body and body.count('class="row-bad"') == 1
    assert "1 project not reaching Engram" in body
    assert "When does a project turn red?" in body


def test_the_overview_says_what_to_do_when_no_project_is_connected(logged_in: Client) -> None:
    body = logged_in.get("/").content.decode()
    assert "engram import-history" in body and "engram setup claude-code" in body


def test_the_projects_panel_query_count_does_not_grow_with_projects(
    logged_in: Client, owner: Any
) -> None:
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert logged_in.get("/").status_code == 200
        return len(queries)

    for i in range(2):
        hooked_session(owner, f"a{i}", hours_ago=0.5, cwd=f"/home/dev/p{i}")
    count()  # warm the per-process caches the rest of the page keeps
    few = count()
    for i in range(2, 8):
        hooked_session(owner, f"a{i}", hours_ago=0.5, cwd=f"/home/dev/p{i}")
    assert count() == few
