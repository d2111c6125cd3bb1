"""`engram doctor`'s reading of Claude Code settings: Engram's hooks, the plugin, where they
post. (The checks against a running server are in tests/test_install.py.)"""

from __future__ import annotations

import json
from pathlib import Path

from memory.cli.client import Server
from memory.cli.doctor import Context, check_hook_command, check_hooks, check_transcripts
from memory.integrations import claude_settings as cs

URL = "http://127.0.0.1:8011"


def context(tmp_path: Path, **env: str) -> Context:
    project, home = tmp_path / "shop", tmp_path / "home"
    project.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    return Context(server=Server(url=URL, token="t"), project=project, home=home, env=env)


def write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_hooks_written_by_setup_for_this_server_pass(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    config = cs.hook_config(url=URL, command=None, scope=None)
    write(ctx.project / ".claude" / "settings.json", config)
    result = check_hooks(ctx)
    assert result.passed and "HTTP hooks for all 8 events" in result.detail


def test_hooks_that_post_to_another_port_fail_and_name_it(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    write(
        ctx.project / ".claude" / "settings.json",
        cs.hook_config(url="http://localhost:8000", command=None, scope=None),
    )
    result = check_hooks(ctx)
    assert not result.passed and "http://localhost:8000" in result.detail


def test_a_missing_event_fails_and_is_named(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    config = cs.hook_config(url=URL, command="engram-hook", scope=None)
    del config["hooks"]["SessionEnd"]
    write(ctx.home / ".claude" / "settings.json", config)
    result = check_hooks(
        ctx,
    )
    assert not result.passed and "SessionEnd" in result.detail


def test_command_hooks_follow_their_engram_url_prefix_or_the_environment(tmp_path: Path) -> None:
    entry = {"type": "command", "command": f"ENGRAM_URL={URL} /opt/bin/engram-hook"}
    assert cs.hook_target(entry, None) == URL
    assert cs.hook_target({"type": "command", "command": "engram-hook"}, URL + "/") == URL
    assert cs.same_server("http://localhost:8011", "http://127.0.0.1:8011/")
    assert not cs.same_server("http://127.0.0.1:8000", URL)


def test_the_enabled_plugin_counts_as_hooks(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    write(ctx.home / ".claude" / "settings.json", {"enabledPlugins": {"engram@engram": True}})
    assert check_hooks(ctx).passed
    write(ctx.home / ".claude" / "settings.json", {"enabledPlugins": {"engram@engram": False}})
    assert not check_hooks(ctx).passed


def test_a_broken_settings_file_is_named(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    (ctx.project / ".claude").mkdir()
    (ctx.project / ".claude" / "settings.json").write_text("{not json")
    result = check_hooks(ctx)
    assert not result.passed and "could not be read" in result.detail


def test_engram_hook_missing_from_path_fails_only_when_hooks_run_it(tmp_path: Path) -> None:
    ctx = context(tmp_path, PATH=str(tmp_path / "empty"))
    assert not check_hook_command(ctx).passed
    ctx.uses_commands = False
    assert check_hook_command(ctx).passed


def test_no_transcript_folder_yet_is_fine(tmp_path: Path) -> None:
    assert check_transcripts(context(tmp_path)).passed


def test_a_reader_that_goes_away_stops_the_command_quietly(tmp_path: Path) -> None:
    """`engram doctor | head -1`: the pipe closes under it; no traceback, the exit code of a
    command stopped by SIGPIPE."""
    import os
    import subprocess
    import sys

    read, write_end = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        done = subprocess.run(
            [sys.executable, "-m", "memory.cli.main", "doctor", "--url", "http://127.0.0.1:9"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env={**os.environ, "HOME": str(tmp_path), "ENGRAM_TOKEN": "t"},
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert b"Traceback" not in done.stderr, done.stderr.decode()
    assert done.returncode == 141
