"""Never the user's words, on real transcripts: which transcript entries the parser calls the
person's (`learning.parse_lines`, kind `user`), against hand-made labels.

Reads the real Claude Code transcripts collected outside the repository (default
/work/data/transcripts, or $ENGRAM_TRANSCRIPTS): `labels.jsonl` lists every typed human prompt
(by entry uuid) and `non_human_user_entries.jsonl` every `type: "user"` entry that is not the
person's text, with its reason. Prints the entries taken as the user's that are not typed
prompts (must be 0: they would be stored as `source: user`), by reason, and the typed prompts
missed. Pure parsing, no database.

    .venv/bin/python bench/transcript_users.py [DIR]
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory.maths import learning, textnorm  # noqa: E402

DEFAULT = Path(os.environ.get("ENGRAM_TRANSCRIPTS", "/work/data/transcripts"))


# Blocks the IDE or an editor extension puts into the prompt (the open file or selection, the
# content of a file the person mentioned), which some labellers left in: not typed.
_IDE_NOTE = re.compile(
    r"<(ide_[a-z_]+|context(?=\s+ref=\"[a-z]+://))(?:\s+ref=\"[^\"]*\")?>.*?</\1>", re.S
)


def _jsonl(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _digest(text: str) -> str:
    return textnorm.content_hash(text[:8000])


def _agent_prompts(files: list[Path]) -> set[str]:
    """Digests of the prompts the agent wrote in tool calls (`learning.agent_prompt`) in any
    file."""
    found: set[str] = set()
    for path in files:
        for entry in learning.parse_lines(path.read_bytes().split(b"\n")):
            prompt = learning.agent_prompt(entry.tool_input) if entry.kind == "tool_use" else ""
            if prompt:
                found.add(_digest(prompt))
    return found


def audit(folder: Path) -> dict[str, object]:
    """Counts of the parser's user entries against the labels in `folder`."""
    rows = _jsonl(folder / "labels.jsonl")
    # A `!` shell command (`<bash-input>…`) is typed but no prompt: some labellers list it.
    rows = [
        r
        for r in rows
        if not str(r["text"]).lstrip().startswith("<bash-input>")
        and "bash-mode" not in str(r.get("note", ""))
    ]
    # The IDE's note of the open file or selection, which some labellers left in, is not typed.
    typed = {str(r["uuid"]): _IDE_NOTE.sub("", str(r["text"])).strip() for r in rows}
    # What the person typed after a slash command: their words, but a slash-command entry is
    # never taken as theirs (issue #24's contract), so it is counted apart, not as missed.
    command_args = {
        str(r["uuid"])
        for r in rows
        if r.get("command")
        or r.get("origin") == "command-args"
        or "command-args" in str(r.get("note", ""))
    }
    not_typed = {
        str(r["uuid"]): str(r["reason"]) for r in _jsonl(folder / "non_human_user_entries.jsonl")
    }
    files = sorted(p for p in folder.glob("*/*.jsonl"))
    agents = _agent_prompts(files)
    taken: set[str] = set()
    agent_written = 0
    wrong: Counter[str] = Counter()
    examples: dict[str, str] = {}
    lines = 0
    other_text = 0
    for path in files:
        with path.open("rb") as handle:
            raw = handle.read().split(b"\n")
        lines += len(raw)
        for entry in learning.parse_lines(raw):
            if entry.kind != "user":
                continue
            taken.add(entry.uuid)
            if entry.uuid in typed and entry.text.strip() != typed[entry.uuid]:
                other_text += 1  # something not typed was left in the person's text
            if entry.uuid not in typed and _digest(entry.text) in agents:
                # The words of a prompt the agent wrote in a tool call (a spawned session's
                # first prompt): capture skips them (memory.services.drafting.agent_written).
                agent_written += 1
            elif entry.uuid not in typed:
                reason = not_typed.get(entry.uuid, "unlabelled")
                wrong[reason] += 1
                examples.setdefault(reason, entry.text[:120])
    return {
        "files": len(files),
        "lines": lines,
        "typed prompts": len(typed),
        "taken as the user's": len(taken),
        "not typed but taken": sum(wrong.values()),
        "by reason": dict(wrong),
        "not typed, the agent's own prompt (capture skips it)": agent_written,
        "examples": examples,
        "typed prompts missed": len(set(typed) - taken - command_args),
        "slash-command arguments (never taken)": len(command_args - taken),
        "typed prompts with other text": other_text,
    }


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    if not (folder / "labels.jsonl").exists():
        print(f"{folder}/labels.jsonl not found (real transcripts absent)")
        return
    for key, value in audit(folder).items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
