"""Scoring for the learning benchmark (no Django): MemoryCode sessions, ground truth and matching.

`bench/learning.py` replays the sessions through the hook endpoint; this module reads the raw
dialogues, turns a session into mentor prompts and a Claude Code transcript, and decides whether
a captured statement states a ground-truth instruction.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memory.maths.learning import plain_words, values_of

ROOT = Path(__file__).resolve().parent.parent
DATA = (
    Path(os.environ["ENGRAM_EVAL_DATA"])
    if os.environ.get("ENGRAM_EVAL_DATA")
    else ROOT.parent / "shared" / "eval-data"
) / "memorycode"
INSTRUCTION_TYPES = {
    "instruction-add",
    "instruction-update",
    "filler-instruction-add",
    "filler-instruction-update",
}
UPDATE_TYPES = {"instruction-update", "filler-instruction-update"}
# A statement states a topic when it carries the topic's values (quoted names, decorators,
# prefixes) and a third of its other words,
# or, for a topic without values, 0.6 of them; and it states it in the same direction.
WORDS_WITH_VALUES = 0.34
WORDS_WITHOUT_VALUES = 0.6


@dataclass(frozen=True)
class Session:
    dialogue: int
    number: int  # 1-based
    mentor: str
    mentee: str
    turns: tuple[tuple[str, str], ...]  # (speaker role "user"|"assistant", text)
    topics: tuple[tuple[str, str], ...]  # (type, topic text) of instruction types


def dialogue_paths(data: Path = DATA) -> list[Path]:
    paths = list((data / "dialogues").glob("dialogue_*.json"))
    return sorted(paths, key=lambda p: int(re.sub(r"\D", "", p.stem) or 0))


def sessions_of(path: Path) -> Iterator[Session]:
    raw = json.loads(path.read_text())
    dialogue = int(re.sub(r"\D", "", path.stem))
    mentor, mentee = raw["context"]["mentor"], raw["context"]["mentee"]
    for number, session in enumerate(raw["sessions"], start=1):
        turns: list[tuple[str, str]] = []
        for paragraph in re.split(r"\n\s*\n", session["text"]):
            paragraph = paragraph.strip()
            for name, role in ((mentor, "user"), (mentee, "assistant")):
                if paragraph.startswith(name + ":"):
                    turns.append((role, paragraph[len(name) + 1 :].strip()))
                    break
            else:
                if turns and paragraph:  # a paragraph continuing the previous turn
                    role, text = turns[-1]
                    turns[-1] = (role, text + "\n\n" + paragraph)
        topics = tuple(
            (kind, topic)
            for kind, topic in zip(session["type"], session["topic"], strict=False)
            if kind in INSTRUCTION_TYPES
        )
        yield Session(dialogue, number, mentor, mentee, tuple(turns), topics)


_STEM = re.compile(r"(?:ing|ed|es|e|s)$")


# Fairer: the words a naming convention is stated with interchangeably ("use 'h_' as a
# prefix" states "start names with 'h_'"), and "primary"/"main".
_SAME = {"prefix": "start", "begin": "start", "suffix": "end", "primary": "main"}


def _stems(words: frozenset[str]) -> set[str]:
    out = set()
    for word in words:
        word = _SAME.get(word, word)
        out.add(_STEM.sub("", word) if len(word) > 4 else word)
    return out


# Fairer: a number written as a word is the same number ("seven days" states "7 days").
_NUMBERS = {
    w: str(i)
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
}
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBERS) + r")\b", re.I)
# Stricter: a rule and its opposite are not the same rule ("Avoid using a debugger" does not
# state "always use a debugger"). The direction is read before a "but", "even", "instead" or
# "rather", so "…, even if you don't use it" stays a positive rule.
_NEGATIVE = re.compile(
    r"\b(?:never|avoid\w*|stop\s+\w+ing|refrain\s+from|(?:don'?t|do\s+not)(?!\s+always)|"
    r"no\s+longer|no\s+more(?!\s+than)|forget\s+about|without|not\s+(?:using|to)|disable)\b"
    r"|^(?:so,?\s+|firstly,?\s+)?no\s+(?!more\s+than)\w",
    re.I,
)
_DIRECTION_END = re.compile(r"\bbut\b|\beven\b|\binstead\b|\brather\b", re.I)


def _negative(text: str) -> bool:
    return bool(_NEGATIVE.search(_DIRECTION_END.split(text, maxsplit=1)[0]))


def states(statement: str, topic: str) -> bool:
    """True when a captured statement states the topic (see the thresholds above), in the
    same direction."""
    if _negative(statement) != _negative(topic):
        return False
    statement = _NUMBER_WORD.sub(lambda m: _NUMBERS[m.group(1).casefold()], statement)
    topic = _NUMBER_WORD.sub(lambda m: _NUMBERS[m.group(1).casefold()], topic)
    topic_values, values = values_of(topic), values_of(statement)
    topic_words, words = _stems(plain_words(topic)), _stems(plain_words(statement))
    overlap = len(topic_words & words) / len(topic_words) if topic_words else 1.0
    if topic_values:
        return bool(topic_values & values) and overlap >= WORDS_WITH_VALUES
    names = _stems(frozenset(w.casefold() for w in _PROPER.findall(topic)))
    if names and names <= words and overlap >= WORDS_WITH_VALUES:
        # Fairer: the product a rule picks is its value ("start using Trello for your
        # projects" states "use Trello as the project management tool").
        return True
    return overlap >= WORDS_WITHOUT_VALUES


# A capitalised word after a topic's first word: a product's or a tool's name (Jira, PyCharm).
_PROPER = re.compile(r"(?<=\s)[A-Z][\w-]*")


def transcript_lines(session: Session, session_id: str, cwd: str) -> list[str]:
    """The session as Claude Code JSONL: mentor turns as user entries, mentee turns as
    assistant entries."""
    lines = []
    for index, (role, text) in enumerate(session.turns):
        content: object = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(
            json.dumps(
                {
                    "type": role,
                    "uuid": f"{session_id}-{index}",
                    "sessionId": session_id,
                    "cwd": cwd,
                    "message": {"role": role, "content": content},
                }
            )
        )
    return lines
