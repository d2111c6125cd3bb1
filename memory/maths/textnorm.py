"""Write-path text normalisation, content hashing, opposition pairs and token estimates.

Pure Python (no Django). Normalised text is what duplicate detection hashes and what the
opposition-pair check reads.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import unicodedata

CHARS_PER_TOKEN = 4

# Apostrophes join contractions ("don't" → "dont") instead of splitting them into two words.
_APOSTROPHES = frozenset("'\u2018\u2019\u02bc\uff07")
_WHITESPACE = re.compile(r"\s+")

# Each opposition pair as (one side, the other side); patterns run on normalised text, where
# "don't" has become "dont". The negative forms are listed so a bare "must" or "do" only counts
# when it is not the start of "must not" or "do not".
_OPPOSITION_PAIRS: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (re.compile(first), re.compile(second))
    for first, second in (
        (r"\balways\b", r"\bnever\b"),
        (r"\bdo\b(?!\s+not\b)", r"\b(?:dont|do\s+not)\b"),
        (r"\b(?:use|uses|used|using)\b", r"\b(?:avoid|avoids|avoided|avoiding)\b"),
        (r"\bmust\b(?!\s+(?:not|never)\b)", r"\b(?:mustnt|must\s+not|must\s+never)\b"),
        (
            r"\b(?:enable|enables|enabled|enabling)\b",
            r"\b(?:disable|disables|disabled|disabling)\b",
        ),
        (r"\b(?:prefer|prefers|preferred|preferring)\b", r"\b(?:avoid|avoids|avoided|avoiding)\b"),
    )
)

_OPPOSITE_POLARITIES = frozenset({("do", "dont"), ("dont", "do")})


def normalise(text: str) -> str:
    """NFKC, casefold, punctuation removed (Unicode category P*), whitespace collapsed and stripped.

    Apostrophes are dropped so contractions stay one word; every other punctuation character
    becomes a space so "foo-bar", "foo/bar" and "foo bar" normalise alike.
    """
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    chars = []
    for ch in folded:
        if ch in _APOSTROPHES:
            continue
        chars.append(" " if unicodedata.category(ch).startswith("P") else ch)
    return _WHITESPACE.sub(" ", "".join(chars)).strip()


def content_hash(text: str) -> str:
    """SHA-256 hex digest of the UTF-8 normalised text (64 lowercase hex characters); a lone
    surrogate (a JSON escape like "\\ud800" decodes to one) is hashed as "?", never an error."""
    return hashlib.sha256(normalise(text).encode("utf-8", "replace")).hexdigest()


def _sides(normalised: str, pair: tuple[re.Pattern[str], re.Pattern[str]]) -> frozenset[int]:
    return frozenset(i for i, pattern in enumerate(pair) if pattern.search(normalised))


def has_opposition(a: str, b: str) -> bool:
    """True when one statement uses one side of an opposition pair and the other the opposite side.

    Word-boundary matching on normalised text. For each pair the sides present in each statement
    are compared; statements that use the same sides (for instance both "always" and "never")
    do not oppose each other on that pair.
    """
    norm_a, norm_b = normalise(a), normalise(b)
    for pair in _OPPOSITION_PAIRS:
        sides_a, sides_b = _sides(norm_a, pair), _sides(norm_b, pair)
        if sides_a == sides_b:
            continue
        if any(1 - side in sides_b for side in sides_a):
            return True
    return False


def polarity_opposes(p1: str | None, p2: str | None) -> bool:
    """True for the polarity pair ("do", "dont") in either order; null polarity opposes nothing."""
    return (p1, p2) in _OPPOSITE_POLARITIES


def estimate_tokens(text: str) -> int:
    """Token estimate: ceil(characters / 4)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


# --- variants of one rule ---------------------------------------------------------------------

_VARIANT_TOKENS = re.compile(r"""'[^'\s][^']*'|"[^"]*"|`[^`]*`|\S+""")
_QUOTED = re.compile(r"""^(?:'.*'|".*"|`.*`)$""")
_CODE_CHARS = re.compile(r"""[\d_@/\\.:=#<>()\[\]{}$%+*|~^&]""")
_EDGE_PUNCTUATION = ".,;:!?"
# Words that carry a rule's direction: "never use X" and "always use X" are variants of one rule.
_DIRECTION_WORDS = frozenset(
    {
        "always", "never", "do", "dont", "don't", "not", "no", "must", "mustn't", "mustnt",
        "should", "shouldn't", "shouldnt", "use", "uses", "using", "avoid", "avoids", "avoiding",
        "enable", "enables", "disable", "disables", "prefer", "prefers",
    }
)  # fmt: skip
# A determiner right before a value belongs to the value: "use all UPPERCASE for class names" and
# "use snake_case for class names" state one rule.
_VALUE_DETERMINERS = frozenset({"a", "an", "the", "all", "only"})
VALUE = "<v>"
DIRECTION = "<d>"
MIN_VARIANT_WORDS = 2


@functools.lru_cache(maxsize=16384)  # ranking asks for the same statements on every prompt
def variant_key(statement: str) -> str | None:
    """The statement with its values and direction words masked, or None when too little is left.

    Values are quoted spans, tokens with digits or code characters, and capitalised names after
    the first word; direction words are always/never, do/don't, use/avoid, enable/disable, … Two
    statements with one key say the same rule with another value or the opposite direction
    ("start attribute names with 'j_'" / "… with 'q_'", "never use a linter" / "always use a
    linter"), so the newer one is most likely the current version. A determiner (a, the, all,
    only) right before a value is part of that value ("all UPPERCASE" / "snake_case").
    """
    out: list[str] = []
    plain = 0
    for position, raw in enumerate(_VARIANT_TOKENS.findall(statement.strip())):
        token = raw if _QUOTED.match(raw) else raw.strip(_EDGE_PUNCTUATION)
        if not token:
            continue
        lowered = token.casefold()
        if lowered in _DIRECTION_WORDS:
            if not out or out[-1] != DIRECTION:
                out.append(DIRECTION)
        elif (
            _QUOTED.match(token)
            or _CODE_CHARS.search(token)
            or (position > 0 and any(ch.isupper() for ch in token))
        ):
            if out and out[-1] in _VALUE_DETERMINERS:
                out.pop()  # still counted as a plain word: "use the Foo library" keeps its key
            out.append(VALUE)
        else:
            out.append(lowered)
            plain += 1
    if plain < MIN_VARIANT_WORDS or len(out) == plain:
        return None
    return " ".join(out)


_RULE_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#+)\s*")
RULE_MIN_WORDS = 4


# The metadata comment of a rule file Engram published itself (the dialectic app's artifacts).
ENGRAM_RULE_MARK = "<!-- engram:pattern:"


def rule_lines(text: str) -> list[str]:
    """The rule-like lines of a markdown rules file (CLAUDE.md, .claude/rules/*.md): bullets and
    sentences of at least four words, markers stripped, code blocks and rules left out. A file
    Engram published itself is not the project's own word: it yields nothing (otherwise Engram's
    output would suppress, and propose retiring, the engrams it came from)."""
    if ENGRAM_RULE_MARK in text:
        return []
    out: list[str] = []
    in_code = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            in_code = not in_code
            continue
        if in_code or line.strip().startswith("---"):
            continue
        cleaned = _RULE_MARKER.sub("", line).strip().strip("*_`")
        if len(cleaned.split()) >= RULE_MIN_WORDS and cleaned not in out:
            out.append(cleaned[:2000])
    return out
