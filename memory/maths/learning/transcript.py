"""Claude Code transcript lines: parse JSONL entries, split complete lines, render for an LLM.

Pure Python (no Django).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# --- transcripts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One entry of a Claude Code transcript: user / assistant text, tool_use or tool_result."""

    kind: str  # user | assistant | tool_use | tool_result
    text: str = ""
    tool: str = ""
    tool_id: str = ""
    tool_input: str = ""
    is_error: bool = False


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text") or ""))
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _clean(value: Any) -> Any:
    """JSON with every string a database column takes: JSON escapes may spell a NUL (PostgreSQL
    refuses it) or a lone surrogate (UTF-8 cannot encode it)."""
    if isinstance(value, str):
        return value.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def parse_line(line: str | bytes) -> list[Entry]:
    """The entries of one JSONL line of a Claude Code transcript ([] for anything else)."""
    try:
        row = _clean(json.loads(line))
    except ValueError:
        return []
    if not isinstance(row, dict):
        return []
    kind = row.get("type")
    message = row.get("message")
    if kind not in {"user", "assistant"} or not isinstance(message, dict):
        return []
    if row.get("isMeta") or row.get("isSidechain"):
        return []
    content = message.get("content")
    entries: list[Entry] = []
    if kind == "user":
        if isinstance(content, str):
            if not content.lstrip().startswith(("<command-", "<local-command", "<system-")):
                entries.append(Entry("user", text=content))
            return entries
        if isinstance(content, list):
            texts = []
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_result":
                    entries.append(
                        Entry(
                            "tool_result",
                            text=_content_text(block.get("content"))
                            or _json_text(block.get("content") or ""),
                            tool_id=str(block.get("tool_use_id") or ""),
                            is_error=bool(block.get("is_error")),
                        )
                    )
                elif block.get("type") == "text":
                    texts.append(str(block.get("text") or ""))
            text = "\n".join(t for t in texts if t.strip())
            if text:
                entries.insert(0, Entry("user", text=text))
        return entries
    if isinstance(content, str):
        return [Entry("assistant", text=content)] if content.strip() else []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and str(block.get("text") or "").strip():
            entries.append(Entry("assistant", text=str(block["text"])))
        elif block.get("type") == "tool_use":
            entries.append(
                Entry(
                    "tool_use",
                    tool=str(block.get("name") or ""),
                    tool_id=str(block.get("id") or ""),
                    tool_input=_json_text(block.get("input") or {}),
                )
            )
    return entries


def parse_lines(lines: Iterable[str | bytes]) -> list[Entry]:
    out: list[Entry] = []
    for line in lines:
        if line and line.strip():
            out.extend(parse_line(line))
    return out


def split_complete(data: bytes) -> tuple[list[bytes], int]:
    """Complete lines of a chunk read from a JSONL file, and how many bytes they span.

    A last line without its newline may still be being written: it is left for the next read,
    so the offset only ever moves past whole lines.
    """
    end = data.rfind(b"\n")
    if end < 0:
        return [], 0
    return data[:end].split(b"\n"), end + 1


def render_entries(entries: Sequence[Entry], limit: int = 12_000) -> str:
    """A compact text of transcript entries for a judge or extractor (newest kept when cut)."""
    lines = []
    for e in entries:
        if e.kind == "user":
            lines.append(f"USER: {e.text.strip()[:1500]}")
        elif e.kind == "assistant":
            lines.append(f"ASSISTANT: {e.text.strip()[:1500]}")
        elif e.kind == "tool_use":
            lines.append(f"TOOL {e.tool}: {e.tool_input[:400]}")
        else:
            lines.append(f"RESULT{' (error)' if e.is_error else ''}: {e.text.strip()[:300]}")
    text = "\n".join(lines)
    return text[-limit:]
