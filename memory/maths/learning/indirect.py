"""Rules said indirectly, and what the person takes back: a preference stated in passing inside
a longer request ("I prefer X over Y", "we're using X, not Y"), a question that carries a rule
("why are we using node? we use bun", "why are you still using X?"), a kind of action called
pointless ("there is no point doing Z"), and a retraction ("scratch that", "I changed my mind").

Pure Python (no Django). Written for the genre, never from an evaluation sentence; each group
has a table of accepted and rejected prompts in tests/memory/test_learning_cues.py.
"""

from __future__ import annotations

import re

# --- preferences in passing ---------------------------------------------------------------------

_TO_CLAUSE_END = (
    r"[^.;!?\n]{1,120}?(?=\s*(?:[.;!?\n]|,\s*(?:so|but|and|because|since)\b|"
    r"\s+(?:because|since|so\s+that|which|as\s+it)\b|$))"
)
# "I prefer X over Y", "I'd rather …", "considering my preference for X", "we're using X, not
# Y", "X is our Y": a preference inside a longer request, cut out with its own words.
PREFERENCE_IN_PASSING = re.compile(
    r"\b(?P<pref>i\s+(?:really\s+|much\s+|generally\s+|always\s+)?prefer\s+" + _TO_CLAUSE_END + r")"
    # "Prefer small functions", "please prefer subagents for research": said to the agent
    r"|(?P<bare>^(?:(?:and|also|so|but)\W+)?(?:please\s+)?(?:always\s+)?prefer\s+(?!to\b|it\b|this\b|that\b)"
    + _TO_CLAUSE_END
    + r")"
    r"|\b(?P<rather>i(?:'d|\s+would)\s+(?:much\s+)?rather\s+" + _TO_CLAUSE_END + r")"
    r"|\b(?:considering|given|because\s+of|since\s+you\s+know)\s+my\s+preference\s+for\s+"
    r"(?P<given>" + _TO_CLAUSE_END + r")"
    r"|\b(?P<using>we(?:'re|\s+are)\s+(?:using|on)\s+[`'\"]?[\w.@/+-]+[`'\"]?(?:\s+\w+)?,?\s+"
    r"not\s+[`'\"]?[\w.@/+-]+[`'\"]?)"
    r"|(?P<ours>(?<![\w'])[`'\"]?[\w.@/+-]+[`'\"]?\s+is\s+our\s+(?:\w+\s+){0,2}?(?:tool|manager|"
    r"runner|framework|library|linter|formatter|database|db|stack|language|style|convention|"
    r"standard|cli|orm|bundler|builder|server|client|editor|shell|platform|test\s+runner|"
    r"package\s+manager|build\s+tool|ci))\b",
    re.I,
)


def preference_in_passing(sentence: str) -> str:
    """The preference stated inside a sentence, in its own words ("" when none): "I prefer
    Bootstrap over Foundation", "Prefer tabs." for "considering my preference for tabs"."""
    match = PREFERENCE_IN_PASSING.search(sentence)
    if not match:
        return ""
    if match.group("given"):
        return "Prefer " + match.group("given").strip(" ,")
    if match.group("bare"):
        return ""  # "Prefer X": the sentence is the preference, said to the agent
    return match.group(0).strip(" ,")


# --- retractions ----------------------------------------------------------------------------------

# The user takes back what they just said: what comes before it in the prompt is dropped.
RETRACTION = re.compile(
    r"\b(?:i(?:'ve|\s+have)?\s+changed\s+my\s+mind|scratch\s+that|on\s+second\s+thought|"
    r"never\s*mind(?:\s+(?:that|this|what\s+i\s+said))?|forget\s+(?:what\s+i\s+(?:just\s+)?said|"
    r"that|i\s+said\s+that)|ignore\s+(?:what\s+i\s+(?:just\s+)?said|my\s+(?:last|previous)\s+"
    r"(?:message|instruction))|disregard\s+(?:that|my\s+(?:last|previous))|actually,?\s+"
    r"(?=(?:don'?t|do\s+not|no)\b))",
    re.I,
)


def retraction_at(sentence: str) -> int:
    """Where a retraction starts in `sentence`, or -1. A retraction at the start keeps what
    follows it ("Actually, don't use X; use Y"); at the end it takes the sentence back too."""
    match = RETRACTION.search(sentence)
    return match.start() if match else -1


# --- questions that carry a rule -----------------------------------------------------------------

# "Why are we using node? We use bun": the question objects to a choice; the answer after it is
# the rule (a correction that names the right way).
WHY_THIS_CHOICE = re.compile(
    r"^(?:hm+,?\s+|wait,?\s+)?why\s+(?:are|is|do|did|were|would)\s+(?:we|you|it|this)\s+"
    r"(?:still\s+)?(?:using|use|running|run|on|calling|importing|installing)\b",
    re.I,
)
# "Why are you still using vale?", "why aren't we using table-driven tests for these cases?":
# a reproach that carries a rule (stop using X, use X). A real question reads the same ("why
# aren't we using the cache here?"), so what it carries is a candidate, for recurrence or review.
REPROACH = re.compile(
    r"^(?:(?:hm+|wait|hey|but|so|and|ok(?:ay)?|also)[,.\s]+)*why\s+(?:"
    r"(?P<still>(?:are|is)\s+(?:we|you)\s+still\s+(?:using|running|calling)"
    r"|do\s+(?:we|you)\s+still\s+(?:use|run|call))"
    r"|(?P<missing>(?:aren'?t|are\s+not|don'?t|do\s+not|didn'?t|did\s+not)\s+(?:we|you)\s+"
    r"(?:use|using|run|running)|(?:are|do|did)\s+(?:we|you)\s+not\s+(?:use|using|run|running))"
    r")\s+(?P<what>(?!(?:it|that|this|these|those|them|one|any|something)\b)(?:[^?!.]|\.(?=\w)){2,80}?)"
    r"(?:\s+(?:here|now|just\s+now|this\s+time|again|anymore|any\s+more|instead|then))?"
    r"\s*\?+\s*$",
    re.I,
)


def reproach_rule(sentence: str) -> str:
    """The rule a reproachful question carries ("why are you still using vale?" → "Do not use
    vale."; "why aren't we using table-driven tests?" → "Use table-driven tests."), or ""."""
    found = REPROACH.match(sentence.strip()) if "why" in sentence[:40].casefold() else None
    if not found:
        return ""
    what = found["what"].strip()
    return f"Do not use {what}." if found["still"] else f"Use {what}."


# "There is no point adding a revert commit in a PR", "it doesn't make sense to commit in a
# broken state": a kind of action ruled out in general. About the thing at hand ("… to use the
# flag here", "… yet") it is a remark, not a rule; a candidate either way, for review.
POINTLESS = re.compile(
    r"(?:^|[-\u2013\u2014,;:]\s*|\b(?:so|and|but|yeah|yes|also)\s+)(?:"
    r"(?:there'?s|there\s+is)\s+no\s+(?:point|sense)\s+(?:in\s+)?(?P<ing>[a-z]+ing)\b"
    r"|it\s+(?:doesn'?t|does\s+not)\s+make\s+(?:any\s+)?sense\s+to\s+(?P<verb>[a-z]+)\b"
    r"|it\s+makes\s+no\s+sense\s+to\s+(?P<verb2>[a-z]+)\b)"
    r"(?P<rest>[^.?!]{3,100}?)\s*[.!]*$",
    re.I,
)
_AT_HAND = re.compile(
    r"\b(?:here|now|yet|this|that|these|those|it|them|anymore|at\s+this\s+point)\b", re.I
)


def pointless_rule(sentence: str) -> str:
    """The prohibition in "there is no point adding X" ("Avoid adding X.") or "it doesn't make
    sense to commit X" ("Do not commit X."), or "" (also when it is about the thing at hand)."""
    low = sentence.casefold()
    found = POINTLESS.search(sentence) if ("point" in low or "sense" in low) else None
    if not found or _AT_HAND.search(found["rest"]):
        return ""
    rest = found["rest"].strip(" ,;")
    if found["ing"]:
        return f"Avoid {found['ing'].lower()} {rest}."
    return f"Do not {(found['verb'] or found['verb2']).lower()} {rest}."


THE_ANSWER = re.compile(
    r"^(?:we|i)\s+(?:always\s+|only\s+)?(?:use|prefer|want|run)\b|^(?:just\s+|please\s+)?use\s+\S"
    r"|^(?:this|the)\s+(?:repo|project)\s+uses\b",
    re.I,
)
