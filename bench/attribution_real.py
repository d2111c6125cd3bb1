"""Outcome attribution on real sessions: where the heuristic judge finds a rule followed or
contradicted, rule by rule, over every session of the rule's repository.

Reads the real Claude Code transcripts collected outside the repository and a JSON file of
rules by repository folder (default bench/labels/attribution_rules.json: the active rules the
maintenance replay stored from the dev corpora, `{"<corpus>/<owner>__<repo>": [statement, …]}`),
runs `attribution.attribute` (the heuristic the attribution task runs when no key is set) over
each session's tool inputs, and prints per rule how many sessions it was followed, contradicted,
ignored or irrelevant in, with the first evidence of each verdict, and the totals. Pure, no
database.

    .venv/bin/python bench/attribution_real.py [--data /work/data] [--rules FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory.maths import attribution, learning  # noqa: E402

RULES = ROOT / "bench" / "labels" / "attribution_rules.json"


def session_inputs(folder: Path) -> list[list[str]]:
    """Each session's tool inputs, in order."""
    sessions = []
    for path in sorted(folder.glob("*.jsonl")):
        entries = learning.parse_lines(path.read_bytes().split(b"\n"))
        sessions.append([e.tool_input for e in entries if e.kind == "tool_use"])
    return sessions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data"))
    parser.add_argument("--rules", type=Path, default=RULES)
    args = parser.parse_args()
    rules: dict[str, list[str]] = json.loads(args.rules.read_text())
    totals: Counter[str] = Counter()
    for folder, statements in rules.items():
        where = args.data / folder
        if not where.is_dir():
            print(f"{folder}: absent")
            continue
        sessions = session_inputs(where)
        for statement in statements:
            counts: Counter[str] = Counter()
            evidence: dict[str, str] = {}
            for inputs in sessions:
                verdict = attribution.attribute(
                    statement=statement,
                    polarity=learning.polarity_of(statement),
                    inputs=inputs,
                )
                counts[verdict.result] += 1
                if verdict.result in ("followed", "contradicted"):
                    evidence.setdefault(verdict.result, verdict.evidence[:160])
            totals.update(counts)
            print(f"{dict(sorted(counts.items()))} | {folder} | {statement}")
            for result, text in evidence.items():
                print(f"      {result}: {' '.join(text.split())}")
    print(f"all rules: {dict(sorted(totals.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
