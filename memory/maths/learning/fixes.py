"""Error → fix: a failed tool call followed by a successful, similar one in the same session.

Pure Python (no Django).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

# --- error → fix ------------------------------------------------------------------------------

_TOKEN = re.compile(r"[\w.@/-]+")
SIMILAR_CALL = 0.3


@dataclass(frozen=True)
class Call:
    """One tool call as error → fix pairing sees it."""

    tool: str
    tool_input: str
    success: bool
    output: str = ""


@dataclass(frozen=True)
class Fix:
    tool: str
    failed: str
    fixed: str
    error: str
    statement: str = field(default="")


def _tokens(text: str) -> frozenset[str]:
    return frozenset(t.casefold() for t in _TOKEN.findall(text))


def call_similarity(a: str, b: str) -> float:
    """Jaccard similarity of the two inputs' tokens (0 when either is empty)."""
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)


def _command(tool_input: str) -> str:
    try:
        value = json.loads(tool_input)
    except ValueError:
        return tool_input
    if isinstance(value, dict):
        for key in ("command", "file_path", "path", "pattern", "url", "query"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return tool_input


def _first_line(text: str, limit: int = 160) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:limit]
    return ""


def error_fixes(calls: Sequence[Call], *, window: int = 6) -> list[Fix]:
    """Each failed call followed (within `window` calls) by a successful similar call of the
    same tool with a different input: the failure, the fix and a draft statement."""
    fixes: list[Fix] = []
    used: set[int] = set()
    for i, failed in enumerate(calls):
        if failed.success:
            continue
        for j in range(i + 1, min(len(calls), i + 1 + window)):
            fixed = calls[j]
            if j in used or fixed.tool != failed.tool or not fixed.success:
                continue
            a, b = _command(failed.tool_input), _command(fixed.tool_input)
            if a.strip() == b.strip() or call_similarity(a, b) < SIMILAR_CALL:
                continue
            used.add(j)
            error = _first_line(failed.output)
            statement = f"For {failed.tool}: use `{b[:160]}` instead of `{a[:160]}`"
            statement += f" (it failed with: {error})." if error else "."
            fixes.append(Fix(failed.tool, a[:400], b[:400], error, statement))
            break
    return fixes
