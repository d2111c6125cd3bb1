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

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.errors import DomainError
from memory.forms import TokenForm
from memory.integrations.claude_settings import (
    COMMAND_NAME,
    TOKEN_ENV,
    hook_config,
    merge_settings,
)
from memory.integrations.hookclient import DEFAULT_URL
from memory.management.owner import resolve_owner
from memory.models import ApiToken
from memory.validation import scope as validate_scope


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
