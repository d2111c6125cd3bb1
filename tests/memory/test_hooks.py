"""Claude Code hooks: the HTTP endpoint, the command client and the settings command.

Golden tests replay every payload of ../shared/eval-data/claude_code_hooks/inputs/ through the
endpoint and through `engram-hook`, and check the answers against the documented output shapes.
"""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import time
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from memory.integrations import hookclient
from memory.integrations.claude_code import MAX_CONTEXT_CHARS, project_scope
from memory.management.commands.engram_claude_setup import merge_settings
from memory.maths.attribution import trigger_matches
from memory.models import AgentSession, ApiToken, Injection, Observation

HOOKS_DIR = Path(django_settings.BASE_DIR).parent / "shared" / "eval-data" / "claude_code_hooks"
INPUTS = sorted((HOOKS_DIR / "inputs").glob("*.json")) if HOOKS_DIR.is_dir() else []
CONTEXT_EVENTS = {"SessionStart", "UserPromptSubmit", "PreToolUse"}
SESSION = "3f6c1b2e-8d4a-4c1e-9a57-0b2d9e6f7a10"
URL = "/api/v1/hooks/claude-code"

ENUM_LESSON = (
    "Postgres enum ADD VALUE cannot run in the same transaction; ship it in an earlier deploy."
)
GH_LESSON = "Don't pass --repo to gh inside a git checkout; gh detects the repo from the remote."
MYREPO_LESSON = "In myrepo, run `npm test` before every push."

needs_fixtures = pytest.mark.skipif(
    not INPUTS, reason=f"Claude Code hook fixtures not found in {HOOKS_DIR} (eval-data absent)"
)


def payload(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HOOKS_DIR / "inputs" / name).read_text())
    return data


def hook(client: Client, body: dict[str, Any], query: str = "") -> Any:
    return client.post(URL + query, body, content_type="application/json")


@pytest.fixture
def seeded(api: Client) -> dict[str, str]:
    ids = {}
    for key, statement, scope, extra in [
        ("enum", ENUM_LESSON, "project:myrepo", {}),
        ("gh", GH_LESSON, "global", {"polarity": "dont"}),
        ("myrepo", MYREPO_LESSON, "project:myrepo", {}),
    ]:
        response = api.post(
            "/api/v1/engrams",
            {"statement": statement, "scope": scope, "source": "user", **extra},
            content_type="application/json",
        )
        ids[key] = response.json()["engram"]["id"]
    response = api.patch(
        f"/api/v1/engrams/{ids['gh']}",
        {"enforcement": "reminder", "trigger_context": "gh --repo"},
        content_type="application/json",
    )
    assert response.status_code == HTTPStatus.OK
    return ids


def assert_documented_shape(event: str, answer: Any) -> None:
    """What the hook README allows Engram to answer for `event`."""
    assert isinstance(answer, dict)
    if event not in CONTEXT_EVENTS:
        assert answer == {}, f"{event} must answer {{}}, got {answer}"
        return
    if not answer:
        return
    assert set(answer) == {"hookSpecificOutput"}, "nothing at top level that Claude Code ignores"
    specific = answer["hookSpecificOutput"]
    assert set(specific) == {"hookEventName", "additionalContext"}
    assert specific["hookEventName"] == event
    assert isinstance(specific["additionalContext"], str)
    assert 0 < len(specific["additionalContext"]) < 10_000
    example = (
        HOOKS_DIR / "outputs" / (event + (".context" if event == "PreToolUse" else "") + ".json")
    )
    documented = json.loads(example.read_text())
    assert set(documented) == set(answer)
    assert set(documented["hookSpecificOutput"]) == set(specific)


# --- golden: the endpoint -----------------------------------------------------------------


@needs_fixtures
@pytest.mark.django_db
@pytest.mark.parametrize("path", INPUTS, ids=[p.stem for p in INPUTS])
def test_every_fixture_gets_its_documented_shape(
    api: Client, seeded: dict[str, str], path: Path
) -> None:
    body = json.loads(path.read_text())
    response = hook(api, body)
    assert response.status_code == HTTPStatus.OK, response.content
    assert_documented_shape(body["hook_event_name"], response.json())


@pytest.mark.sqlite
@needs_fixtures
@pytest.mark.django_db
def test_a_whole_session_replayed_in_order(
    api: Client, seeded: dict[str, str], django_capture_on_commit_callbacks: Any
) -> None:
    start = hook(api, payload("SessionStart.startup.json")).json()
    brief = start["hookSpecificOutput"]["additionalContext"]
    # The brief: every rule the user stated for this project and globally, the project's first.
    assert all(seeded[key] in brief for key in ("myrepo", "enum", "gh"))
    assert brief.index(seeded["enum"]) < brief.index(seeded["gh"])
    session = AgentSession.objects.get(session_id=SESSION)
    assert (session.scope, session.agent, session.cwd) == (
        "project:myrepo",
        "claude-code",
        "/home/dev/myrepo",
    )

    # The prompt is about the enum rule, which the brief has already delivered: nothing again.
    assert hook(api, payload("UserPromptSubmit.json")).json() == {}
    assert Injection.objects.filter(session=session, engram__engram_id=seeded["enum"]).exists()

    reminder = hook(api, payload("PreToolUse.Bash.json")).json()
    assert seeded["gh"] in reminder["hookSpecificOutput"]["additionalContext"]
    assert "IMPORTANT" in reminder["hookSpecificOutput"]["additionalContext"]
    assert hook(api, payload("PreToolUse.Edit.json")).json() == {}

    for name in ("PostToolUse.Bash.json", "PostToolUse.Write.json", "PostToolUseFailure.Bash.json"):
        assert hook(api, payload(name)).json() == {}
    observations = list(Observation.objects.filter(session=session).order_by("pk"))
    assert [(o.tool, o.success) for o in observations] == [
        ("Bash", True),
        ("Write", True),
        ("Bash", False),
    ]
    assert "mismatched types" in observations[2].tool_output
    assert all(o.embedding is None and o.processed_at is None for o in observations)

    with django_capture_on_commit_callbacks() as callbacks:
        assert hook(api, payload("Stop.json")).json() == {}
    session.refresh_from_db()
    assert session.ended_at is not None
    assert session.last_assistant_message.startswith("Fixed: the enum value")
    # Outcome attribution and the transcript capture are queued.
    queued = sorted(callback.task_name for callback in callbacks)
    assert queued == ["engram.attribute_session", "engram.learning_capture"]

    # The user keeps going: the next prompt reopens the session, the next end queues again.
    hook(api, payload("UserPromptSubmit.json"))
    session.refresh_from_db()
    assert session.ended_at is None
    assert hook(api, payload("SubagentStop.json")).json() == {}
    assert hook(api, payload("PreCompact.json")).json() == {}
    compact = hook(api, payload("SessionStart.compact.json")).json()
    assert seeded["enum"] in compact["hookSpecificOutput"]["additionalContext"]  # the brief again
    with django_capture_on_commit_callbacks() as callbacks:
        assert hook(api, payload("SessionEnd.json")).json() == {}
    assert sorted(c.task_name for c in callbacks) == [
        "engram.attribute_session",
        "engram.learning_capture",
    ]
    assert AgentSession.objects.count() == 1


@pytest.mark.django_db
def test_unknown_events_get_an_empty_200(api: Client) -> None:
    for event in ("Notification", "SomethingNew", "PostCompact"):
        response = hook(api, {"hook_event_name": event, "session_id": "s1", "cwd": "/x/y"})
        assert response.status_code == HTTPStatus.OK
        assert response.json() == {}
    assert not AgentSession.objects.exists()
    assert hook(api, {"session_id": "s1"}).status_code == HTTPStatus.UNPROCESSABLE_ENTITY


@pytest.mark.sqlite
@pytest.mark.django_db
def test_post_tool_use_redacts_and_stores_without_embedding(api: Client) -> None:
    key = "AKIA" + "IOSFODNN7ABCDEFG"
    body = {
        "hook_event_name": "PostToolUse",
        "session_id": "s-redact",
        "cwd": "/home/dev/api",
        "tool_name": "Bash",
        "tool_input": {"command": f"AWS_ACCESS_KEY_ID={key} aws s3 ls"},
        "tool_response": {"stdout": "\u0000bucket", "stderr": ""},
    }
    assert hook(api, body).json() == {}
    observation = Observation.objects.get()
    assert key not in observation.tool_input
    assert observation.redacted == ["aws_access_key"]
    assert observation.session.scope == "project:api"


@pytest.mark.django_db
def test_the_scope_comes_from_the_query_or_the_token(owner: Any, api: Client) -> None:
    body = {"hook_event_name": "PostToolUse", "cwd": "/w/myrepo", "tool_name": "Read"}
    hook(api, {**body, "session_id": "q"}, "?scope=project:other")
    assert AgentSession.objects.get(session_id="q").scope == "project:other"
    assert hook(api, {**body, "session_id": "bad"}, "?scope=nope").status_code == 422

    _, raw = ApiToken.issue(owner=owner, name="narrow", scopes=["project:fixed"])
    narrow = Client(headers={"Authorization": f"Bearer {raw}"})
    hook(narrow, {**body, "session_id": "n"})
    assert AgentSession.objects.get(session_id="n").scope == "project:fixed"
    forbidden = hook(narrow, {**body, "session_id": "f"}, "?scope=project:myrepo")
    assert forbidden.status_code == HTTPStatus.FORBIDDEN
    assert forbidden.json()["code"] == "scope_forbidden"


@pytest.mark.django_db
def test_context_stays_under_ten_thousand_characters(api: Client) -> None:
    for i in range(12):
        api.post(
            "/api/v1/engrams",
            {
                "statement": f"Deploy checklist item {i}: " + "verify the rollout carefully " * 12,
                "source": "user",
                "tags": [f"deploy{i}"],
            },
            content_type="application/json",
        )
    body = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": "long",
        "cwd": "/w/x",
        "prompt": "deploy checklist rollout verify " * 200,
    }
    answer = hook(api, body).json()
    assert len(answer["hookSpecificOutput"]["additionalContext"]) <= MAX_CONTEXT_CHARS


def test_triggers_match_whole_tokens() -> None:
    def fires(trigger: str, tool_input: str, statement: str = "") -> bool:
        return trigger_matches(trigger_context=trigger, statement=statement, tool_input=tool_input)

    assert fires("gh --repo", '{"command": "gh issue view 514 --repo acme/myrepo"}')
    assert not fires("gh --repo", '{"command": "github --repository x"}')
    assert not fires("gh --repo", '{"file_path": "/home/dev/myrepo/a.sql"}')
    assert fires("npm publish, git push --force", "git push --force origin main")
    assert fires("DROP TABLE", "drop table users;")
    # Without a trigger, the statement's key terms decide.
    assert fires("", "alembic upgrade head", statement="Run `alembic upgrade` before starting.")
    assert not fires("", "ls -la", statement="Run `alembic upgrade` before starting.")


def test_project_scope_from_cwd() -> None:
    assert project_scope("/home/dev/myrepo") == "project:myrepo"
    assert project_scope("/home/dev/my repo/") == "project:my-repo"
    assert project_scope("C:\\Users\\dev\\web") == "project:web"
    assert project_scope("/") == "global"
    assert project_scope(None) == "global"


@pytest.mark.parametrize(
    ("cwd", "scope"),
    [
        ("/Users/al/workspace/cli/.worktrees/1", "project:cli"),
        ("/Users/al/workspace/cli/.worktrees/al/fix-the-flag/cmd", "project:cli"),
        ("/home/dev/shop/.claude/worktrees/feature-x", "project:shop"),
        ("/home/dev/shop.worktrees/feature-x", "project:shop"),
        ("/Users/m/conductor/workspaces/chkit/davao", "project:chkit"),
        ("/Users/m/conductor/workspaces/chkit/davao/packages/core", "project:chkit"),
        ("/Users/m/conductor/workspaces/chkit", "project:chkit"),
        ("/Users/ro/.warp/worktrees/monodreams/feat/level-editor", "project:monodreams"),
        ("/Users/ro/.warp/worktrees/monodreams/issue-36/src", "project:monodreams"),
        ("/home/dev/worktrees", "project:worktrees"),  # a project of that name, not a layout
        ("/home/dev/shop/worktrees/feature-x", "project:shop"),
        # a folder of every repository's worktrees, one each (and the checkout inside)
        ("/home/eli/code/worktrees/shop/brisk-beam/shop", "project:shop"),
        ("/Users/al/projects/wt/skills/experiment", "project:skills"),
        ("/Users/al/wt/feature-x", "project:feature-x"),
        # anything under a repository's git folder belongs to it
        ("/home/y/src/repiq/.git/wt/feat/npm-provider", "project:repiq"),
        ("/home/y/src/repiq/.git/worktrees/fix", "project:repiq"),
        ("C:\\Users\\m\\repos\\nomos\\.claude\\worktrees\\issue-254", "project:nomos"),
        ("/home/dev/my-worktree/src", "project:src"),
    ],
)
def test_every_worktree_of_a_repository_is_one_project(cwd: str, scope: str) -> None:
    assert project_scope(cwd) == scope


def test_the_checkout_root_the_client_sends_names_the_project() -> None:
    assert project_scope("/home/dev/shop/apps/api", "/home/dev/shop") == "project:shop"
    assert project_scope("/tmp/wt-17", "/home/dev/shop") == "project:shop"
    assert project_scope("/home/dev/shop/apps/api", "") == "project:api"
    assert project_scope("/home/dev/shop/apps/api", 42) == "project:api"
    assert project_scope("/home/dev/shop", "x" * 5000) == "project:shop"


@pytest.mark.django_db
def test_a_hook_from_a_worktree_subfolder_writes_into_its_repository(api: Client) -> None:
    body = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": "wt",
        "cwd": "/tmp/wt-17/apps/api",
        "engram_project_root": "/home/dev/shop",
        "prompt": "hello",
    }
    assert hook(api, body).status_code == HTTPStatus.OK
    assert AgentSession.objects.get(session_id="wt").scope == "project:shop"


def test_the_command_client_names_the_checkout_of_a_worktree(tmp_path: Path) -> None:
    def git(*args: str, cwd: Path) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

    main = tmp_path / "shop"
    (main / "apps" / "api").mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=main)
    git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "0",
        cwd=main)  # fmt: skip
    git("worktree", "add", "-q", str(tmp_path / "wt-1"), cwd=main)
    (tmp_path / "wt-1" / "src").mkdir()
    for where in (main, main / "apps" / "api", tmp_path / "wt-1", tmp_path / "wt-1" / "src"):
        assert hookclient.project_root(str(where)) == str(main.resolve()), where
    assert hookclient.project_root(str(tmp_path)) == ""  # not a checkout
    assert hookclient.project_root(str(tmp_path / "missing")) == ""
    env = {"ENGRAM_HOOK_STATE": str(tmp_path / "state")}
    data: dict[str, object] = {"hook_event_name": "PreToolUse", "cwd": str(tmp_path / "wt-1")}
    hookclient.attach_root(data, env)
    assert data["engram_project_root"] == str(main.resolve())
    # remembered per folder: the next event reads it without asking git
    subprocess.run(["git", "worktree", "remove", "--force", str(tmp_path / "wt-1")], cwd=main)
    again: dict[str, object] = {"cwd": str(tmp_path / "wt-1")}
    hookclient.attach_root(again, env)
    assert again["engram_project_root"] == str(main.resolve())


# --- golden: the command client against a live server -------------------------------------


def run_client(stdin: bytes, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "memory.integrations.hookclient"],
        input=stdin,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", **env},
        cwd=django_settings.BASE_DIR,
        timeout=30,
        check=False,
    )


@needs_fixtures
@pytest.mark.django_db(transaction=True)
def test_every_fixture_through_the_command_client(live_server: Any, owner: Any) -> None:
    _, raw = ApiToken.issue(owner=owner, name="hook")
    Client(headers={"Authorization": f"Bearer {raw}"}).post(
        "/api/v1/engrams",
        {"statement": ENUM_LESSON, "scope": "project:myrepo", "source": "user"},
        content_type="application/json",
    )
    env = {"ENGRAM_URL": live_server.url, "ENGRAM_TOKEN": raw, "ENGRAM_HOOK_TIMEOUT": "20"}
    answered = set()
    for path in INPUTS:
        result = run_client(path.read_bytes(), env)
        assert result.returncode == 0, result.stderr
        event = json.loads(path.read_text())["hook_event_name"]
        out = result.stdout.decode().strip()
        answer = json.loads(out) if out else {}
        assert_documented_shape(event, answer)
        if answer:
            answered.add(event)
    assert "SessionStart" in answered  # the enum rule reached the agent in the brief
    assert Observation.objects.filter(session__session_id=SESSION).count() == 3


def test_the_command_client_is_silent_when_the_server_is_down() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    stdout = io.StringIO()
    code = hookclient.main(
        stdin=io.BytesIO(b'{"hook_event_name": "UserPromptSubmit", "prompt": "hi"}'),
        stdout=stdout,
        env={"ENGRAM_URL": f"http://127.0.0.1:{port}", "ENGRAM_TOKEN": "x"},
    )
    assert (code, stdout.getvalue()) == (0, "")


def test_the_command_client_gives_up_on_a_slow_server_within_its_timeout() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)  # accepts the connection, never answers
        started = time.monotonic()
        result = run_client(
            b'{"hook_event_name": "UserPromptSubmit", "prompt": "hi"}',
            {
                "ENGRAM_URL": f"http://127.0.0.1:{server.getsockname()[1]}",
                "ENGRAM_HOOK_TIMEOUT": "0.5",
            },
        )
        elapsed = time.monotonic() - started
    assert result.returncode == 0
    assert result.stdout == b""
    assert elapsed < 5


def test_the_command_client_ignores_garbage_on_stdin() -> None:
    stdout = io.StringIO()
    assert hookclient.main(stdin=io.BytesIO(b"not json"), stdout=stdout, env={}) == 0
    assert stdout.getvalue() == ""


# --- engram_claude_setup ------------------------------------------------------------------


def setup_command(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("engram_claude_setup", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.django_db
def test_setup_prints_http_hooks_and_a_fresh_token(owner: Any) -> None:
    out, err = setup_command("--user", "alice", "--url", "http://127.0.0.1:9000")
    config = json.loads(out)
    events = set(config["hooks"])
    assert events == {
        "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
        "Stop", "SessionEnd", "PreCompact",
    }  # fmt: skip
    entry = config["hooks"]["PostToolUse"][0]
    assert entry["matcher"] == "*"
    handler = entry["hooks"][0]
    assert handler == {
        "type": "http",
        "url": "http://127.0.0.1:9000/api/v1/hooks/claude-code",
        "headers": {"Authorization": "Bearer $ENGRAM_TOKEN"},
        "allowedEnvVars": ["ENGRAM_TOKEN"],
        "timeout": 5,
    }
    assert "matcher" not in config["hooks"]["UserPromptSubmit"][0]
    raw = err.split("export ENGRAM_TOKEN=")[1].strip()
    token = ApiToken.authenticate(raw)
    assert token is not None and token.owner == owner and token.name == "claude-code"
    assert raw not in out  # the settings only name the variable


@pytest.mark.django_db
def test_setup_merges_into_project_settings_idempotently(owner: Any, tmp_path: Path) -> None:
    settings_path = tmp_path / ".claude" / "settings.json"
    settings_path.parent.mkdir()
    user_hook = {"type": "command", "command": "prettier --write ."}
    settings_path.write_text(
        json.dumps(
            {
                "model": "opus",
                "permissions": {"allow": ["Bash(npm test)"]},
                "hooks": {
                    "PostToolUse": [{"matcher": "Write", "hooks": [user_hook]}],
                    "Notification": [{"hooks": [{"type": "command", "command": "notify"}]}],
                },
            }
        )
    )
    setup_command("--user", "alice", "--project", str(tmp_path))
    first = settings_path.read_text()
    merged = json.loads(first)
    assert merged["model"] == "opus"
    assert merged["permissions"] == {"allow": ["Bash(npm test)"]}
    assert merged["hooks"]["Notification"] == [
        {"hooks": [{"type": "command", "command": "notify"}]}
    ]
    post = merged["hooks"]["PostToolUse"]
    assert post[0] == {"matcher": "Write", "hooks": [user_hook]}
    assert post[1]["hooks"][0]["type"] == "http"
    assert len(post) == 2

    setup_command("--user", "alice", "--project", str(tmp_path))
    assert settings_path.read_text() == first  # idempotent

    setup_command("--user", "alice", "--project", str(tmp_path), "--command")
    switched = json.loads(settings_path.read_text())
    handlers = [h for g in switched["hooks"]["PostToolUse"] for h in g["hooks"]]
    assert [h["type"] for h in handlers] == ["command", "command"]
    assert "engram-hook" in handlers[1]["command"]
    assert handlers[1]["timeout"] == 5


def test_merge_replaces_engram_entries_sharing_a_group_with_the_users() -> None:
    ours = {"type": "http", "url": "http://old:1/api/v1/hooks/claude-code"}
    theirs = {"type": "command", "command": "lint"}
    current = {"hooks": {"Stop": [{"hooks": [theirs, ours]}, {"hooks": [dict(ours)]}]}}
    config = {"hooks": {"Stop": [{"hooks": [{"type": "http", "url": "http://new:2" + URL}]}]}}
    merged = merge_settings(current, config)
    assert merged["hooks"]["Stop"] == [
        {"hooks": [theirs, {"type": "http", "url": "http://new:2" + URL}]}
    ]


@pytest.mark.django_db
def test_setup_refuses_broken_settings_and_unknown_users(owner: Any, tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{not json")
    with pytest.raises(CommandError, match="not valid JSON"):
        setup_command("--user", "alice", "--project", str(tmp_path))
    with pytest.raises(CommandError, match="No user"):
        setup_command("--user", "nobody")
    with pytest.raises(CommandError):
        setup_command("--user", "alice", "--scope", "not a scope")
    assert not ApiToken.objects.filter(name="claude-code").exists()


@pytest.mark.parametrize(
    "tool_input",
    [
        "git push --force origin main",
        "git push origin main",
        "gh pr create --fill",
        "git push --force-with-lease",
        "echo github --force",
    ],
)
def test_a_reminder_and_its_outcome_agree_on_the_same_input(tool_input: str) -> None:
    from memory.maths.attribution import attribute

    for trigger in ("git push --force", ""):
        statement = "Never git push --force to main"
        fired = trigger_matches(trigger_context=trigger, statement=statement, tool_input=tool_input)
        verdict = attribute(
            statement=statement, polarity="dont", inputs=[tool_input], trigger_context=trigger
        )
        assert fired == (verdict.result == "contradicted"), (trigger, tool_input, verdict)


@pytest.mark.django_db
def test_post_tool_use_repeats_a_reminder_whose_trigger_the_call_matched(api: Client) -> None:
    learned = api.post(
        "/api/v1/engrams",
        {
            "statement": "Never force-push to main",
            "trigger_context": "git push --force",
            "source": "user",
            "polarity": "dont",
        },
        content_type="application/json",
    ).json()["engram"]["id"]
    api.patch(
        f"/api/v1/engrams/{learned}", {"enforcement": "reminder"}, content_type="application/json"
    )
    body = {
        "hook_event_name": "PostToolUse",
        "session_id": "post-reminder",
        "cwd": "/w/repo",
        "tool_name": "Bash",
        "tool_input": {"command": "git push --force origin main"},
        "tool_response": {"stdout": "forced update"},
    }
    answer = hook(api, body).json()
    assert answer["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert learned in answer["hookSpecificOutput"]["additionalContext"]
    assert Observation.objects.filter(session__session_id="post-reminder").count() == 1
    quiet = dict(body, tool_input={"command": "git status"})
    assert hook(api, quiet).json() == {}


@pytest.mark.parametrize("route", ["direct", "proxy settings"])
def test_the_command_client_waits_once_for_retry_after_within_its_timeout(
    route: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Plain http goes through http.client and never builds a TLS context (urllib's opener
    loads the CA store on each call); with proxy settings, urllib does it, honouring them."""
    import http.server
    import ssl
    import threading

    if route == "direct":

        def no_tls(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("a TLS context for a plain http request")

        monkeypatch.setattr(ssl, "create_default_context", no_tls)
        monkeypatch.setattr(ssl, "_create_default_https_context", no_tls)
        for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
            monkeypatch.delenv(name, raising=False)
    else:  # a proxy that is set but bypassed for this host: urllib reads both
        monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
        monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")

    answers = [(429, {"Retry-After": "0"}), (200, {})]
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(self.path)
            status, headers = answers.pop(0) if answers else (429, {"Retry-After": "0"})
            body = b'{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ok"}}'
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        env = {"ENGRAM_URL": f"http://127.0.0.1:{server.server_port}", "ENGRAM_HOOK_TIMEOUT": "3"}
        out = hookclient.forward(b'{"hook_event_name": "UserPromptSubmit", "prompt": "hi"}', env)
        assert json.loads(out)["hookSpecificOutput"]["additionalContext"] == "ok"
        assert len(seen) == 2  # refused, waited, sent again
        answers[:] = [(429, {"Retry-After": "0"}), (429, {"Retry-After": "0"})]
        seen.clear()
        assert hookclient.forward(b'{"hook_event_name": "Stop"}', env) == ""
        assert len(seen) == 2  # only once more, never a loop
        answers[:] = [(429, {"Retry-After": "30"})]
        seen.clear()
        assert hookclient.forward(b'{"hook_event_name": "Stop"}', env) == ""
        assert len(seen) == 1  # a wait past the timeout is not taken
    finally:
        server.shutdown()


@pytest.mark.parametrize(
    "url", ["https://127.0.0.1:9", "http://[::1]:9", "ftp://127.0.0.1", "http://", "not a url"]
)
def test_the_command_client_answers_nothing_when_it_cannot_reach_the_server(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    payload = b'{"hook_event_name": "UserPromptSubmit", "prompt": "hi"}'
    assert hookclient.forward(payload, {"ENGRAM_URL": url, "ENGRAM_HOOK_TIMEOUT": "2"}) == ""
