"""Deterministic outcome attribution: did the agent's tool inputs follow or contradict an engram?

Pure Python. Key terms are what an engram is about: code spans (`like this`), identifiers and
paths, then the remaining content words. A tool input "matches" when it holds enough of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

MATCH_SHARE = 0.6  # share of the key terms an input must contain to match
TOUCH_TERMS = 2  # salient terms one input or prompt must hold for the session to touch a topic
MAX_TERMS = 6
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "then",
        "else",
        "when",
        "while",
        "for",
        "to",
        "of",
        "in",
        "on",
        "at",
        "by",
        "with",
        "from",
        "into",
        "onto",
        "over",
        "under",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "we",
        "you",
        "they",
        "i",
        "he",
        "she",
        "them",
        "our",
        "your",
        "their",
        "my",
        "me",
        "us",
        "do",
        "does",
        "did",
        "done",
        "dont",
        "don't",
        "doesn't",
        "not",
        "no",
        "never",
        "always",
        "must",
        "should",
        "shall",
        "will",
        "would",
        "can",
        "could",
        "may",
        "might",
        "avoid",
        "prefer",
        "use",
        "using",
        "used",
        "instead",
        "rather",
        "than",
        "before",
        "after",
        "every",
        "each",
        "all",
        "any",
        "some",
        "more",
        "most",
        "less",
        "least",
        "only",
        "also",
        "just",
        "make",
        "sure",
        "ensure",
        "keep",
        "run",
        "running",
        "write",
        "writing",
        "code",
        "file",
        "files",
        "please",
        "via",
        "per",
        "about",
        "so",
        "such",
        "than",
        "too",
        "very",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "how",
        "new",
        "old",
        "one",
        "two",
        "first",
        "last",
        "like",
        "same",
        "other",
        "need",
        "needs",
        "needed",
        "want",
        "wants",
        "require",
        "requires",
        "required",
        "let",
        "lets",
        "get",
        "gets",
        "got",
        "set",
        "sets",
    ]
    # What is left of a negative contraction once the apostrophe splits the word ("don't" →
    # "don"): it names no topic, and "don" is in every other sentence a person types.
    + [
        f"{stem}n"
        for stem in [
            "do",
            "does",
            "did",
            "is",
            "are",
            "was",
            "were",
            "wo",
            "would",
            "should",
            "could",
            "has",
            "have",
            "had",
            "must",
            "need",
            "ai",
            "sha",
            "might",
        ]
    ]
)
CODE_SPAN = re.compile(r"`([^`]{1,120})`")
_CODEISH = re.compile(r"[_./\-:@0-9]|[a-z][A-Z]")  # an identifier, a path, a flag, a version
TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/:@+]*")


@dataclass(frozen=True)
class Attribution:
    result: str  # followed | contradicted | ignored | irrelevant
    evidence: str


def key_terms(statement: str, *, limit: int = MAX_TERMS) -> list[str]:
    """The distinctive terms of a statement, lowercased, most specific first."""
    terms: list[str] = []
    for span in CODE_SPAN.findall(statement):
        span = span.strip().lower()
        if span and span not in terms:
            terms.append(span)
    rest = CODE_SPAN.sub(" ", statement)
    words = [w.strip(".:/-").lower() for w in TOKEN.findall(rest)]
    codeish = [w for w in words if _CODEISH.search(w) and len(w) > 1]
    plain = [w for w in words if w not in STOP_WORDS and len(w) > 2 and w not in codeish]
    # Code spans and identifiers are what a tool input would show; plain words only when the
    # statement has none, or they would dilute the match.
    for word in codeish if (terms or codeish) else plain:
        if word and word not in terms:
            terms.append(word)
    return terms[:limit]


def has_term(term: str, haystack: str) -> bool:
    """`term` occurs in `haystack` (lowercased) as a whole token: "gh" is not in "github"."""
    return re.search(r"(?<![\w-])" + re.escape(term) + r"(?![\w-])", haystack) is not None


def matches(terms: Sequence[str], text: str, *, share: float = MATCH_SHARE) -> bool:
    """True when `text` holds at least `share` of the terms (and at least one) as whole tokens.

    The one matcher: reminders (`trigger_matches`) and outcomes (`attribute`) both use it, so a
    reminder and the outcome it is judged by agree on the same input.
    """
    if not terms:
        return False
    haystack = text.lower()
    hits = sum(1 for term in terms if has_term(term, haystack))
    return hits >= 1 and hits / len(terms) >= share


def trigger_matches(*, trigger_context: str, statement: str, tool_input: str) -> bool:
    """Whether an engram's trigger fires for a tool input.

    A trigger_context lists alternatives (separated by commas, "|" or new lines), each a set
    of words that must all appear as whole tokens: "gh --repo, git push --force". Without
    one, the statement's key terms must appear, at least MATCH_SHARE of them.
    """
    if trigger_context.strip():
        haystack = tool_input.lower()
        for alternative in re.split(r"[,|\n]+", trigger_context.lower()):
            words = alternative.split()
            if words and all(has_term(word, haystack) for word in words):
                return True
        return False
    return matches(key_terms(statement), tool_input)


def salient_terms(statement: str, anti_pattern: str = "", trigger_context: str = "") -> set[str]:
    """Every term that would show the session touched an engram's topic: its key terms, the
    longer plain words of its statement and anti-pattern, and its trigger's words."""
    terms = set(key_terms(statement, limit=50)) | set(key_terms(anti_pattern, limit=50))
    for text in (statement, anti_pattern, trigger_context):
        for word in TOKEN.findall(CODE_SPAN.sub(" ", text)):
            word = word.strip(".:/-").lower()
            if len(word) > 3 and word not in STOP_WORDS:
                terms.add(word)
    return {t for t in terms if t}


def _untouched(
    terms: set[str], texts: Sequence[str], trigger: AbstractSet[str] = frozenset()
) -> bool:
    """No one text (a tool input, a prompt) holds TOUCH_TERMS of the terms (all of them when
    there are fewer) or a word of the trigger (which names where the rule applies). One shared
    word of the statement is not its topic: a long real session's inputs hold "user", "file" or
    "main" somewhere whatever the rule says."""
    terms = terms | trigger
    need = min(TOUCH_TERMS, len(terms))
    for haystack in (text.lower() for text in texts):
        if any(has_term(term, haystack) for term in trigger):
            return False
        if sum(1 for term in terms if has_term(term, haystack)) >= need:
            return False
    return bool(terms)


def path_words(path: str) -> frozenset[str]:
    """The words of a working folder's path (`/Users/dev/code/Apollo` → users, dev, code,
    apollo): every absolute path a session's tools touch holds them, whatever the work was, so
    they show nothing about a rule's topic (a rule naming the project's own name would
    otherwise "apply" in every session of the project)."""
    return frozenset(
        word.strip(".:/-").lower()
        for word in TOKEN.findall(re.sub(r"[\\/]+", " ", path))
        if len(word.strip(".:/-")) > 1
    )


# Prose an agent writes about its work, as opposed to what it does: inside a shell command, a
# heredoc's body (a commit message, a PR description) and the value of a message flag (`git
# commit -m "…"`, `gh pr create --title "…" --body "…"`); in a tool's input, what it tells a
# subagent or the person (a task's prompt, a to-do list, a plan, a command's description) and
# the text of a document it writes (a Markdown plan). It says what the agent meant or planned,
# not what it did: a commit message holding "state" neither follows nor breaks "Do not commit
# in a broken state", and a plan that says "push directly to main" pushes nothing.
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_]\w*)\1.*?\n[ \t]*\2\b", re.S)
_MESSAGE_FLAG = re.compile(
    r"((?:^|\s)(?:-m|--message|--body|--title|--notes|--subject)(?:\s+|=)"
    r"|(?:^|\s)(?:-f|-F|--field|--raw-field)\s+(?:body|title|message|description|comment)=)"
    r"(\"(?:[^\"\\]|\\.)*\"|'[^']*')",
    re.S,
)
PROSE_KEYS = frozenset(
    {"description", "prompt", "todos", "plan", "activeForm", "question", "questions", "title",
     "body", "summary", "message", "subject", "allowedPrompts"}
)  # fmt: skip
_WRITTEN_KEYS = frozenset({"content", "new_string", "old_string", "edits", "new_source"})
_DOCUMENT = re.compile(r"\.(?:md|mdx|markdown|txt|rst|adoc|org)$", re.I)


def _bare_command(command: str) -> str:
    if not any(mark in command for mark in ("<<", "-m", "--", "-f", "-F")):
        return command
    return _MESSAGE_FLAG.sub(r"\1''", _HEREDOC.sub(r"<<\2", command))


def without_prose(tool_input: str, *, plain: bool = False) -> str:
    """A tool input without its prose: a shell command's heredoc bodies and message flags'
    values, a JSON input's prose fields (`PROSE_KEYS`) and, for a document (`*.md`, `*.txt`
    …), the text written into it. With `plain` (a rule said in plain words only), also without
    any text written into a file and without paths and file names: code and documents hold
    such a rule's words as names and comments, and paths as folder and file names (`state.go`,
    `main/`), which show nothing of the practice ("Do not commit in a broken state")."""
    bare = _without_prose(tool_input, plain)
    return _PATH_OR_FILE.sub(" ", bare) if plain else bare


def _without_prose(tool_input: str, plain: bool) -> str:
    if not tool_input.lstrip().startswith("{"):
        return _bare_command(tool_input)
    try:
        value = json.loads(tool_input)
    except (ValueError, RecursionError):
        return _bare_command(tool_input)
    if not isinstance(value, dict):
        return tool_input
    kept = {key: item for key, item in value.items() if key not in PROSE_KEYS}
    path = next((value.get(k) for k in ("file_path", "notebook_path", "path") if k in value), "")
    if plain or (isinstance(path, str) and _DOCUMENT.search(path)):
        kept = {key: item for key, item in kept.items() if key not in _WRITTEN_KEYS}
    if isinstance(kept.get("command"), str):
        kept["command"] = _bare_command(kept["command"])
    return tool_input if kept == value else json.dumps(kept)


_PATH_OR_FILE = re.compile(r"[^\s\"'=]*/[^\s\"']*|\b[\w-]+\.[A-Za-z]{1,6}\b")


def names_code(statement: str) -> bool:
    """The statement names something a tool input would hold as code: a code span, an
    identifier, a path or a flag (`pnpm`, `os.Exit`, `checkpointId`, `--no-verify`)."""
    if CODE_SPAN.search(statement):
        return True
    return any(
        _CODEISH.search(word.strip(".:/-")) and len(word.strip(".:/-")) > 1
        for word in TOKEN.findall(statement)
    )


def attribute(
    *,
    statement: str,
    polarity: str | None,
    anti_pattern: str = "",
    inputs: Iterable[str],
    trigger_context: str = "",
    context: Iterable[str] = (),
    ambient: AbstractSet[str] = frozenset(),
) -> Attribution:
    """Heuristic outcome for one injected engram from the session's tool inputs.

    A "don't" engram with a trigger is judged by its trigger alone: the input a PreToolUse
    reminder warned about is exactly the input that counts against it. An engram that was
    neither followed nor contradicted is "irrelevant" when nothing in the session — no one tool
    input, prompt or other `context` — holds two of its salient terms or trigger words (DESIGN:
    the session never touched its topic), and "ignored" otherwise. Terms in `ambient` (the
    words of the session's working folder, `path_words`) count for neither. The prose inside a
    shell command (`without_prose`: a commit message says what the agent meant, not what it
    did; so is a plan, a to-do list or a subagent's prompt) is no evidence of following or
    breaking a rule, but it does show the session touched its topic; nor, for a rule said in
    plain words only, is the text written into a file (`without_prose(plain=True)`).
    """
    inputs = [text for text in inputs if text]
    # A trigger names where the rule applies, often a folder: its paths stay.
    plain = not trigger_context.strip() and not (names_code(statement) or names_code(anti_pattern))
    acted = [without_prose(text, plain=plain) for text in inputs]
    verdict = _attribute(
        statement=statement,
        polarity=polarity,
        anti_pattern=anti_pattern,
        inputs=acted,
        trigger_context=trigger_context,
        ambient=ambient,
    )
    if verdict.result == "ignored":
        # What the agent wrote about its work does show what the session was about.
        texts = inputs + [text for text in context if text]
        trigger = salient_terms("", "", trigger_context)
        salient = salient_terms(statement, anti_pattern) - ambient
        if _untouched(salient, texts, trigger):
            return Attribution(
                "irrelevant", "nothing in the session (prompts, tool inputs) touched its terms"
            )
    return verdict


def _attribute(
    *,
    statement: str,
    polarity: str | None,
    anti_pattern: str,
    inputs: Sequence[str],
    trigger_context: str,
    ambient: AbstractSet[str] = frozenset(),
) -> Attribution:
    if polarity == "dont" and trigger_context.strip():
        for text in inputs:
            if trigger_matches(
                trigger_context=trigger_context, statement=statement, tool_input=text
            ):
                return Attribution("contradicted", f"its trigger fired on: {text[:200]}")
        return Attribution("ignored", "its trigger fired on no tool input")
    if polarity == "dont" or anti_pattern:
        terms = [t for t in key_terms(anti_pattern or statement) if t not in ambient]
        for text in inputs:
            if matches(terms, text):
                return Attribution("contradicted", f"tool input matched {terms}: {text[:200]}")
        if polarity == "dont":
            return Attribution("ignored", "no tool input touched what it warns about")
    terms = [t for t in key_terms(statement) if t not in ambient]
    for text in inputs:
        if matches(terms, text):
            return Attribution("followed", f"tool input matched {terms}: {text[:200]}")
    return Attribution("ignored", "no tool input matched it")
