"""Print, or merge into a project's .claude/settings.json, the Claude Code hooks for Engram.

A fresh API token is issued on every run and shown once on stderr; the settings only refer to it
as $ENGRAM_TOKEN, so the file can be committed. Merging keeps every other setting and hook, and
replaces Engram's own entries in place, so running it again changes nothing.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.errors import DomainError
from memory.forms import TokenForm
from memory.integrations.hookclient import DEFAULT_URL, HOOK_PATH
from memory.management.owner import resolve_owner
from memory.models import ApiToken
from memory.validation import scope as validate_scope

TOKEN_ENV = "ENGRAM_TOKEN"
# Seconds Claude Code waits for each hook; the tool hooks must never hold the agent up for long.
EVENT_TIMEOUTS: dict[str, int] = {
    "SessionStart": 10,
    "UserPromptSubmit": 10,
    "PreToolUse": 5,
    "PostToolUse": 5,
    "PostToolUseFailure": 5,
    "Stop": 10,
    "SessionEnd": 10,
    "PreCompact": 10,
}
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})
COMMAND_NAME = "engram-hook"


def hook_entry(event: str, *, url: str, command: str | None, scope: str | None) -> dict[str, Any]:
    """One hook handler: an HTTP hook to the endpoint, or the command client."""
    timeout = EVENT_TIMEOUTS[event]
    if command is not None:
        return {"type": "command", "command": command, "timeout": timeout}
    target = url.rstrip("/") + HOOK_PATH
    if scope:
        target += "?" + urlencode({"scope": scope})
    return {
        "type": "http",
        "url": target,
        "headers": {"Authorization": f"Bearer ${TOKEN_ENV}"},
        "allowedEnvVars": [TOKEN_ENV],
        "timeout": timeout,
    }


def hook_config(*, url: str, command: str | None, scope: str | None) -> dict[str, Any]:
    """The `hooks` block for every event Engram handles."""
    hooks: dict[str, Any] = {}
    for event in EVENT_TIMEOUTS:
        group: dict[str, Any] = {}
        if event in TOOL_EVENTS:
            group["matcher"] = "*"
        group["hooks"] = [hook_entry(event, url=url, command=command, scope=scope)]
        hooks[event] = [group]
    return {"hooks": hooks}


def is_engram_hook(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    if entry.get("type") == "http":
        return str(entry.get("url", "")).split("?", 1)[0].endswith(HOOK_PATH)
    if entry.get("type") == "command":
        return COMMAND_NAME in str(entry.get("command", ""))
    return False


def merge_settings(current: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """`current` with Engram's hooks set: its own entries replaced in place, others untouched."""
    merged = dict(current)
    hooks = merged.get("hooks")
    hooks = dict(hooks) if isinstance(hooks, dict) else {}
    for event, groups in config["hooks"].items():
        ours = groups[0]
        existing = hooks.get(event)
        existing = list(existing) if isinstance(existing, list) else []
        placed = False
        kept: list[Any] = []
        for group in existing:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list) or not any(is_engram_hook(e) for e in entries):
                kept.append(group)
                continue
            others = [e for e in entries if not is_engram_hook(e)]
            if not placed:
                # Our entry takes the place of the first old one, next to the user's others.
                new_group = dict(group)
                new_group["hooks"] = [*others, *ours["hooks"]]
                if "matcher" in ours:
                    new_group["matcher"] = ours["matcher"]
                kept.append(new_group)
                placed = True
            elif others:
                kept.append({**group, "hooks": others})
        if not placed:
            kept.append(ours)
        hooks[event] = kept
    merged["hooks"] = hooks
    return merged


def command_path() -> str:
    """The installed console script next to this Python, else the bare name on PATH."""
    candidate = Path(sys.executable).parent / COMMAND_NAME
    return str(candidate) if candidate.exists() else COMMAND_NAME


class Command(BaseCommand):
    help = "Print (or merge into .claude/settings.json) Claude Code hooks for Engram."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--project",
            metavar="DIR",
            help="Merge into DIR/.claude/settings.json instead of printing.",
        )
        parser.add_argument(
            "--command",
            action="store_true",
            help="Use the engram-hook command client instead of HTTP hooks.",
        )
        parser.add_argument("--user", help="Owner username (default: the first superuser).")
        parser.add_argument("--url", help="Engram's base URL (default: SITE_URL).")
        parser.add_argument("--scope", help="Engram scope for this project (default: from cwd).")
        parser.add_argument(
            "--token-scopes",
            default="*",
            help="Comma-separated scopes the new token may use (default: *).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        owner = resolve_owner(options.get("user"))
        url = (options.get("url") or settings.SITE_URL or DEFAULT_URL).rstrip("/")
        scope = options.get("scope") or None
        command = None
        if options["command"]:
            command = shlex.quote(command_path())
            if url != DEFAULT_URL:
                command = f"ENGRAM_URL={shlex.quote(url)} {command}"
            if scope:
                command = f"ENGRAM_SCOPE={shlex.quote(scope)} {command}"
        config = hook_config(url=url, command=command, scope=scope)
        form = TokenForm({"name": "claude-code", "scopes": options["token_scopes"]})
        if not form.is_valid():
            raise CommandError("; ".join(" ".join(str(m) for m in e) for e in form.errors.values()))
        if scope:
            try:
                validate_scope(scope)
            except DomainError as exc:
                raise CommandError(f"--scope: {exc}") from None
        path = text = None
        if options.get("project"):
            # Read and merge first: a broken settings file must not cost a token.
            path, text = self._merged(Path(options["project"]), config)
        token, raw = ApiToken.issue(
            owner=owner, name=form.cleaned_data["name"], scopes=form.cleaned_data["scopes"]
        )
        if path is not None and text is not None:
            self._write(path, text)
            self.stderr.write(f"Merged Engram's hooks into {path}.")
        else:
            self.stdout.write(json.dumps(config, indent=2))
        self.stderr.write(
            f"Created token {token.pk} “{token.name}” for {owner.get_username()}. "
            f"It is shown once; make it available to Claude Code:\n"
            f"  export {TOKEN_ENV}={raw}"
        )

    def _merged(self, project: Path, config: dict[str, Any]) -> tuple[Path, str]:
        """The settings path and its new text with Engram's hooks merged in."""
        if not project.is_dir():
            raise CommandError(f"{project} is not a directory.")
        path = project / ".claude" / "settings.json"
        current: dict[str, Any] = {}
        if path.exists():
            try:
                loaded = json.loads(path.read_text(encoding="utf-8") or "{}")
            except ValueError as exc:
                raise CommandError(f"{path} is not valid JSON ({exc}); fix it first.") from None
            if not isinstance(loaded, dict):
                raise CommandError(f"{path} must hold a JSON object.")
            current = loaded
        merged = merge_settings(current, config)
        return path, json.dumps(merged, indent=2, ensure_ascii=False) + "\n"

    def _write(self, path: Path, text: str) -> None:
        if path.exists() and path.read_text(encoding="utf-8") == text:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)  # atomic: Claude Code never reads a half-written file
