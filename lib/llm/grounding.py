"""Is a quote the model gives really in the text it read? The check that keeps a model from
putting words in a user's mouth.

Pure Python (no Django). The match forgives what copying text forgives: whitespace (runs and line
breaks), letter case, straight versus typographic quotes and apostrophes, surrounding quote marks
and end punctuation, and an ellipsis standing for words left out. Nothing else: a paraphrase is
not a quote.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MIN_QUOTE_WORDS = 2
MIN_QUOTE_CHARS = 8  # letters and digits, not counting spaces or punctuation

_ELLIPSIS = re.compile(r"\s*(?:\.{3}|\u2026)\s*")
_OUTER = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb \t\n"
_END_PUNCT = ".,;:!?"
_APOSTROPHES = "'\u2018\u2019"
_DOUBLE_QUOTES = '"\u201c\u201d'
_ALNUM = re.compile(r"\w", re.UNICODE)


def _char_pattern(char: str) -> str:
    if char in _APOSTROPHES:
        return "['\u2018\u2019]"
    if char in _DOUBLE_QUOTES:
        return '["\u201c\u201d]'
    return re.escape(char)


def _piece_pattern(piece: str) -> re.Pattern[str]:
    words = ["".join(_char_pattern(c) for c in word) for word in piece.split()]
    return re.compile(r"\s+".join(words), re.IGNORECASE)


def quote_pieces(quote: str) -> list[str]:
    """The parts of a quote to find in order (split at an ellipsis), trimmed of quote marks and
    end punctuation; [] when the quote is too short to tell anything apart."""
    text = quote.strip(_OUTER).rstrip(_END_PUNCT).strip(_OUTER)
    pieces = [p.strip(_OUTER) for p in _ELLIPSIS.split(text)]
    pieces = [p for p in pieces if p]
    words = sum(len(p.split()) for p in pieces)
    letters = sum(len(_ALNUM.findall(p)) for p in pieces)
    if words < MIN_QUOTE_WORDS or letters < MIN_QUOTE_CHARS:
        return []
    return pieces


def find_quote(quote: str, sources: Iterable[str]) -> str | None:
    """The span of the first source that `quote` reproduces, as the source writes it (from the
    first quoted word to the last, words left out at an ellipsis included); None when no source
    holds it, or the quote is shorter than two words and eight letters."""
    pieces = quote_pieces(quote)
    if not pieces:
        return None
    patterns = [_piece_pattern(p) for p in pieces]
    for source in sources:
        # The earliest match of the first piece leaves the most room for the others.
        first = patterns[0].search(source)
        if first is None:
            continue
        position = first.end()
        for pattern in patterns[1:]:
            match = pattern.search(source, position)
            if match is None:
                break
            position = match.end()
        else:
            return source[first.start() : position]
    return None
