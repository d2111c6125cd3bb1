"""The Claude Code marketplace and plugin in the repository: the files follow the documented
formats (`claude plugin validate` is not available here), and the plugin's hook commands,
run as Claude Code runs them (the command string from hooks.json through a shell, the payload
on stdin), reach a live server."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from memory.integrations.claude_settings import EVENT_TIMEOUTS, TOOL_EVENTS, hook_config
from memory.models import AgentSession, ApiToken, LearningSignal, Observation

ROOT = Path(__file__).resolve().parent.parent
MARKETPLACE = ROOT / ".claude-plugin" / "marketplace.json"
KEBAB = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$")
# Claude Code's hook events (hooks reference); a misspelt one would silently never fire.
DOCUMENTED_EVENTS = {
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "Notification",
    "UserPromptSubmit",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
}
REQUIRED_EVENTS = {
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "Stop",
    "SessionEnd",
}
RESERVED_MARKETPLACE_NAMES = {
    "claude-code-marketplace",
    "claude-code-plugins",
    "claude-plugins-official",
    "anthropic-marketplace",
    "anthropic-plugins",
    "agent-skills",
}


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def plugin_dir() -> Path:
    entry = load(MARKETPLACE)["plugins"][0]
    return (ROOT / entry["source"]).resolve()


def frontmatter(path: Path) -> tuple[dict[str, Any], str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path.name} has no frontmatter"
    head, _, body = text[4:].partition("\n---\n")
    data = yaml.safe_load(head)
    assert isinstance(data, dict)
    return data, body


# --- the documented formats -------------------------------------------------------------------


def test_the_marketplace_names_its_owner_and_lists_the_engram_plugin_by_relative_path() -> None:
    data = load(MARKETPLACE)
    assert KEBAB.match(data["name"]) and data["name"] not in RESERVED_MARKETPLACE_NAMES
    assert isinstance(data["owner"], dict) and data["owner"]["name"]
    [entry] = data["plugins"]
    assert entry["name"] == "engram" and KEBAB.match(entry["name"])
    assert entry["source"].startswith("./")
    folder = plugin_dir()
    assert folder.is_dir() and ROOT in folder.parents  # inside the repository
    assert SEMVER.match(entry["version"])


def test_the_plugin_manifest_matches_its_marketplace_entry() -> None:
    manifest = load(plugin_dir() / ".claude-plugin" / "plugin.json")
    entry = load(MARKETPLACE)["plugins"][0]
    assert manifest["name"] == entry["name"] == "engram"
    assert SEMVER.match(manifest["version"]) and manifest["version"] == entry["version"]
    assert isinstance(manifest["author"], dict) and manifest["author"]["name"]
    # Components sit at their default places, so the manifest declares no paths of its own;
    # any path it did declare would have to start with ./ and stay inside the plugin.
    for key in ("commands", "agents", "skills", "hooks", "mcpServers"):
        value = manifest.get(key)
        assert value is None or (isinstance(value, str) and value.startswith("./"))


def test_the_hooks_cover_every_engram_event_with_the_command_client() -> None:
    data = load(plugin_dir() / "hooks" / "hooks.json")
    hooks = data["hooks"]
    assert set(hooks) <= DOCUMENTED_EVENTS
    assert set(hooks) == REQUIRED_EVENTS
    for event, groups in hooks.items():
        [group] = groups
        assert ("matcher" in group) == (event in TOOL_EVENTS)
        [handler] = group["hooks"]
        assert handler["type"] == "command"
        assert handler["command"] == "engram-hook"
        assert handler["timeout"] == EVENT_TIMEOUTS[event]
    # The same hooks `engram setup claude-code --command` writes: one definition.
    assert hooks == hook_config(url="", command="engram-hook", scope=None)["hooks"]


def test_the_mcp_server_is_engram_mcp_with_the_token_from_the_environment() -> None:
    data = load(plugin_dir() / ".mcp.json")
    server = data["mcpServers"]["engram"]
    assert server["command"] == "engram" and server["args"] == ["mcp"]
    assert server["env"]["ENGRAM_TOKEN"] == "${ENGRAM_TOKEN}"
    assert all(re.fullmatch(r"\$\{[A-Z_]+(:-[^}]*)?\}", v) for v in server["env"].values())


@pytest.mark.parametrize(
    ("name", "argument"), [("status", False), ("remember", True), ("forget", True)]
)
def test_each_slash_command_has_a_description_and_takes_its_argument(
    name: str, argument: bool
) -> None:
    meta, body = frontmatter(plugin_dir() / "commands" / f"{name}.md")
    assert meta["description"]
    if argument:
        assert meta["argument-hint"].startswith("<")
        assert "$ARGUMENTS" in body
    else:
        assert "!`engram status" in body
        assert meta["allowed-tools"] == "Bash(engram status:*)"


@pytest.mark.django_db
def test_remember_and_forget_call_mcp_tools_that_take_those_arguments(owner: Any) -> None:
    from memory.integrations.mcp import build_server

    _, remember = frontmatter(plugin_dir() / "commands" / "remember.md")
    _, forget = frontmatter(plugin_dir() / "commands" / "forget.md")
    token, _ = ApiToken.issue(owner=owner, name="plugin")
    tools = {t.name: t for t in asyncio.run(build_server(token).list_tools())}
    learn_args = set(tools["learn"].input_schema["properties"])
    forget_args = set(tools["forget"].input_schema["properties"])
    for argument in ("statement", "direct_instruction", "scope", "polarity"):
        assert f"`{argument}`" in remember and argument in learn_args
    for argument in ("engram_id", "reason"):
        assert f"`{argument}`" in forget and argument in forget_args
    assert "`learn`" in remember and "`forget`" in forget


# --- the hook commands against a live server --------------------------------------------------


def run_hook(command: str, payload: dict[str, Any], env: dict[str, str]) -> Any:
    """Run one hooks.json command as Claude Code does: through a shell, payload on stdin."""
    result = subprocess.run(
        command,
        shell=True,
        input=json.dumps(payload).encode(),
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode().strip()
    return json.loads(out) if out else {}


def hook_env(tmp_path: Path, url: str, token: str) -> dict[str, str]:
    return {
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "ENGRAM_URL": url,
        "ENGRAM_TOKEN": token,
        "ENGRAM_HOOK_TIMEOUT": "20",
        "ENGRAM_HOOK_STATE": str(tmp_path / "state"),
        "CLAUDE_PLUGIN_ROOT": str(plugin_dir()),
        "CLAUDE_PROJECT_DIR": str(tmp_path / "shop"),
        "ENGRAM_SYNC_ARTIFACTS": "0",
    }


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_plugin_hooks_run_a_whole_session_against_a_live_server(
    live_server: Any, owner: Any, tmp_path: Path
) -> None:
    _, raw = ApiToken.issue(owner=owner, name="plugin")
    env = hook_env(tmp_path, live_server.url, raw)
    project = tmp_path / "shop"
    project.mkdir()
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text(
        json.dumps(
            {
                "type": "user",
                "sessionId": "plug-1",
                "message": {"role": "user", "content": "From now on, always run ruff first."},
            }
        )
        + "\n"
    )
    hooks = load(plugin_dir() / "hooks" / "hooks.json")["hooks"]
    base = {"session_id": "plug-1", "cwd": str(project), "transcript_path": str(transcript)}
    tool = {"tool_name": "Bash", "tool_input": {"command": "pytest -q"}}
    payloads = {
        "SessionStart": {"source": "startup"},
        "UserPromptSubmit": {"prompt": "Never push to main without a review."},
        "PreToolUse": tool,
        "PostToolUse": {**tool, "tool_response": {"stdout": "3 passed"}},
        "PostToolUseFailure": {**tool, "error": "exit 1: 2 failed"},
        "PreCompact": {"trigger": "auto"},
        "Stop": {"last_assistant_message": "Done."},
        "SessionEnd": {"reason": "exit"},
    }
    for event, extra in payloads.items():
        [group] = hooks[event]
        answer = run_hook(
            group["hooks"][0]["command"], {"hook_event_name": event, **base, **extra}, env
        )
        if answer:
            assert answer["hookSpecificOutput"]["hookEventName"] == event
    session = AgentSession.objects.get(owner=owner, session_id="plug-1")
    assert session.scope == "project:shop"
    assert session.ended_at is not None  # Stop and SessionEnd arrived
    assert Observation.objects.filter(session=session).count() == 2
    assert list(Observation.objects.filter(session=session).values_list("success", flat=True)) in (
        [True, False],
        [False, True],
    )
    kinds = set(LearningSignal.objects.filter(session=session).values_list("kind", flat=True))
    assert kinds == {"prompt", "transcript"}  # the rule typed, and the transcript attached


@pytest.mark.integration
def test_the_plugin_hooks_exit_cleanly_and_silently_when_engram_is_down(
    tmp_path: Path,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    env = hook_env(tmp_path, f"http://127.0.0.1:{port}", "eng_not-a-real-token")
    hooks = load(plugin_dir() / "hooks" / "hooks.json")["hooks"]
    for event, groups in hooks.items():
        payload = {"hook_event_name": event, "session_id": "down", "cwd": str(tmp_path)}
        assert run_hook(groups[0]["hooks"][0]["command"], payload, env) == {}
