"""What the LLM extraction path would send for real Claude Code sessions, before and after the
fix of issue #24 item 8 — computed, not called: no key, no network, no database.

For every transcript under `--transcripts` (default `$ENGRAM_TRANSCRIPTS` or
/work/data/transcripts), the lines are cut into the deltas a Stop hook would hand over (one per
human turn: from a typed prompt to the line before the next one; the turns come from
`labels.jsonl`), and each delta is planned twice:

- before: one call with the whole delta rendered and cut to its newest 12,000 characters (what
  the LLM did not see was lost: the heuristic ran only when the call failed);
- after: `memory.services.extraction.transcript_runs` over the delta without the prompts the
  classifier already captured at UserPromptSubmit, at most MAX_EXTRACT_CALLS calls, the heuristic
  reading the entries past them.

It also plans each session as a single delta (a server that reads the transcript only at
SessionEnd). Reports deltas, calls, user entries the LLM never saw (and, after, whether the
heuristic read them), and the estimated input tokens (`lib.llm.sizing`, characters / 3).

    python bench/llm_cost.py [--transcripts DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "engramsite.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402

django.setup()

from lib.llm import sizing, task_tool  # noqa: E402
from memory.maths import learning  # noqa: E402
from memory.services import extraction, llm  # noqa: E402

OLD_RENDER_CHARS = 12_000  # the old `_llm_text`: render_entries' default, newest kept


@dataclass
class Plan:
    deltas: int = 0
    calls: int = 0
    tokens: int = 0
    user_entries: int = 0
    unseen_by_llm: int = 0  # user entries the LLM never received
    read_by_heuristic: int = 0  # of those, the ones the heuristic reads instead
    multi_call_deltas: int = 0
    calls_per_delta: list[int] = field(default_factory=list)


def _tokens(limit: int, data: str) -> int:
    prompt = f"{extraction.EXTRACT_INSTRUCTIONS.format(limit=limit)}\n\n{llm.as_data(data)}"
    tool = task_tool(extraction.EXTRACT_TASK, extraction.schema_for(limit))
    return sizing.input_tokens(system=llm.SYSTEM_PREAMBLE, prompt=prompt, tool=tool)


def plan_before(entries: list[learning.Entry], plan: Plan) -> None:
    plan.deltas += 1
    text = learning.render_entries(entries, limit=OLD_RENDER_CHARS)
    plan.calls += 1
    plan.calls_per_delta.append(1)
    plan.tokens += _tokens(learning.MAX_DRAFTS_PER_SESSION, text)
    full = learning.render_entries(entries, limit=10**12)
    cut = len(full) - len(text)  # characters dropped from the front
    position = 0
    for entry in entries:
        line = learning.render_entries([entry], limit=10**12)
        if entry.kind == "user":
            plan.user_entries += 1
            if position < cut:
                plan.unseen_by_llm += 1
        position += len(line) + 1


def plan_after(entries: list[learning.Entry], captured: set[str], plan: Plan) -> None:
    plan.deltas += 1
    kept = [e for e in entries if e.kind != "user" or e.text not in captured]
    runs = extraction.transcript_runs(kept)
    sent = runs[: extraction.MAX_EXTRACT_CALLS]
    plan.calls += len(sent)
    plan.calls_per_delta.append(len(sent))
    plan.multi_call_deltas += len(sent) > 1
    limit = min(learning.MAX_DRAFTS_PER_SESSION, extraction.MAX_LESSONS_PER_CALL)
    plan.tokens += sum(_tokens(limit, run.text) for run in sent)
    users = [e for e in kept if e.kind == "user"]
    plan.user_entries += len(users)
    unread = [e for run in runs[len(sent) :] for e in run.entries if e.kind == "user"]
    plan.unseen_by_llm += len(unread)
    plan.read_by_heuristic += len(unread)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def _uuid(line: str) -> str:
    try:
        row = json.loads(line)
    except ValueError:
        return ""
    return str(row.get("uuid") or "") if isinstance(row, dict) else ""


def run(folder: Path) -> dict[str, Any]:
    turn_starts: set[str] = set()
    for raw in (folder / "labels.jsonl").read_text(encoding="utf-8").splitlines():
        label = json.loads(raw)
        if label.get("origin") in ("typed", "slash_command", "bash_input"):
            turn_starts.add(label["uuid"])
    plans = {k: Plan() for k in ("turn_before", "turn_after", "session_before", "session_after")}
    files = sorted(folder.glob("*/*.jsonl"))
    for path in files:
        lines = _lines(path)
        deltas: list[list[str]] = [[]]
        for line in lines:
            if _uuid(line) in turn_starts and deltas[-1]:
                deltas.append([])
            deltas[-1].append(line)
        all_entries = learning.parse_lines(lines)
        captured = {
            e.text for e in all_entries if e.kind == "user" and learning.classify(e.text).is_signal
        }
        for delta in deltas:
            entries = learning.parse_lines(delta)
            if not entries:
                continue
            plan_before(entries, plans["turn_before"])
            plan_after(entries, captured, plans["turn_after"])
        plan_before(all_entries, plans["session_before"])
        plan_after(all_entries, captured, plans["session_after"])
    report: dict[str, Any] = {"files": len(files)}
    for name, p in plans.items():
        per = sorted(p.calls_per_delta)
        report[name] = {
            "deltas": p.deltas,
            "calls": p.calls,
            "deltas_with_several_calls": p.multi_call_deltas,
            "calls_per_delta_p95": per[int(0.95 * (len(per) - 1))] if per else 0,
            "calls_per_delta_max": per[-1] if per else 0,
            "input_tokens": p.tokens,
            "input_tokens_per_call": round(p.tokens / p.calls) if p.calls else 0,
            "user_entries": p.user_entries,
            "user_entries_llm_never_saw": p.unseen_by_llm,
            "of_those_read_by_heuristic": p.read_by_heuristic,
            "mean_calls_per_delta": round(statistics.fmean(per), 2) if per else 0,
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--transcripts",
        default=os.environ.get("ENGRAM_TRANSCRIPTS", "/work/data/transcripts"),
        help="folder of <owner>__<repo>/*.jsonl transcripts with labels.jsonl",
    )
    parser.add_argument("--json", help="also write the report to this file")
    args = parser.parse_args()
    folder = Path(args.transcripts)
    if not (folder / "labels.jsonl").is_file():
        print(f"skipped: no transcripts with labels.jsonl under {folder} (set --transcripts)")
        return
    report = run(folder)
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
