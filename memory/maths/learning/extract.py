"""The heuristic lesson extractor: the rule clause itself, cleaned, with polarity, anti-pattern,
type and tags (never the whole prompt). Pure Python (no Django).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from memory.maths.learning import cues
from memory.maths.learning.classify import _masked, classify, classify_sentence
from memory.maths.learning.text import (
    _LEAD_INS,
    _PREAMBLES,
    _TYPOGRAPHY,
    _WORD,
    CORRECTION,
    INSTRUCTION,
    LONG_PROMPT_SENTENCES,
    MAX_CLAUSE_CHARS,
    MAX_DRAFTS_PER_PROMPT,
    MAX_QUOTE_CHARS,
    MIN_CLAUSE_WORDS,
    TIER_EXPLICIT,
    TIER_INFERRED,
    is_document,
    sentences,
)
from memory.scanner import scan_secrets

# --- the heuristic extractor ----------------------------------------------------------------

_TRAILING_REASON = re.compile(
    r"(?:,\s*|\s+[-]+\s+|\s+)(?:because|since|as\s+(?:it|this|that|they)|so\s+that|which\s+"
    r"(?:helps|makes|will|is)|this\s+(?:helps|will|makes|is))\b.*$",
    re.I,
)
_TRAILING_CHATTER = re.compile(
    r"(?:,\s*|\s+)(?:ok(?:ay)?|thanks|thank\s+you|please|remember\s+that|got\s+it|alright|"
    r"right)\s*[.!?]*$",
    re.I,
)
# The X ends at a comma, a semicolon or a sentence's full stop (a dot followed by a space or
# the end), so "instead of os.path." keeps "os.path".
_ANTI = (
    re.compile(r"\binstead\s+of\s+(.+?)(?:[,;]|\.(?=\s|$)|$)", re.I),
    re.compile(r"\brather\s+than\s+(.+?)(?:[,;]|\.(?=\s|$)|$)", re.I),
    re.compile(r"\bprefer\w*\s+.+?\s+(?:over|to)\s+(.+?)(?:[,;]|\.(?=\s|$)|$)", re.I),
    re.compile(r"\bnot\s+(.+?)\s*,?\s+but\b", re.I),
    re.compile(r"[,;]\s*(?:and\s+)?not\s+(.+?)(?:[,;]|\.(?=\s|$)|$)", re.I),
    re.compile(r"\S\s+not\s+([\w.@/'\"`-]+)\s*[.!]?$", re.I),
    # (the last: `negated_action`'s)
    re.compile(
        r"\b(?:never|do\s+not|don'?t|avoid|stop|no\s+more)\s+(.+?)(?:[,;]|\.(?=\s|$)|$)", re.I
    ),
)
_NEGATIVE_START = re.compile(
    r"^(?:never|do\s+not|don'?t|avoid|stop|no\s+more|not\b|forget\s+about|refrain|"
    r"no\s+(?!more\s+than)\w+|(?:we|i)\s+(?:do\s+not|don'?t|"
    r"never))",
    re.I,
)
_POSITIVE_AFTER_NEGATIVE = re.compile(
    r"\b(?:instead\s+of|rather\s+than|but\s+(?:use|do|prefer)|over)\b", re.I
)
_TYPE_WORDS = (
    ("terminological", re.compile(r"\b(?:call(?:ed)?|means?|term|name\s+for|refer\s+to)\b", re.I)),
    (
        "procedural",
        re.compile(r"\b(?:before|after|then|first|step|run|when\s+\w+ing|workflow)\b", re.I),
    ),
    (
        "architectural",
        re.compile(
            r"\b(?:architecture|module|layer|service|database|schema|api|dependency|"
            r"dependencies|package|framework|library|design)\b",
            re.I,
        ),
    ),
)
_STOP_TAGS = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "to",
        "of",
        "in",
        "on",
        "for",
        "with",
        "from",
        "by",
        "at",
        "as",
        "is",
        "are",
        "be",
        "it",
        "this",
        "that",
        "these",
        "those",
        "always",
        "never",
        "dont",
        "don't",
        "do",
        "not",
        "use",
        "using",
        "your",
        "our",
        "we",
        "you",
        "i",
        "my",
        "all",
        "every",
        "each",
        "any",
        "should",
        "must",
        "make",
        "sure",
        "please",
        "when",
        "whenever",
        "instead",
        "rather",
        "than",
        "prefer",
        "over",
        "them",
        "their",
        "its",
        "into",
        "start",
        "end",
        "name",
        "names",
        "add",
    ]
)
_QUOTED_VALUE = re.compile(r"'[^'\s]{1,40}'|\"[^\"\n]{1,40}\"|`[^`\n]{1,60}`")
_TAG_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_+#.-]{2,}")


@dataclass(frozen=True)
class LessonDraft:
    """A lesson ready for the write path: statement, type, polarity, tier and the rest."""

    statement: str
    polarity: str | None
    tier: str
    type: str = "behavioral"
    anti_pattern: str = ""
    tags: tuple[str, ...] = ()
    rationale: str = ""
    trigger_context: str = ""
    kind: str = INSTRUCTION

    def as_dict(self) -> dict[str, Any]:
        return {
            "statement": self.statement,
            "type": self.type,
            "polarity": self.polarity,
            "tier": self.tier,
            "anti_pattern": self.anti_pattern,
            "tags": list(self.tags),
            "rationale": self.rationale,
            "trigger_context": self.trigger_context,
        }


def clean_clause(sentence: str) -> str:
    """The rule in a sentence: lead-ins, preambles, trailing reasons and chatter removed."""
    text = sentence.translate(_TYPOGRAPHY).strip().strip("\"'\u201c\u201d")
    for _ in range(3):
        before = text
        text = _LEAD_INS.sub("", text).strip()
        text = _PREAMBLES.sub("", text).strip()
        if text == before:
            break
    text = _TRAILING_REASON.sub("", text).strip()
    text = _TRAILING_CHATTER.sub("", text).strip()
    text = text.rstrip(" ,;:-?").strip()
    if len(text) > MAX_CLAUSE_CHARS:
        cut = text.rfind(" ", 0, MAX_CLAUSE_CHARS)
        text = text[: cut if cut > 0 else MAX_CLAUSE_CHARS].rstrip(" ,;:")
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    if text[-1] not in ".!":
        text += "."
    return text


def polarity_of(statement: str) -> str:
    """ "dont" for a rule that forbids ("never X", "don't X", "avoid X"), else "do"."""
    text = _masked(statement)
    if _NEGATIVE_START.match(text.strip()) and not _POSITIVE_AFTER_NEGATIVE.search(text):
        return "dont"
    return "do"


def anti_pattern_of(statement: str) -> str:
    """What the rule warns against: the X of "not X / instead of X / never X", or ""."""
    for pattern in _ANTI:
        match = pattern.search(statement)
        if match:
            value = match.group(1).strip(" .,;:'\"")
            if value and len(value) <= MAX_CLAUSE_CHARS:
                return value
    return ""


def negated_action(statement: str) -> str:
    """The X of "never X / do not X / don't X / avoid X", or "": the action the rule forbids,
    up to the end of its clause."""
    match = _ANTI[-1].search(statement)
    return match.group(1).strip(" .,;:'\"") if match else ""


def type_of(statement: str) -> str:
    for name, pattern in _TYPE_WORDS:
        if pattern.search(statement):
            return name
    return "behavioral"


def tags_of(statement: str, limit: int = 5) -> tuple[str, ...]:
    """A few keywords of a statement: quoted or code-like tokens first, then longer words."""
    values = [v.strip("'\"`") for v in _QUOTED_VALUE.findall(statement)]
    words = [w for w in _TAG_WORD.findall(statement) if w.casefold() not in _STOP_TAGS]
    words.sort(key=lambda w: -len(w))
    out: list[str] = []
    for item in [*values, *words]:
        tag = item.casefold().strip(".")[:50]
        if tag and tag not in out and len(tag) > 1:
            out.append(tag)
        if len(out) >= limit:
            break
    return tuple(out)


_ANAPHOR = re.compile(
    r"\b(?:this|these|that|those)\s+(?!is\b|was\b|repo|project|codebase|team|company|way\b)\w+"
    r"|\b(?:it|them)\b",
    re.I,
)
_SUBCLAUSE = re.compile(
    r"(?:[,;]\s*|\s+)(?:(?:and\s+)?so(?!\s+(?:far|much|many|long|that|to\s+speak)\b)|but|"
    r"which\s+is\s+why|hence)\s+|;\s+"
    # "fix the template so that from now on every page has a title": the change for now, then
    # the rule it sets
    r"|\s+so\s+that\s+(?=(?:going\s+forward|from\s+now\s+on|from\s+here\s+on|in\s+(?:the\s+)?"
    r"future|next\s+time)\b)"
    # a comma splice before a standing "we/you always/never …": "Let's do the one here as
    # well, we always want a valid id" — the request for now, then the rule
    r"|,\s+(?=(?:we|you)\s+(?:(?:should|must|will)\s+)?(?:always|never)\b)",
    re.I,
)


def focus(sentence: str) -> str:
    """The part of a long sentence that states the rule: "the build is slow, so I prefer X" → "I
    prefer X". The whole sentence when no single part does."""
    parts = [p for p in _SUBCLAUSE.split(sentence) if p and p.strip()]
    if len(parts) < 2:
        return sentence
    for part in parts:
        if classify_sentence(part):
            return part.strip()
    return sentence


# A request to record a rule that carries the rule: "create a rule that specifies that when
# fixing a bug …", "add a rule to CLAUDE.md saying …", "update AGENTS.md to say that …", "make a
# skill that makes sure, whenever docs change, …". Stored as it stands, the request tells a later
# session to write the rule again; the rule itself is what was meant (`rule_inside`).
_RULE_NOUN = (
    r"(?:rules?|guidelines?|instructions?|conventions?|skills?|notes?|memor(?:y|ies)|@?[\w./-]*"
    + cues.RULES_FILE
    + r")"
)
_RULE_WRAPPER = re.compile(
    r"^(?:let'?s\s+|please\s+)?"
    + cues.RECORD_VERB
    + r"\s+(?:[\w@.'\"-]+\s+){0,4}?"
    + _RULE_NOUN
    + r"\b"
    r"[^.!?:]{0,120}?(?:\b(?:that|which|saying|stating)\b|\bto\s+(?:say|specify|state|require|"
    r"note|mention|include)\b|:)\s*"
    r"(?:(?:says?|states?|specif(?:y|ies)|requires?|makes?\s+sure|ensures?|mentions?|"
    r"tells?\s+(?:you|claude|the\s+agent)(?:\s+to)?)\b\s*)?(?:that\b)?[\s,:]*",
    re.I,
)
# "add a rule to CLAUDE.md to check …": the rule is what follows the file ("… to reflect this"
# points back, see _REFERENCE_ONLY and cues._POINTS_BACK).
_RULE_FOR_FILE = re.compile(
    r"^(?:let'?s\s+|please\s+)?"
    + cues.RECORD_VERB
    + r"\s+(?:a\s+|an\s+|one\s+)?(?:new\s+|short\s+)?(?:rule|guideline|instruction|note)s?\s+"
    r"(?:to|in|into)\s+(?:the\s+|your\s+|our\s+)?@?[\w./-]*"
    + cues.RULES_FILE
    + r"\s+to\s+(?!"
    + cues.POINTS_BACK_VERB
    + r"\b)(?=(?-i:[a-z]))",
    re.I,
)
# "Update the rules.", "Create a skill.": the request with nothing of the rule in it ("add this
# to CLAUDE.md" points at what came before and stays a candidate).
_BARE_REQUEST = re.compile(
    r"^"
    + cues.RECORD_VERB
    + r"\s+(?:(?!(?:this|that|it|these|those)\b)[\w@.'\"-]+\s+){0,3}?"
    + _RULE_NOUN
    + r"(?:\s+(?:file|files|accordingly|"
    r"too|as\s+well))?\s*[.!]?$",
    re.I,
)
# What follows that points back instead of stating the rule: "… to specify this process I just
# asked for", "… that covers it": the request is kept as it stands (the rule is elsewhere).
_REFERENCE_ONLY = re.compile(
    r"^(?:this|that|it|these|those|them|what|the\s+(?:following|above|same))\b|^covers?\b", re.I
)
# "when fixing a bug to first create …" → "When fixing a bug, first create …".
_WHEN_TO = re.compile(
    r"^((?:when|whenever|before|after|if|while|each\s+time|every\s+time)\b[^.!?]{3,120}?)"
    r"\s+to\s+(?!(?:the|a|an|this|that|my|our|your|its|their|it|them|me|us|do|be)\b)(\w.*)$",
    re.I,
)


def rule_inside(statement: str) -> str:
    """The rule a request to record one carries ("create a rule that when fixing a bug to first
    write a failing test" → "When fixing a bug, first write a failing test."); `statement`
    unchanged when it is no such request or names no rule after it."""
    match = _RULE_WRAPPER.match(statement) or _RULE_FOR_FILE.match(statement)
    if match is None:
        return statement
    rest = statement[match.end() :].strip().rstrip(".!").strip()
    if len(_WORD.findall(rest)) < MIN_CLAUSE_WORDS or _REFERENCE_ONLY.match(rest):
        return statement
    rest = re.sub(r"^to\s+", "", rest, flags=re.I)
    when = _WHEN_TO.match(rest)
    if when:
        rest = f"{when.group(1).rstrip(' ,')}, {when.group(2)}"
    return clean_clause(rest)


# A cleaned clause that asks for attention or effort but names no practice is not a lesson.
_META = re.compile(
    r"^(?:pay(?:ing)?\s+(?:extra\s+|close\s+)?attention|focus|shift|proceed|try\s+(?:something|"
    r"to\s+(?:keep|stay|be))|keep\s+(?:me|us|it\s+simple|up)|start\s+(?:paying|adopting|thinking)|"
    r"develop|own\s+the|set\s+aside|review\s+the|let'?s|i\s+(?:trust|like|love|hope|think|believe|"
    r"know|am|was|will)|i'?m|we'?re(?!\s+(?:using|on)\b)|we\s+(?:want|can|could|will|are)|here\s+(?:are|is)|"
    r"attention\s+to|with\s+(?:these|this)|it'?s|this|these|that|there|for\s+(?:our|the)\s+\w+,)\b",
    re.I,
)


# Text that holds (or held) a credential: a redaction mark, a secret-named assignment with any
# value ("API_KEY=XXXX", "password: hunter2"), or a long hex / base64-like token. A draft holding
# one is never stored: it would be injected into every session's brief.
_CREDENTIAL = re.compile(
    r"\[REDACTED:"
    r"|\b[\w.-]*(?:key|token|secret|passw(?:or)?d|passwd|pwd|credentials?|auth)\b"
    r"(?:\s*=\s*[`'\"]?\S{4,}|\s*:\s*[`'\"]?(?=\S*[\dX*]{2})\S{6,})"
    r"|(?<![\w/.-])[0-9a-f]{24,}(?![\w/-])(?!\.\w)"
    r"|(?<![\w/.-])(?=[\w+/-]*\d)(?=[\w+/-]*[A-Z])(?=[\w+/-]*[a-z])[\w+/-]{32,}={0,2}"
    r"(?![\w/-])(?!\.\w)",
    re.I,
)


def holds_credential(text: str) -> bool:
    """True when `text` holds a credential-like token or a redaction mark (see `_CREDENTIAL`),
    or anything the write path's secret scanner finds (`memory.scanner.scan_secrets`: keys with
    a known prefix, connection strings with a password, private keys, JWTs)."""
    return bool(_CREDENTIAL.search(text)) or bool(scan_secrets(text))


def extract(prompt: str, *, limit: int = MAX_DRAFTS_PER_PROMPT) -> list[LessonDraft]:
    """Heuristic extraction: each rule-stating clause of `prompt`, cleaned, as a draft (≤ limit).

    Never the whole prompt: only the sentence that states the rule, without its lead-in and its
    reason; of a request to record a rule, the rule it carries (`rule_inside`). Explicit
    instructions and preferences are tier A, corrections tier B; inside a long discussion
    (LONG_PROMPT_SENTENCES or more) tier A needs an explicit marker (`cues.marked`), and in a
    pasted document (`is_document`: long, or headed) only a request to record a rule is active.
    """
    drafts: list[LessonDraft] = []
    seen: set[str] = set()
    clauses = list(classify(prompt).clauses)
    discussion = bool(clauses) and len(sentences(prompt)) >= LONG_PROMPT_SENTENCES
    document = is_document(prompt)
    for clause in clauses:
        part = focus(clause.text)
        statement = rule_inside(clean_clause(part))
        if len(_WORD.findall(statement)) < MIN_CLAUSE_WORDS or holds_credential(clause.text):
            continue
        if _BARE_REQUEST.match(statement):
            continue  # "update the rules so that this is covered": the rule is elsewhere
        if _META.match(statement) and not cues.is_standing(statement):
            continue  # "Let's make a new rule …" and "We want X, not Y" stay
        key = statement.casefold()
        if key in seen:
            continue
        seen.add(key)
        # The tier is earned by the part that is kept: "keep X, but always write Y now" keeps
        # "keep X", which "always" does not make a standing rule; nor does "in the future" in
        # the reason cut off after it ("I asked why you skipped X, because in the future …").
        tier = clause.tier or cues.tier_of(
            _TRAILING_REASON.sub("", part).strip() or part,  # not a reason's words
            first=clause.index == 0 and clause.text.startswith(part),
            correction=clause.kind == CORRECTION,
            said=part,
        )
        before = clause.text[: max(clause.text.find(part), 0)]
        if before and cues.LEANS_ON_CONVERSATION.search(before):
            tier = TIER_INFERRED  # "If not, we should always …": the condition is the chat's
        if tier == TIER_EXPLICIT and discussion and not cues.marked(part):
            tier = TIER_INFERRED  # said in passing inside a discussion: a candidate
        if tier != TIER_INFERRED and document and not cues.RULE_REQUEST.search(part):
            tier = TIER_INFERRED  # a line of a pasted document: a candidate
        drafts.append(
            LessonDraft(
                statement=statement,
                polarity=polarity_of(statement),
                tier=tier,
                type=type_of(statement),
                anti_pattern=anti_pattern_of(statement),
                tags=tags_of(statement),
                rationale=(clause.quote or clause.text)[:MAX_QUOTE_CHARS],
                kind=clause.kind,
            )
        )
        if len(drafts) >= limit:
            break
    return drafts
