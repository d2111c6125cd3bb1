"""Claude Code's hook settings for Engram: what `engram setup claude-code` writes, what the
plugin's hooks/hooks.json holds, and what `engram doctor` looks for. Standard library only, so
the `engram` command reads settings files without loading Django.
"""

from __future__ import annotations

import shlex
from typing import Any
from urllib.parse import urlencode, urlsplit

from memory.integrations.hookclient import DEFAULT_URL, HOOK_PATH

TOKEN_ENV = "ENGRAM_TOKEN"
URL_ENV = "ENGRAM_URL"
SCOPE_ENV = "ENGRAM_SCOPE"
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
EVENTS = tuple(EVENT_TIMEOUTS)
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure"})
COMMAND_NAME = "engram-hook"
PLUGIN_NAME = "engram"
_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


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


def engram_hooks(settings: Any) -> dict[str, list[dict[str, Any]]]:
    """Engram's hook handlers in a settings object, by event (events without one left out)."""
    found: dict[str, list[dict[str, Any]]] = {}
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    if not isinstance(hooks, dict):
        return found
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            entries = group.get("hooks") if isinstance(group, dict) else None
            for entry in entries if isinstance(entries, list) else []:
                if is_engram_hook(entry):
                    found.setdefault(str(event), []).append(entry)
    return found


def plugin_enabled(settings: Any) -> bool:
    """Whether a settings object enables the Engram plugin (`enabledPlugins["engram@…"]`)."""
    enabled = settings.get("enabledPlugins") if isinstance(settings, dict) else None
    if not isinstance(enabled, dict):
        return False
    return any(
        str(key).split("@", 1)[0] == PLUGIN_NAME and value is True for key, value in enabled.items()
    )


def hook_target(entry: dict[str, Any], environment_url: str | None) -> str:
    """The Engram base URL a hook handler posts to: an HTTP hook's own URL, a command hook's
    `ENGRAM_URL=` prefix, else the environment's ENGRAM_URL (or the default)."""
    if entry.get("type") == "http":
        parts = urlsplit(str(entry.get("url", "")))
        return f"{parts.scheme}://{parts.netloc}"
    try:
        words = shlex.split(str(entry.get("command", "")))
    except ValueError:
        words = []
    for word in words:
        if word.startswith(URL_ENV + "="):
            return word.split("=", 1)[1].rstrip("/")
    return (environment_url or DEFAULT_URL).rstrip("/")


def same_server(a: str, b: str) -> bool:
    """Whether two base URLs name the same server (loopback names are one host)."""
    pa, pb = urlsplit(a.rstrip("/")), urlsplit(b.rstrip("/"))
    host_a, host_b = (pa.hostname or "").lower(), (pb.hostname or "").lower()
    if host_a in _LOCAL_HOSTS and host_b in _LOCAL_HOSTS:
        host_a = host_b = "localhost"
    port_a = pa.port or (443 if pa.scheme == "https" else 80)
    port_b = pb.port or (443 if pb.scheme == "https" else 80)
    return (pa.scheme, host_a, port_a) == (pb.scheme, host_b, port_b)
