"""What one observed tool call did, as consolidation clusters it (DESIGN v3 "Dialectic and
maintenance"): the kind of action with what makes it a practice — a shell command's programs,
subcommands and salient flags with paths and values as placeholders (`Bash `uv run pytest
tests/*.py -x``), the file kind and folder for Read/Edit/Write (`Edit .py file in src/api`),
and whether the call failed — never the particulars (file names, messages, values).

Pure: plain dicts and strings in, strings and feature sets out; no Django.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any

from memory.maths.shell import command_shape

MAX_TEXT = 300
ERROR_RE = re.compile(r"\b(error|exception|traceback|failed|failure|fatal)\b", re.IGNORECASE)
FILE_KEYS = ("file_path", "notebook_path", "path")
COMMAND_FEATURES = 3  # the programs of a command line that become features
_PARTIAL_COMMAND = re.compile(r'^\s*\{\s*"command"\s*:\s*"')


def tool_input(raw: str) -> dict[str, Any]:
    """A stored tool input (JSON, possibly cut at the storage limit) as a dict. A cut JSON
    object still yields its leading `command` string, so a 100 kB command keeps its program."""
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        match = _PARTIAL_COMMAND.match(raw)
        if match:
            return {"command": _partial_string(raw[match.end() :])}
        return {"text": raw}
    return value if isinstance(value, dict) else {"text": str(value)}


def _partial_string(body: str) -> str:
    """The value of a JSON string cut before its closing quote."""
    for cut in range(len(body), max(0, len(body) - 8), -1):
        try:
            value = json.loads('"' + body[:cut] + '"')
        except ValueError:
            continue
        return str(value)
    return ""


def paths_of(data: dict[str, Any]) -> list[str]:
    found = []
    for key in FILE_KEYS:
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            found.append(value.strip()[:300])
    return found


def command_of(data: dict[str, Any]) -> str:
    value = data.get("command")
    return value.strip() if isinstance(value, str) else ""


def relative_path(path: str, project: str) -> str:
    if project and path.startswith(project.rstrip("/") + "/"):
        return path[len(project.rstrip("/")) + 1 :]
    return path


def _where(rel: str) -> str:
    folder, ext = posixpath.dirname(rel), posixpath.splitext(rel)[1]
    kind = f"{ext} file" if ext else "file"
    return f"{kind} in {folder}" if folder else f"{kind} in the project root"


def observation_text(tool: str, data: dict[str, Any], project: str, *, success: bool) -> str:
    """What is embedded: the kind of action, not its particulars. The tool with the kind and
    place of the file (`Read .py file in src/api`, not the file's name), the practice a shell
    command carries (`Bash `git add <path> && git commit -m <text>``), or the search pattern:
    a habit repeats the kind, rarely the exact file. A failed call says so."""
    parts = [tool]
    for path in paths_of(data)[:1]:
        parts.append(_where(relative_path(path, project)))
    command = command_of(data)
    if command:
        shape = command_shape(command, cwd=project).text
        parts.append(f"`{shape}`" if shape else command[:60])
    pattern = data.get("pattern")
    if isinstance(pattern, str) and pattern.strip() and len(parts) == 1:
        parts.append(f"search {pattern.strip()[:80]}")
    for key in ("query", "url", "description"):
        value = data.get(key)
        if isinstance(value, str) and value.strip() and len(parts) == 1:
            parts.append(value.strip()[:120])
    if len(parts) == 1 and data.get("text"):
        parts.append(str(data["text"])[:120])
    text = " ".join(parts)
    if not success:
        text = text[: MAX_TEXT - 7] + " failed"
    return text[:MAX_TEXT]


def observation_features(
    tool: str, data: dict[str, Any], project: str, *, success: bool, output: str
) -> set[tuple[str, str]]:
    """The observation's own features: its tool, folders and extensions of its paths, the
    programs (with subcommand) its command runs, and whether it failed."""
    found: set[tuple[str, str]] = {("tool", tool)}
    for path in paths_of(data):
        rel = relative_path(path, project)
        folder, ext = posixpath.dirname(rel), posixpath.splitext(rel)[1]
        if folder:
            found.add(("path", folder.split("/")[0] + "/"))
        if ext:
            found.add(("path", f"*{ext}"))
    command = command_of(data)
    if command:
        for head in command_shape(command, cwd=project).heads[:COMMAND_FEATURES]:
            found.add(("command", head))
    if not success or ERROR_RE.search(output[:2000]):
        found.add(("error", f"{tool} failed"))
    return found
