"""Updates: is a new rule a variant of an old one (the same slot with another value)?

Pure Python (no Django).
"""

from __future__ import annotations

import re

from memory.maths.learning.extract import _STOP_TAGS
from memory.maths.learning.text import _WORD

# --- updates ----------------------------------------------------------------------------------

_VALUE_TOKEN = re.compile(
    r"""'[^'\s]{1,40}'|"[^"\n]{1,40}"|`[^`\n]{1,60}`|\S*[\d_@/\\.:=#<>()\[\]{}$%+*|~^&]\S*"""
)
UPDATE_COSINE = 0.8
MIN_SHARED_WORDS = 0.5


_SENTENCE_PUNCTUATION = re.compile(r"[.,;:!?]+(?=\s|$)")


def values_of(statement: str) -> frozenset[str]:
    """The quoted spans and code-like tokens of a statement, casefolded, edge punctuation off."""
    out = set()
    for raw in _VALUE_TOKEN.findall(_SENTENCE_PUNCTUATION.sub("", statement)):
        value = raw.strip(".,;:!?").strip("'\"`").casefold()
        if value and any(ch.isalnum() for ch in value):
            out.add(value)
    return frozenset(out)


# "start" and "end" tell two naming rules apart, so they count here, unlike in tags.
_RULE_STOP = _STOP_TAGS - {"start", "end", "add"}


def plain_words(statement: str) -> frozenset[str]:
    """The words of a statement without its values and function words, casefolded, with a
    plural "s" dropped."""
    plain = _VALUE_TOKEN.sub(" ", _SENTENCE_PUNCTUATION.sub("", statement))
    words = {w.casefold() for w in _WORD.findall(plain)}
    return frozenset(
        w[:-1] if len(w) > 3 and w.endswith("s") else w
        for w in words
        if w not in _RULE_STOP and len(w) > 2
    )


def is_update(
    new: str, old: str, *, cosine: float, new_polarity: str | None, old_polarity: str | None
) -> bool:
    """True when `new` restates the rule `old` with another value or the opposite direction.

    DESIGN: cosine ≥ 0.8 with another value or the opposite direction (the same variant key is
    checked by the caller). The plain words must also overlap by half, so two rules about
    different things that share a shape ("prefix methods with 'x_'", "prefix classes with
    'y_'") are not taken for one another.
    """
    if cosine < UPDATE_COSINE or new.strip().casefold() == old.strip().casefold():
        return False
    slots_new, slots_old = naming_slots(new), naming_slots(old)
    if slots_new and slots_old and not slots_new & slots_old:
        return False  # "end function names" and "end function argument names": two rules
    a, b = plain_words(new), plain_words(old)
    if a and b and len(a & b) / len(a | b) < MIN_SHARED_WORDS:
        return False
    va, vb = values_of(new), values_of(old)
    other_value = bool(va and vb and va != vb)
    opposite = {new_polarity, old_polarity} == {"do", "dont"}
    return other_value or opposite


SAME_RULE_WORDS = 0.6


def same_rule_other_value(new: str, old: str) -> bool:
    """A lexical variant test that tolerates rephrasing: both statements carry values, the
    values differ, and the plain words of the shorter are mostly in the longer ("When naming
    pytest fixtures, always start them with 'make_'" / "Start pytest fixture names with
    'build_'")."""
    va, vb = values_of(new), values_of(old)
    if not va or not vb or va == vb:
        return False
    a, b = plain_words(new), plain_words(old)
    if not a or not b:
        return False
    return len(a & b) / len(a | b) >= SAME_RULE_WORDS


# The slot a rule fills: what it names or configures. Two rules of the same slot with other
# values (or the opposite direction) are two versions of one rule, however they are worded:
# "When naming pytest fixtures, always start them with 'make_'" and "start fixture names with
# 'build_' from now on" fill (fixture names, start).
_NAMED_THING = re.compile(
    r"\b(function|method|class|attribute|variable|argument|parameter|constant|module|file|"
    r"test|branch|commit|table|column|component|field|property|interface|helper|fixture|"
    r"endpoint|route|hook|package|type)(?:e?s)?\b",
    re.I,
)
_POSITION = {
    "start": "start", "begin": "start", "prefix": "start",
    "end": "end", "finish": "end", "terminate": "end", "suffix": "end",
    "include": "include", "contain": "include",
}  # fmt: skip
# "start ending your test names with '_spec'": the position is "end", not "start".
_POSITION_WORD = re.compile(r"\b(" + "|".join(_POSITION) + r")(?!\w*\s+\w+ing\b)", re.I)
_NAMING_WORD = re.compile(r"\bnam(?:e|es|ed|ing)\b|\bprefix|\bsuffix", re.I)
# "use X as the package manager", "use X for end-to-end tests", "switch to X for issue tracking".
_TOOL_ROLE = re.compile(
    r"\b(?:use|uses|using|utili[sz](?:e|ing)|switch(?:ing)?\s+to|transition\s+to|move\s+to|adopt|go\s+with)\s+"
    r"(?:a\s+|an\s+|the\s+|one\s+of\s+the\s+)?(?P<tool>[^,;.]{1,40}?)\s+(?:as|for|to)\s+"
    r"(?P<role>[^,;.]{3,60})",
    re.I,
)
_ROLE_NOISE = frozenset(
    [
        "main",
        "primary",
        "preferred",
        "default",
        "only",
        "exclusively",
        "their",
        "track",
        "new",
        "now",
        "forward",
        "going",
        "moving",
        "instead",
        "well",
        "day",
        "every",
        "time",
    ]
)


def naming_slots(statement: str) -> set[tuple[frozenset[str], str]]:
    """(the kinds of names, the position) of each naming rule with a value in a statement:
    "End test names with '_spec' and start fixture names with 'make_'" has two."""
    if not _NAMING_WORD.search(statement):
        return set()
    out = set()
    position = ""
    thing = ""
    for part in _RULE_PARTS.split(statement):
        found = _POSITION_WORD.search(part)
        if found is not None:
            position = _POSITION[found.group(1).casefold()]
        named = {m.casefold() for m in _NAMED_THING.findall(part)}
        if named:
            # What is named is the most specific kind: "function argument names", "the
            # arguments of your handlers" and "argument variables" all name arguments.
            thing = next((k for k in _NAMING_ORDER if k in named), sorted(named)[0])
        if values_of(part) and thing and position:
            out.add((frozenset([_NAMING_KIND.get(thing, thing)]), position))
    return out


_NAMING_ORDER = ("argument", "parameter", "attribute", "property", "field", "method", "constant",
                 "variable", "function", "class")  # fmt: skip
_NAMING_KIND = {"parameter": "argument", "property": "attribute", "field": "attribute"}


_RULE_PARTS = re.compile(r"\s+and\s+(?=\w+\s+(?:\w+\s+)?names?\b|start|end|begin)|[:;]\s+", re.I)
_NEGATIVE_DIRECTION = re.compile(
    r"\b(?:never|avoid\w*|stop\s+using|refrain\s+from|don'?t|do\s+not|no\s+longer|"
    r"forget\s+about|without)\b",
    re.I,
)
_USE_OBJECT = re.compile(
    r"(?:\b(?:use|using|utili[sz]e|utili[sz]ing|incorporate|adopt|set\s+up|setting\s+up)|"
    r"^(?:so,?\s+)?no(?!\s+more\s+than))\s+(?:an?\s+|the\s+|one\s+|your\s+)?([\w/-]+(?:\s+[\w-]+)?)",
    re.I,
)


def _used_objects(statement: str) -> frozenset[str]:
    """The things a rule says to use or not: the first word of each object, casefolded, a
    plural "s" dropped ("a linter", "CI/CD pipelines", "the whiteboard")."""
    out: set[str] = set()
    for found in _USE_OBJECT.findall(statement):
        word = found.split()[0].casefold().strip("'\"`")
        if word in _RULE_STOP or word in _ROLE_NOISE or len(word) < 2:
            continue
        out.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return frozenset(out)


def _acronym_of(short: frozenset[str], long: frozenset[str], text: str) -> bool:
    initials = "".join(
        w[0] for w in _WORD.findall(text.casefold()) if w not in _RULE_STOP and w not in _ROLE_NOISE
    )
    return bool(long) and any(len(w) >= 2 and w == initials for w in short)


def tool_slot(statement: str) -> tuple[frozenset[str], frozenset[str], str] | None:
    """(the tool's words, the role's words, the role's text) of "use X as/for Y", or None."""
    match = _TOOL_ROLE.search(statement)
    if match is None:
        return None
    tool = plain_words(match.group("tool"))
    role = frozenset(w for w in plain_words(match.group("role")) if w not in _ROLE_NOISE)
    if not tool or not role:
        return None
    return tool, role, match.group("role")


def _same_role(a: tuple[frozenset[str], frozenset[str], str], b: tuple[frozenset[str],
               frozenset[str], str]) -> bool:  # fmt: skip
    ra, rb = a[1], b[1]
    if len(ra & rb) * 2 >= min(len(ra), len(rb)):
        return True
    # "our ORM" and "the object-relational mapper"
    return (len(ra) == 1 and _acronym_of(ra, rb, b[2])) or (
        len(rb) == 1 and _acronym_of(rb, ra, a[2])
    )


_DIRECTION_WORDS = frozenset(["avoid", "using", "stop", "refrain"])


_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    )
} | {"once": "1", "twice": "2", "thrice": "3"}
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b", re.I)


def _digits(text: str) -> str:
    return _NUMBER_WORD.sub(lambda m: _NUMBER_WORDS[m.group(1).casefold()], text)


# A variety of English to spell in ("British spelling", "US English", "English (UK)"): one at a
# time.
_VARIETY = re.compile(
    r"\b(british|(?-i:UK|GB|US)|american|canadian|australian)\s+(?:english|spelling)"
    r"|\benglish\s*\((?-i:(UK|GB|US))\)",
    re.I,
)
_VARIETY_OF = {"british": "gb", "uk": "gb", "gb": "gb", "us": "us", "american": "us"}


def spelling_of(statement: str) -> str:
    """The variety of English a rule asks to write in ("gb", "us", "canadian" …), or ""."""
    found = _VARIETY.search(statement)
    if found is None:
        return ""
    word = (found.group(1) or found.group(2)).casefold()
    return _VARIETY_OF.get(word, word)


def is_variant(new: str, old: str) -> bool:
    """A lexical variant test that compares what the rules are about rather than their words:
    the same naming slot with another value, the same role filled by another tool, the same
    words in the opposite direction, or the same rule words with another value."""
    return bool(variant_kind(new, old))


# What `variant_kind` found: a slot that holds one value (the newer rule replaces the older) …
NAMING, ROLE, NUMBER, REVERSED, SPELLING = "naming", "role", "number", "reversed", "spelling"
ONE_VALUE_SLOTS = frozenset({NAMING, ROLE, NUMBER, REVERSED, SPELLING})
# … or the same rule words with another value, which two rules can both hold ("run `make lint`
# before pushing" and "run `make test` before pushing").
OTHER_VALUE = "value"
_NUMBER = re.compile(r"^[<>~=]*\d+(?:[.,]\d+)?(?:%|[a-z]{1,3})?$")


def _numbers_only(new: str, old: str) -> bool:
    """The values that differ between the two statements are all numbers (after number words)."""
    differ = values_of(new) ^ values_of(old)
    return bool(differ) and all(_NUMBER.match(v) for v in differ)


def variant_kind(new: str, old: str) -> str:
    """How `new` restates `old`: NAMING (the same naming slot, another value), ROLE (the same
    role, another tool), NUMBER (the same rule, another number), REVERSED (the same practice,
    the other direction), SPELLING (another variety of English), OTHER_VALUE (the same rule
    words, another value), or "" (two rules)."""
    if new.strip().casefold() == old.strip().casefold():
        return ""
    spelling_new, spelling_old = spelling_of(new), spelling_of(old)
    if spelling_new and spelling_old and spelling_new != spelling_old:
        return SPELLING  # "Use British spelling" / "we're using US English everywhere"
    slots_new, slots_old = naming_slots(new), naming_slots(old)
    if slots_new and slots_old:
        # Two naming rules: the same slot (what is named, where) with another value, and
        # nothing else: "end function names" is not "end function argument names".
        same = bool(slots_new & slots_old) and values_of(new) != values_of(old)
        return NAMING if same else ""
    digits_new, digits_old = _digits(new), _digits(old)
    if same_rule_other_value(digits_new, digits_old) and _numbers_only(digits_new, digits_old):
        return NUMBER  # "retry at most three times" / "retry at most 5 times"
    tool_new, tool_old = tool_slot(new), tool_slot(old)
    if tool_new and tool_old and not (tool_new[0] & tool_old[0]) and _same_role(tool_new, tool_old):
        return ROLE
    negative_new = bool(_NEGATIVE_DIRECTION.search(new))
    if negative_new != bool(_NEGATIVE_DIRECTION.search(old)) and values_of(new) == values_of(old):
        a = plain_words(new) - _DIRECTION_WORDS
        b = plain_words(old) - _DIRECTION_WORDS
        if a and b and len(a & b) / len(a | b) >= SAME_RULE_WORDS:
            return REVERSED
        # "Stop using mocks altogether" / "Use mocks for all network calls in tests"
        if _used_objects(new) & _used_objects(old):
            return REVERSED
    if same_rule_other_value(new, old) or same_rule_other_value(digits_new, digits_old):
        return OTHER_VALUE
    return ""


REPLACE, ASK = "replace", "ask"


def supersession(
    new: str,
    old: str,
    *,
    cosine: float,
    new_polarity: str | None,
    old_polarity: str | None,
    same_key: bool = False,
) -> str:
    """What a newer user rule does to an older live one of the same scope: REPLACE it only where
    the slot holds one value (a naming position, the tool for a named role, a number, the same
    practice reversed, the variety of English); ASK ("does this replace …?", both stay) when it
    looks like an update but both may hold (the same variant key, the same words with another
    value, or cosine ≥ 0.8 with another value or the opposite direction); "" for two unrelated
    rules."""
    kind = variant_kind(new, old)
    if kind in ONE_VALUE_SLOTS:
        return REPLACE
    if kind or same_key:
        return ASK
    if is_update(new, old, cosine=cosine, new_polarity=new_polarity, old_polarity=old_polarity):
        return ASK
    return ""


# --- retiring a rule by name -------------------------------------------------------------------

# "forget that rule", "forget the rule about X", "forget what I said about X", "never mind the X
# rule", "drop that rule", "that rule no longer applies": the person retires a rule of theirs.
# "never mind that" alone names the last rule only when it was just stated (the caller checks).
_RULE_NOUN = r"(?:rule|instruction|preference|convention|guideline)s?"
_FORGET = re.compile(
    r"^\s*(?:(?:ok(?:ay)?|oh|actually|hmm|wait|please|and)[,.!]?\s+)*"
    r"(?:(?P<verb>forget|ignore|drop|scrap|remove|delete|disregard|cancel)\s+(?:about\s+)?"
    r"(?:(?:that|this|the|my|your)\s+(?:last\s+|previous\s+|earlier\s+|new\s+)?"
    + _RULE_NOUN
    + r"(?:\s+(?:about|on|for|regarding)\s+(?P<about>[^.!?\n]{2,80}))?"
    r"|what\s+i\s+(?:said|told\s+you)\s+(?:about|on|regarding)\s+(?P<said>[^.!?\n]{2,80})"
    r"|(?:the\s+)?(?P<named>[^.!?\n]{2,60}?)\s+" + _RULE_NOUN + r")"
    r"|never\s*mind(?:\s+(?P<mind>that(?:\s+" + _RULE_NOUN + r")?|the\s+(?P<mind_named>"
    r"[^.!?\n]{2,60}?)\s+" + _RULE_NOUN + r"|what\s+i\s+said(?:\s+about\s+(?P<mind_said>"
    r"[^.!?\n]{2,80}))?))?"
    r"|(?:that|this|the\s+last)\s+" + _RULE_NOUN + r"\s+(?:no\s+longer\s+applies|is\s+obsolete|"
    r"doesn'?t\s+apply\s+any\s*more))"
    r"\s*(?:[.!]|$)",
    re.I,
)
FORGET_LAST = "that"  # the request names the last rule stated, not a topic
FORGET_JUST_SAID = "just said"  # "never mind that": the last rule, only if just stated


def forget_request(text: str) -> str | None:
    """The topic of a request to retire one of the person's rules ("forget the rule about
    tabs" → "tabs"), FORGET_LAST for "forget that rule", FORGET_JUST_SAID for a bare "never
    mind (that)", or None when the text asks no such thing. Only a short first sentence
    counts: a "never mind" inside a longer request is about that request."""
    head = text.strip()[:200]
    found = _FORGET.match(head)
    if found is None or len(head) - found.end() > 120:
        return None
    topic = next(
        (found.group(g) for g in ("about", "said", "named", "mind_named", "mind_said")
         if found.group(g)),
        None,
    )  # fmt: skip
    if topic:
        words = plain_words(topic) | values_of(topic)
        if not words or topic.strip().casefold() in {"that", "this", "last", "previous"}:
            return FORGET_LAST
        return topic.strip()
    if found.group("mind") is not None and not re.search(_RULE_NOUN, found.group("mind"), re.I):
        return FORGET_JUST_SAID
    if text.strip().casefold().startswith(("never mind", "nevermind")) and not found.group("mind"):
        return FORGET_JUST_SAID
    return FORGET_LAST


def names_rule(topic: str, statement: str) -> bool:
    """The topic of a forget request names this rule: all its words (values included) are in
    the statement ("tabs" names "Always indent with tabs")."""
    wanted = plain_words(topic) | values_of(topic)
    have = plain_words(statement) | values_of(statement)
    return bool(wanted) and wanted <= have
