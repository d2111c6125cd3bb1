"""What the hooks deliver and when (DESIGN v3 "Delivery (hooks)"), as pure functions.

- SessionStart brief: the project's standing rules, one line each, within BRIEF_TOKENS, and a
  closing line that counts the rest.
- UserPromptSubmit: an engram passes only with evidence a single shared common word cannot
  give: the share of its salient terms the prompt covers, each term weighted by how specific it
  is in the owner's memory (BM25's idf over the active engrams), at least MIN_SHARED terms.
- PreToolUse: the trigger of an error → fix lesson, from the command that failed.

No Django: plain strings, counts and frozen dataclasses in and out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from memory.maths.attribution import STOP_WORDS
from memory.maths.learning.fixes import MAX_SHAPE_CHARS, lesson_parts
from memory.maths.ranking import clip_statement, render_line
from memory.maths.shell import FEEDERS, GROUPS, RUNNER_VALUE_FLAGS, RUNNERS
from memory.maths.textnorm import estimate_tokens

BRIEF_TOKENS = 800
BRIEF_HEADER = (
    "## Engram: standing rules for this project\n"
    "Stated by the user in earlier sessions. Name an id when one helped or misled.\n"
)
BRIEF_MORE = (
    "- …and {n} more standing rule{s}: see `GET /api/v1/engrams?scope={scope}&status=active` "
    "or the dashboard's Engrams page."
)
BRIEF_LINE_CHARS = 240  # a standing rule is a sentence; longer ones are cut with an ellipsis

# The quiet prompt path. Calibrated by bench/delivery.py on the coding-prompts dev split (see
# docs/benchmarks.md, issue #25): the share of an engram's salient-term weight the prompt must
# cover, and how many of its terms it must share (one shared word is never enough).
COVERAGE_FLOOR = 0.5
MIN_SHARED = 2
PROMPT_MAX_ITEMS = 3
PROMPT_TERMS_CHARS = 2000  # the lexical leg reads as much of a prompt
PROMPT_HEADER = "## Engram memory\nRelevant to this prompt; name an id if it helped or misled.\n"
TOOL_HEADER = "Engram, for this tool call:\n"

_TERM = re.compile(r"[a-z0-9][a-z0-9_.+#/-]*")
_EDGE = "._/-+#"
_CODE_SPAN = re.compile(r"`([^`\n]{1,200})`")
_FLAG = re.compile(r"^--?[A-Za-z][\w-]*$")
_WORD = re.compile(r"^[a-z][a-z0-9_-]*$")
MAX_TRIGGER_WORDS = 4
# In Engram.extra of an error → fix lesson: {"tool", "failed", "fixed"}, the shapes of the
# command that failed and of the one that worked (memory.maths.shell), stored at capture.
ERROR_FIX_KEY = "error_fix"


def _stem(word: str) -> str:
    # Plurals only: "tests" and "test" are one term; anything cleverer costs precision.
    if len(word) > 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> frozenset[str]:
    """The salient terms of a text: lowercased tokens, stop words and 1-2 letter words out."""
    out: set[str] = set()
    for token in _TERM.findall(text.lower()):
        word = token.strip(_EDGE)
        if len(word) < 3 or word in STOP_WORDS or word.isdigit():
            continue
        out.add(_stem(word))
    return frozenset(out)


def idf(df: int, n: int) -> float:
    """BM25's idf, ln(1 + (n - df + 0.5)/(df + 0.5)), ≥ 0; a term unseen so far counts df 0."""
    df = max(0, min(df, n))
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


@dataclass(frozen=True)
class Evidence:
    """Why an engram is relevant to a prompt: the shared terms and the weight they carry."""

    shared: tuple[str, ...]
    coverage: float  # Σ idf(shared) / Σ idf(engram terms), in [0, 1]
    weight: float  # Σ idf(shared)

    def admitted(self, *, floor: float = COVERAGE_FLOOR, min_shared: int = MIN_SHARED) -> bool:
        return len(self.shared) >= min_shared and self.coverage >= floor

    def parts(self) -> dict[str, object]:
        return {
            "shared": list(self.shared),
            "coverage": round(self.coverage, 3),
            "weight": round(self.weight, 3),
        }


def evidence(
    prompt_terms: frozenset[str],
    engram_terms: frozenset[str],
    df: Mapping[str, int],
    n: int,
) -> Evidence:
    """The share of the engram's term weight that the prompt covers (idf from df over n docs)."""
    if not engram_terms:
        return Evidence((), 0.0, 0.0)
    weights = {t: idf(df.get(t, 0), n) for t in engram_terms}
    total = math.fsum(weights.values())
    shared = sorted(engram_terms & prompt_terms, key=lambda t: (-weights[t], t))
    weight = math.fsum(weights[t] for t in shared)
    return Evidence(tuple(shared), weight / total if total > 0 else 0.0, weight)


# A maintenance note "not for: docker, deploy" lists contexts one word each; any other
# contraindication ("not when writing migrations") is one context of its salient words.
_NOT_FOR = re.compile(r"^\s*not\s+for\s*:\s*", re.I)


def contraindication_terms(notes: Iterable[object] | None) -> tuple[frozenset[str], ...]:
    """Each context an engram does not apply to, as the terms a prompt must hold to be one."""
    out: list[frozenset[str]] = []
    for note in notes or ():
        if not isinstance(note, str) or not note.strip():
            continue
        listed = _NOT_FOR.match(note)
        parts = note[listed.end() :].split(",") if listed else [note]
        out += [found for part in parts if (found := terms(part))]
    return tuple(out)


def contraindicated(prompt_terms: frozenset[str], avoid: Sequence[frozenset[str]]) -> bool:
    """The prompt is one of the contexts: it holds all of one's terms, or two when it has more."""
    return any(len(prompt_terms & context) >= min(2, len(context)) for context in avoid)


@dataclass(frozen=True)
class BriefItem:
    id: str
    statement: str
    escalation: str = "advisory"


@dataclass(frozen=True)
class Brief:
    """The rendered brief, the ids it shows (in order) and how many did not fit."""

    rendered: str
    shown: tuple[str, ...]
    more: int
    tokens: tuple[int, ...]  # per shown line


def brief(
    items: Sequence[BriefItem],
    *,
    scope: str,
    budget_tokens: int = BRIEF_TOKENS,
    total: int | None = None,
) -> Brief:
    """Items in the caller's order (strongest first), one line each, within budget_tokens with
    the header and the closing "n more" line ("n" out of `total` when the caller read only the
    first items); "" when there are none."""
    if not items:
        return Brief("", (), 0, ())
    total = max(total or 0, len(items))
    room = budget_tokens - estimate_tokens(BRIEF_HEADER)
    # Keep room for the closing line whenever something might not fit.
    reserve = estimate_tokens(BRIEF_MORE.format(n=total, s="s", scope=scope) + "\n")
    lines: list[str] = []
    shown: list[str] = []
    tokens: list[int] = []
    for index, item in enumerate(items):
        line = render_line(
            item.id, clip_statement(item.statement, BRIEF_LINE_CHARS), item.escalation
        )
        cost = estimate_tokens(line + "\n")
        last = index == total - 1
        if cost > room - (0 if last else reserve):
            break
        lines.append(line)
        shown.append(item.id)
        tokens.append(cost)
        room -= cost
    more = total - len(shown)
    if more:
        lines.append(BRIEF_MORE.format(n=more, s="" if more == 1 else "s", scope=scope))
    if not shown and not more:
        return Brief("", (), 0, ())
    return Brief(BRIEF_HEADER + "\n".join(lines) + "\n", tuple(shown), more, tuple(tokens))


def render_prompt(lines: Sequence[tuple[str, str, str]]) -> str:
    """(id, statement, escalation) as the prompt path's block; "" when empty."""
    if not lines:
        return ""
    body = "\n".join(render_line(eid, clip_statement(s), esc) for eid, s, esc in lines)
    return PROMPT_HEADER + body + "\n"


def code_spans(text: str) -> list[str]:
    """Every `code span` of a text, in order."""
    return [match.group(1) for match in _CODE_SPAN.finditer(text)]


def failed_command(anti_pattern: str) -> str:
    """The command an error → fix lesson warns against: its first `code span`, else the text."""
    match = _CODE_SPAN.search(anti_pattern)
    return (match.group(1) if match else anti_pattern).strip()


def fixed_marker(fixed: str, failed: str) -> str:
    """The first word of the command that worked which the failed one lacks ("" if none): a
    tool input holding it is already the fix (`.venv/bin/pytest` of `.venv/bin/pytest
    tests/*.py` against `pytest tests/*.py`)."""
    before = set(failed.split())
    return next((word for word in fixed.split() if word not in before), "")


def error_fix_commands(statement: str, extra: Mapping[str, object] | None) -> tuple[str, str]:
    """(the command an error → fix lesson warns about, the word only its fix has) for
    PreToolUse.

    From the shapes stored with the lesson when it was captured (`extra["error_fix"]`), so
    any wording matches. A lesson captured before they were stored falls back to its words:
    the first code span of its anti-pattern, and the last code span of the statement that is
    not that command ("When `Y` is not found, run … `X`." and "use `X` instead of `Y`": X
    worked).
    """
    extra = extra or {}
    stored = extra.get(ERROR_FIX_KEY)
    if isinstance(stored, Mapping):
        failed, fixed = stored.get("failed"), stored.get("fixed")
        if isinstance(failed, str) and failed.strip():
            return failed.strip(), fixed_marker(fixed if isinstance(fixed, str) else "", failed)
    failed = failed_command(str(extra.get("anti_pattern") or ""))
    spans = [span for span in code_spans(statement) if span.strip() != failed.strip()]
    return failed, fixed_marker(spans[-1] if spans else "", failed)


def tool_trigger(command: str, named: frozenset[str] = frozenset()) -> str:
    """A reminder trigger for a failed command: its program, subcommands and flags, up to the
    first path or value ("git add -A", "grep -r", "gh pr diff"), and any later flag in `named`
    (the flag the error names: "gh pr diff --stat"); "" when there is none.

    The tool-input matcher needs every trigger word as a whole token, so paths and values
    (which change from run to run) are left out.
    """
    words: list[str] = []
    seen_flag = seen_value = False
    runner = 0  # the words that only run the program after them (`uv run`, `npx`)
    raws = iter(command.split())
    for raw in raws:
        word = raw.strip("'\"")
        if not words or len(words) == runner:
            if runner and word in RUNNER_VALUE_FLAGS:
                next(raws, None)  # a runner's flag and its value (`uv run --project <path>`)
                continue
            program = word.rsplit("/", 1)[-1]
            if not program or not _WORD.match(program.lower()):
                return " ".join(words)
            words.append(program.lower())
            if (program.lower(), "") in RUNNERS:
                runner = len(words)
        elif runner == 0 and len(words) == 1 and (words[0], word) in RUNNERS:
            words.append(word)
            runner = 2
        elif _FLAG.match(word):
            if not seen_value or word.lower() in named:
                words.append(word.lower())
            seen_flag = True
        elif (
            not seen_flag
            and not seen_value
            and _WORD.match(word)
            and (
                len(words) == runner + 1
                or (len(words) == runner + 2 and words[-1] in GROUPS.get(words[-2], ()))
            )
        ):
            words.append(word)  # a subcommand: "git add", "npm install", "gh pr diff"
        else:
            seen_value = True
            if not named:
                break
        if len(words) >= MAX_TRIGGER_WORDS:
            break
    return " ".join(words)


_NAMED_FLAG = re.compile(r"--?[A-Za-z][\w-]*")
_CHAIN = re.compile(r"\s+(?:&&|\|\||;)\s+")
MAX_FIX_TRIGGER_WORDS = 6


def _fed(line: str) -> str:
    """The command of a pipeline that is not an output filter nor what feeds it its input
    (`echo | app sync | tail` → `app sync`)."""
    pieces = line.split(" | ")
    return next((p for p in pieces if p.split(" ")[0] not in FEEDERS), pieces[0])


def fix_trigger(statement: str, failed: str) -> str:
    """The trigger of an error → fix lesson, by what failed. A missing program fires on the
    program; a missing module on the program with the module's name (`python3 yaml`); any other
    failure on what the whole failing line ran: the program, subcommands and leading flags of
    each command of its `&&` chain (not the output filters after a pipe), and the flag the
    error names ("unknown flag: --stat"). A trigger as narrow as the failure keeps the lesson
    off every other `git add` or `gh pr` call."""
    kind, line, names = lesson_parts(statement) or ("error", failed, "")
    if kind == "not found":
        return tool_trigger(line).split(" ")[0]
    if kind == "no module":
        program = tool_trigger(line).split(" ")[0]
        return f"{program} {names.split('.')[0].lower()}" if program else ""
    if len(line) >= MAX_SHAPE_CHARS - 1:
        line = line.rsplit(" ", 1)[0]  # cut short when captured: its last word may be half
    named = frozenset(f.lower() for f in _NAMED_FLAG.findall(names))
    words: list[str] = []
    for part in _CHAIN.split(_fed(line)):
        for word in tool_trigger(part, named).split():
            if word not in words:
                words.append(word)
    return " ".join(words[:MAX_FIX_TRIGGER_WORDS]) or tool_trigger(failed)
