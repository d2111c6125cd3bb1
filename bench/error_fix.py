"""Error → fix on real transcripts: how many lessons the tool calls of real sessions give, and how
many of the failures were results (test or lint reports) or hook refusals.

Reads the real Claude Code transcripts collected outside the repository (default
/work/data/transcripts, or $ENGRAM_TRANSCRIPTS), pairs each tool_use with its tool_result in
each session, runs `learning.error_fixes` (what the capture task runs over a session's
observations) and prints: tool calls, failures, reports, blocked calls, fix pairs, distinct
lessons (a recurring error words the same lesson: a recurrence, not a new candidate) and each
lesson with its count. Pure, no database.

    .venv/bin/python bench/error_fix.py [DIR]
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory.maths import learning  # noqa: E402

DEFAULT = Path(os.environ.get("ENGRAM_TRANSCRIPTS", "/work/data/transcripts"))


def session_calls(path: Path) -> list[learning.Call]:
    """The session's tool calls in order, each with its result's text and success."""
    entries = learning.parse_lines(path.read_bytes().split(b"\n"))
    results = {e.tool_id: e for e in entries if e.kind == "tool_result"}
    calls = []
    for e in entries:
        if e.kind != "tool_use":
            continue
        result = results.get(e.tool_id)
        if result is None:
            continue
        calls.append(learning.Call(e.tool, e.tool_input, not result.is_error, result.text))
    return calls


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    files = sorted(folder.glob("*/*.jsonl"))
    if not files:
        print(f"no transcripts under {folder}")
        return
    counts: Counter[str] = Counter()
    lessons: Counter[str] = Counter()
    for path in files:
        calls = session_calls(path)
        counts["tool calls"] += len(calls)
        for call in calls:
            if call.success:
                continue
            counts["failures"] += 1
            counts["test or lint reports"] += learning.is_report(call.output)
            counts["blocked by a hook"] += learning.is_blocked(call.output)
        fixes = learning.error_fixes(calls)
        counts["fix pairs"] += len(fixes)
        # Once per session per error, as the capture task stores them.
        lessons.update({fix.statement for fix in fixes})
    print(f"sessions: {len(files)}")
    for key, value in counts.items():
        print(f"{key}: {value}")
    print(f"distinct lessons: {len(lessons)}; sessions per lesson: {sum(lessons.values())}")
    for statement, n in lessons.most_common():
        print(f"  {n}x {statement[:160]}")


if __name__ == "__main__":
    main()
