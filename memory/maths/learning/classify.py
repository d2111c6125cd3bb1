"""The prompt classifier: does a sentence state a standing rule, a preference or a correction?

Pure Python (no Django). It runs on the UserPromptSubmit request path, so it is regular
expressions over the prompt's prose only: no embedding, no I/O, well under 1 ms per prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.maths.learning import cues
from memory.maths.learning.text import (
    _INLINE_CODE,
    _LEAD_INS,
    _PREAMBLES,
    _WORD,
    CORRECTION,
    INSTRUCTION,
    MAX_CLAUSE_CHARS,
    MIN_CLAUSE_WORDS,
    PREFERENCE,
    TIER_CORRECTION,
    sentences,
)

# --- the classifier -------------------------------------------------------------------------

_QUESTION_START = re.compile(
    r"^(?:how|what|why|where|when|which|who|whose|is|are|was|were|do|does|did|can|could|"
    r"would|will|should|shall|may|might|has|have|any\s+idea|is\s+there)\b",
    re.I,
)
_POLITE_REQUEST = re.compile(r"^(?:can|could|would|will)\s+you\s+(?:please\s+)?", re.I)
_STRONG = re.compile(
    r"\b(?:always|never|from\s+now\s+on|going\s+forward|" + cues.IN_FUTURE + r"|"
    r"from\s+here\s+on|every\s+time|" + cues.WHENEVER + r")\b",
    re.I,
)
# (pattern, kind): each marks a sentence that states a standing rule or preference.
_RULE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), kind)
    for p, kind in (
        (r"(?:^(?:please\s+)?|[,;:]\s*(?:please\s+)?|\b(?:you|we|i)\s+(?:should\s+|must\s+|will\s+|"
         r"'ll\s+)?)(?:always|never)\s+(?!been\b|be\s+here|here\b)\w+", INSTRUCTION),
        (r"^(?:please\s+)?(?:always|never)\b", INSTRUCTION),
        (r"\b(?:always|never)\s+(?:use|add|include|start|end|name|prefix|suffix|put|write|keep|"
         r"call|run|import|follow|check|test|commit|push|wrap|annotate|document|return|log|"
         r"validate|handle|declare|define|mark|set|leave|create|make|apply|avoid)\b", INSTRUCTION),
        (r"\b(?:from\s+now\s+on|going\s+forward|from\s+here\s+on|" + cues.IN_FUTURE + r")\b",
         INSTRUCTION),
        (r"^(?:please\s+)?(?:do\s+not|don'?t)\s+(?!worry|hesitate|forget\s+that\b|mind|"
         r"panic|bother|know|think|get\s+me|stress|feel|get\s+discouraged|hold\s+back|skimp|"
         r"wait|be\s+afraid|let\s+(?:your|it|that|this))\w+", INSTRUCTION),
        (r"\b(?:we|i)\s+(?:do\s+not|don'?t|never)\s+(?:use|want|allow|like|do|write|"
         r"commit|put|add|need|rely|mix)\b", INSTRUCTION),
        (r"\b(?:remember|keep\s+in\s+mind|note)\s+(?:to|that|this)\b", INSTRUCTION),
        (r"^(?:please\s+)?remember\b", INSTRUCTION),
        (r"(?:^(?:please\s+)?|[,;:]\s*)(?:make\s+sure|be\s+sure|ensure)\s+(?:to|that\s+(?:you|we)|"
         r"you|we|all|every|each|(?:that\s+)?(?:your|our)\s+\w+)\b", INSTRUCTION),
        (r"\b(?:i|we)\s*(?:'d|would)?\s+(?:(?:really|now|also|just|still|then)\s+)?(?:prefer|like\s+you\s+to|want\s+you\s+to|"
         r"need\s+you\s+to|expect\s+you\s+to|insist\s+on|recommend)\b", PREFERENCE),
        (r"\bprefer(?:s|red)?\s+\S+(?:\s+\S+){0,5}\s+(?:over|to|instead\s+of|rather\s+than)\b",
         PREFERENCE),
        (r"\bi\s+(?:like|love|hate|dislike|prefer)\s+(?:it\s+when\s+)?\w+", PREFERENCE),
        (r"\b(?:we|our\s+team|the\s+team|this\s+(?:repo|project|codebase|team))\s+"
         r"(?:(?:always|usually|only|primarily|mostly|generally|normally|typically|exclusively|"
         r"all|now|also)\s+)?(?:use|uses|follow|follows|stick\s+to|standardi[sz]e\s+on|"
         r"name|write|prefix|suffix|start|end)\b", INSTRUCTION),
        (r"\b(?:in|for)\s+this\s+(?:repo|repository|project|codebase|team|company)\b",
         INSTRUCTION),
        (r"\b(?:the|our)\s+(?:convention|guideline|rule|standard|house\s+style)\s+is\b",
         INSTRUCTION),
        (r"\binstead\s+of\b|\brather\s+than\b", INSTRUCTION),
        (r"(?:^(?:please\s+)?|\b(?:you|we|please|to|and|always|never|should|must)\s+)(?:avoid|stop)"
         r"\s+(?!by\b)\w+", INSTRUCTION),
        (r"\byou\s+(?:must|should|shall|have\s+to|need\s+to|are\s+to)\s+(?:always\s+|never\s+|"
         r"not\s+)?\w+", INSTRUCTION),
        (r"\bwe\s+must\s+(?:always\s+|never\s+|not\s+)?\w+", INSTRUCTION),
        (r"\bmust\s+(?:always\s+|never\s+|not\s+)?(?:be|use|have|include|start|end|follow)\b",
         INSTRUCTION),
        (r"\b(?:emphasi[sz]e|stress|underline)\s+(?:the\s+)?importance\s+of\b", INSTRUCTION),
        (r"\brefrain\s+from\b", INSTRUCTION),
        (r"(?:^|[,;:]\s*)(?:please\s+)?forget\s+about\s+\w+ing\b", INSTRUCTION),
        # "It's important that you …" as the sentence's main clause, not "While it's important to"
        (r"^(?:(?:so|also|and|now|but|first(?:ly)?|second(?:ly)?),?\s+)?it(?:'s|\s+is)\s+"
         r"(?:important|essential|crucial|vital|imperative|mandatory|required)\s+(?:that\s+you|"
         r"for\s+you\s+to|to\s+(?:always|never))\b|\bit(?:'s|\s+is)\s+best\s+(?:if|that)\s+you\b",
         INSTRUCTION),
        (r"\b(?:we|i)\s+(?:encourage|expect|ask|require)\s+(?:our|all|every|each|you|everyone)\b",
         INSTRUCTION),
        (r"\b(?:practice|thing|habit|point|convention|rule|standard|guideline)s?\b[^.;]{0,60}?\b"
         r"is\s+(?:to\s+\w+|(?:the\s+)?(?:habit|practice|use|inclusion|idea)\s+of\s+\w+|\w+ing)\b",
         INSTRUCTION),
        (r"\bis\s+(?:mandatory|required|a\s+must|forbidden|not\s+allowed|banned)\b", INSTRUCTION),
    )
)  # fmt: skip
# A correction of the previous action: a leading "no / actually / wait" before a rule or an
# imperative (first sentence only), or an explicit "that's wrong", "not X but Y", "I said …".
_CORRECTION_LEAD = re.compile(
    r"^(?:no|nope|wrong|not\s+quite|actually|wait|stop|hmm,?\s+no)\b(?!\s+(?:worries|problem|"
    r"thanks|need|idea|rush|doubt))[,.!:;-]*\s*",
    re.I,
)
_CORRECTION_ANY = re.compile(
    r"\bthat(?:'?s|\s+is|\s+was)\s+(?:wrong|not\s+(?:right|correct|what)|incorrect)\b"
    r"|\bnot\s+(?!only\b|just\b)\S+(?:\s+\S+){0,4}?,?\s+but\s+(?!also\b)(?:use|with|\S+)"
    r"|\b(?:you|it)\s+should(?:n'?t|\s+not)?\s+have\b"
    r"|\bi\s+(?:said|told\s+you|asked\s+(?:you\s+)?(?:to|for|not))\b",
    re.I,
)
# A rule is stated in general: for all, every, each of something; an imperative with one of
# these is a standing instruction ("Add this decorator to all your methods").
_GENERAL = re.compile(
    r"\b(?:all|every|each|any|whenever|consistently|throughout|everywhere|by\s+default)\b", re.I
)
_IMPERATIVE = re.compile(
    r"^(?:please\s+|also,?\s+|and\s+|so\s+|now,?\s+|then,?\s+)?(?:use|add|include|start|end|"
    r"name|prefix|suffix|put|write|keep|call|run|prefer|avoid|stick|follow|make|let|wrap|"
    r"annotate|document|format|import|sort|type|mark|place|store|append|begin|finish|"
    r"terminate|decorate|apply|set|give|do|not|stop|ensure|remember|try|limit|return|"
    r"validate|handle|log|check|test|commit|push|install|declare|define|label|leave)\b",
    re.I,
)
# Casual phrasings that look like rules but are not about the work.
_CHATTER = re.compile(
    r"\b(?:feel\s+free|let\s+me\s+know|reach\s+out|(?:don'?t|never)\s+hesitate|any\s+questions|"
    r"thank(?:s|\s+you)|"
    r"nice\s+to\s+meet|glad|happy\s+to\s+help|have\s+a\s+(?:good|great|nice)|good\s+luck|"
    r"see\s+you|welcome|take\s+care|appreciate|catch\s+up|talk\s+(?:soon|later))\b",
    re.I,
)
# Tasks for now, not rules: "fix/implement/refactor/explain …" without a rule marker.
_TASK_START = re.compile(
    r"^(?:please\s+)?(?:fix|implement|refactor|explain|debug|investigate|look\s+at|check\s+out|"
    r"write\s+(?:a|an|the|me)|create|build|generate|show\s+me|tell\s+me|help\s+me|review|"
    r"summari[sz]e|find|open|read|run\s+the|deploy|update\s+the|rename\s+the|delete\s+the|"
    r"can\s+you|could\s+you)\b",
    re.I,
)


# --- evidence for and against a rule, sentence by sentence ---------------------------------
# A clause that names a concrete practice: a value (quoted name, code-like token), a tool or
# product name written with capitals inside the sentence, or a noun of the things conventions
# are about (names, decorators, docstrings, imports, commits, dependencies …).
_PRACTICE_NOUN = re.compile(
    r"\b(?:names?|naming|prefix(?:es)?|suffix(?:es)?|decorators?|docstrings?|annotations?|type\s+hints?|"
    r"imports?|modules?|packages?|libraries|library|dependenc(?:y|ies)|framework|indentation|"
    r"tabs|spaces|quotes|line\s+length|camel\s*case|snake\s*case|kebab\s*case|pascal\s*case|"
    r"upper\s*case|lower\s*case|commits?|commit\s+messages?|branch(?:es)?|pull\s+requests?|"
    r"tests?|linter|formatter|debugger|profiler|ide|editor|vcs|version\s+control|"
    r"functions?|methods?|classes|class|attributes?|variables?|arguments?|parameters?|"
    r"constants?|comments?|assert(?:ions)?|exceptions?|logging|logs?|migrations?|"
    r"endpoints?|schemas?|files?|folders?|directory|directories|config(?:uration)?|"
    r"lockfile|script|scripts|helpers?|hooks?|pipelines?|ci|cd|docker|container|"
    r"tool|tools|platform)\b",
    re.I,
)
# A capitalised word after the first (PyCharm, GitLab, Black): a tool's or product's name.
_PROPER_NAME = re.compile(r"(?<=\s)(?:[A-Z][a-z]*[A-Z]\w*|[A-Z]{2,}\w*|[A-Z][a-z]{2,})\b")
# The rule is only announced, not stated: "some coding standards I'd like you to follow",
# "a new naming convention for your method names", "update your function naming convention".
_META_NOUN = (
    r"(?:conventions?|standards?|practices?|guidelines?|instructions?|rules?|style|habits?|"
    r"approach|polic(?:y|ies)|expectations|values|things|changes?|updates?|aspects?|points?|"
    r"directives?|reminders?|requests?)"
)
_ANNOUNCEMENT = re.compile(
    r"\b(?:some|a\s+few|few|a\s+couple\s+of|couple\s+of|certain|specific|particular|new|"
    r"several|key|important|following|our|your|my|the|this|these|those|a|an|two|three|four|"
    r"five)\s+"
    r"(?:[\w-]+\s+){0,3}?" + _META_NOUN + r"\b",
    re.I,
)
# Praise and reassurance about the work ("great job", "no pressure", "feel free to"): about
# the person, not a practice.
_ENCOURAGEMENT = re.compile(
    r"\b(?:happy\s+to|here\s+to\s+help|(?:don'?t|do\s+not)\s+(?:be\s+afraid|worry)|"
    r"keep\s+up\s+the|great\s+job|good\s+job|well\s+done|nice\s+work|"
    r"feel\s+free|no\s+pressure|you(?:'re|\s+are)\s+(?:doing|on\s+the\s+right)|"
    # a farewell, and "keep going" advice ("continue exploring …", "continue to challenge yourself")
    r"enjoy\s+(?:the\s+rest\s+of\s+)?(?:your|the)\s+(?:day|evening|weekend|week)|until\s+next\s+time|"
    r"(?:want|like|need)\s+you\s+to\s+(?:continue|keep)\s+(?:to\s+\w+|\w+ing))\b",
    re.I,
)
# A task for now or a one-off exploration, not a standing rule.
_ONE_OFF = re.compile(
    r"\b(?:if\s+you\s+haven'?t\s+already|for\s+your\s+next\s+task|"
    r"tomorrow|next\s+(?:week|sprint)|next\s+time\s+we\s+(?:meet|talk|speak)|to\s+begin\s+with|"
    r"to\s+get\s+started)\b"
    r"|\b(?:for\s+now|for\s+the\s+time\s+being|right\s+now|at\s+the\s+moment|today|soon|"
    r"this\s+time|this\s+week|first)\s*[.!]?$"
    r"|\b(?:familiari[sz]e\s+yourself|play(?:ing)?\s+around|try(?:ing)?\s+out|explore)\b",
    re.I,
)
# "Remember that naming is hard": a thought to keep, not a practice.
_REMEMBER_FACT = re.compile(
    r"^(?:always\s+|just\s+|please\s+)?(?:remember|keep\s+in\s+mind)\s+that\s+"
    r"(?!(?:you|we)\b)"
    # "Remember, feedback is a gift": a statement of fact after the comma
    r"|^(?:always\s+|just\s+|please\s+)?(?:remember|keep\s+in\s+mind)\s*,\s+(?!(?:you|we)\b)"
    r"(?:[\w'-]+\s+){0,3}?(?:is|are|was|were|isn'?t|aren'?t|has|benefits|matters)\b",
    re.I,
)
# "Remember, <a maxim>": "Remember, quality over quantity", "Remember, clean code is the goal".
_REMEMBER_COMMA = re.compile(
    r"^(?:(?:and|so|but|also|just|please|always)[,\s]+)*(?:remember|keep\s+in\s+mind)\s*[,:;-]\s*"
    r"(?:[A-Z][a-z]+,\s*)?",
    re.I,
)
_ADDRESSED_RULE = re.compile(
    r"^(?:please\s+)?(?:always|never|don'?t|do\s+not|avoid|make\s+sure|be\s+sure|try\s+to)\b"
    r"|^(?:we|you)\s+(?:always|never|only|don'?t|do\s+not|should|must|need\s+to|have\s+to|use|"
    r"follow|prefer)\b"
    r"|\b(?:should|must|need\s+to|needs\s+to|have\s+to|has\s+to)\b",
    re.I,
)


def _remember_maxim(text: str) -> bool:
    """ "Remember, <a statement>" with no imperative, no modal and nothing the reader does."""
    match = _REMEMBER_COMMA.match(text)
    if not match:
        return False
    rest = text[match.end() :]
    return not (_ADDRESSED_RULE.search(rest) or _IMPERATIVE.match(rest) or _RULE_VERB.match(rest))


# Background rather than a rule: "As you know, we use Git", "You're using the old API", "We'll
# be shipping on Friday" (a description of the person or the team with no obligation in it).
_BACKGROUND = re.compile(
    r"^(?:as\s+you(?:'re|\s+are)?\s+(?:know|aware|may\s+know|can\s+see)\b"
    r"|(?:you(?:'re|\s+are)|your|i\s+always|we(?:'ll|\s+will)\s+be|i(?:'ll|\s+will))\b"
    r"(?![^.]*\b(?:must|should|need\s+to|have\s+to|always|never|from\s+now\s+on|going\s+forward)\b))",
    re.I,
)
# Who someone is, not what they should do: "you must be the new maintainer", "you must be Sam"
# (an epistemic "must" before a name or a newcomer's title; case-sensitive for the name).
_IDENTITY_GUESS = re.compile(
    r"^(?:(?:[Hh]i|[Hh]ello|[Hh]ey|[Oo]h|[Aa]h|[Ww]elcome)[,!.\s]+)?[Yy]ou\s+must\s+be\s+(?:[A-Z][a-z]+\b(?!\s+\w+ing\b)|"
    r"(?:the|our)\s+new\b)"
)
# "Instead of X, we do Y": how the team works, described ("Instead of X, use Y" is a rule).
_INSTEAD_WE_DO = re.compile(
    r"^instead\s+of\s+[^,]{1,80},\s*(?:we|i|they|the\s+team)\s+(?!should|must|need|have\s+to|"
    r"always|never|don'?t|do\s+not|only|want\s+you)\w+",
    re.I,
)
# A general remark about a third party rather than an instruction to the reader: "A profiler
# can't fix slow queries", "There's always a trade-off" (no modal, nothing addressed to anyone).
_REMARK = re.compile(
    r"^(?:a|an|the|every(?:one|body|thing)|nobody|no\s+one|there(?:'s|\s+is|\s+are)|"
    r"it(?:'s|\s+is)\s+(?!important|essential|crucial|vital|imperative|mandatory|required|best)|"
    r"[\w-]+\s+(?:doesn'?t|don'?t|isn'?t|aren'?t|can'?t)\s+(?:always|just|have\s+to)|"
    # "My door is always open", "Your growth matters": about the speaker's or the reader's things
    r"(?:my|your)\s+(?!(?:preference|rule|convention|requirement|expectation)s?\b)"
    r"(?:[\w-]+\s+){0,2}?(?:is|are|was|were|benefits?|matters?)\b(?!\s+to\b))\b"
    r"(?![^.]*\b(?:should|must|need\s+to|needs\s+to|has\s+to|have\s+to|is\s+to|are\s+to)\b)",
    re.I,
)
# A recommendation or encouragement rather than a rule; it counts only with a named value.
_SOFT_MARKER = re.compile(
    r"\b(?:i|we)\s+(?:also\s+)?(?:'d\s+)?(?:(?:strongly\s+)?recommend|suggest|encourage)\b", re.I
)
# An evaluation of a value with no practice in it: "Consistency is key".
_EVALUATIVE = re.compile(
    r"^(?:(?:always\s+|just\s+)?remember\s+that\s+|keep\s+in\s+mind\s+that\s+)?(?:[\w'-]+\s+){1,5}?"
    r"(?:is|are|isn'?t|aren'?t)\s+(?:just\s+|not\s+just\s+|all\s+|also\s+|so\s+|really\s+)?"
    r"(?:key|crucial|essential|important|vital|everything|about|as\s+important|just\s+as)\b",
    re.I,
)
# Discourse markers and a leading subordinate phrase before the main clause of a rule:
# "Also,", "Secondly,", "Oh, and", "When naming methods,", "For attribute names,".
_DISCOURSE = re.compile(
    r"^(?:(?:ok(?:ay)?|so|and|also|oh|well|now|then|plus|right|alright|yes|lastly|finally|"
    r"first(?:ly)?|second(?:ly)?|third(?:ly)?|next|additionally|moreover|furthermore|"
    r"one\s+more\s+thing|another\s+thing|by\s+the\s+way|btw|in\s+addition|importantly|"
    r"please|just|and\s+please)[\s,:;.!-]+)*"
    r"(?P<scope>(?:when|whenever|while|if|for|regarding|as\s+for|with|in|on|about|concerning)\s+"
    r"[^,;:]{1,60}[,:]\s*)?(?:please\s+|also\s+|just\s+)?",
    re.I,
)
_RULE_VERB = re.compile(
    r"(?:use|add|include|start|end|name|prefix|suffix|put|write|keep|import|prefer|avoid|"
    r"stick|follow|wrap|annotate|document|format|indent|sort|type|mark|place|store|append|"
    r"begin|finish|terminate|decorate|apply|label|declare|define|pin|lock|quote|capitali[sz]e|"
    r"separate|group|order|limit|return|raise|log|validate|handle|check|test|run|commit|push|"
    r"refrain|stop|reach\s+out|communicate|work|take|go|leave|ensure|make\s+sure|forget\s+about)\b",
    re.I,
)
# A value that names what a rule is about: quoted, back-ticked, a decorator, or code-like.
_STRONG_VALUE = re.compile(
    r"'[^'\s]{1,40}'|\"[^\"\n]{1,40}\"|`[^`\n]{1,60}`|@\w+|\b\w*_\w+\b|\b\w+_(?!\w)|\b\w*[a-z][A-Z]\w*\b"
)


def names_practice(text: str) -> bool:
    """True when a clause names a concrete practice (a value, a tool, a convention's object)."""
    return bool(
        _STRONG_VALUE.search(text)
        or _PRACTICE_NOUN.search(text)
        or _PROPER_NAME.search(text)
        or _CONTRAST.search(text)
        or _GENERAL.search(text)
        or _VERB_OBJECT.search(text)
        or re.search(r"\d", text)
    )


# A convention's verb with an object that is not a pronoun: "avoid using virtual environments".
_VERB_OBJECT = re.compile(
    r"\b(?:use|using|avoid|avoiding|include|including|add|adding|import|importing|write|writing|"
    r"prefix|suffix|naming|wrap|annotate|document|format|pin|refrain\s+from)\s+"
    r"(?!(?:it|them|this|that|these|those|something|anything|time|yourself)\b)"
    r"(?:[\w-]+\s+){0,3}?[\w-]{3,}",
    re.I,
)


# "X, not Y", "X instead of Y", "X over Y": a choice between two named things.
_CONTRAST = re.compile(
    r"\w,?\s+not\s+\w|\binstead\s+of\s+\w|\brather\s+than\s+\w|\bover\s+\w", re.I
)


def is_announcement(text: str) -> bool:
    """True for a clause that announces rules without stating one ("a few coding standards I'd
    like you to follow", "update your naming convention")."""
    return bool(
        _ANNOUNCEMENT.search(text)
        and not _STRONG_VALUE.search(text)
        and not _PROPER_NAME.search(_ANNOUNCEMENT.sub(" ", text))
    )


def _imperative_rule(text: str) -> bool:
    """An imperative clause (after discourse markers and a leading "When naming X," phrase)
    whose verb sets a convention and which names its object in general: a value, or a rule
    for all/every case."""
    match = _DISCOURSE.match(text)
    assert match is not None  # every part of the pattern is optional
    rest = text[match.end() :]
    if _NO_MORE.match(rest):
        return True  # "No print statements in library code."
    if not _RULE_VERB.match(rest) or _TASK_START.match(rest):
        return False
    scoped = bool(match.group("scope") and _PRACTICE_NOUN.search(match.group("scope")))
    return bool(
        scoped
        or _STRONG_VALUE.search(text)
        or _GENERAL.search(text)
        or _GENERIC_OBJECT.search(rest)
    )


# "your methods", "all our test files": the rule is about a kind of thing, not one of them.
_GENERIC_OBJECT = re.compile(
    r"\b(?:your|our|all)\s+(?:[\w-]+\s+){0,2}?(?:functions|methods|classes|attributes|variables|"
    r"arguments|parameters|names|files|modules|tests|commits|messages|branches|imports|"
    r"components|endpoints|helpers|hooks|code|projects|repos|repositories|scripts|queries)\b",
    re.I,
)


_NO_MORE = re.compile(
    r"^no\s+(?:more\s+)?[\w-]+s\s+(?:for|in|on|when|while|during|before|after)\b", re.I
)


# The speaker sets the agenda of the conversation ("I wanted to talk about how we deploy going
# forward", "I'd like to go over the review process"): what follows may be a rule, this is not.
_TALK_ABOUT = re.compile(
    r"\bi(?:\s+just|\s+also)?(?:\s+want(?:ed)?|'d\s+like|\s+would\s+like|\s+need(?:ed)?|"
    r"\s+(?:was|am)\s+hoping)\s+to\s+(?:quickly\s+|briefly\s+)?(?:talk|chat|speak|discuss|touch\s+base|"
    r"go\s+over|walk\s+you\s+through|run\s+through|update\s+you|bring\s+up|check\s+in|"
    r"follow\s+up|catch\s+up|circle\s+back|give\s+you\s+(?:an?\s+)?(?:quick\s+)?"
    r"(?:update|heads[-\s]up|overview|rundown|few\s+pointers))\b"
    r"|\b(?:we|i)(?:'ll|\s+will|\s+can|\s+could|\s+may|\s+might)\s+(?:also\s+)?(?:continue|pick\s+up|"
    r"discuss|talk|cover|go\s+over|revisit|look\s+at|introduce|get\s+into|touch\s+on|dive\s+into)\b",
    re.I,
)


def negative_evidence(text: str) -> bool:
    """Evidence that a sentence with a rule's marker is not a rule: encouragement, a one-off
    task or exploration, a greeting, the agenda of the conversation, or an announcement of
    rules to come."""
    return bool(
        _ENCOURAGEMENT.search(text)
        or (
            _TALK_ABOUT.search(text)
            and not _RULE_VALUE_AFTER_COLON.search(text)
            and not cues.ALWAYS_NEVER.search(text)  # "talk about why we never use X"
        )
        or (_ONE_OFF.search(text) and not _STRONG.search(text))
        or (
            is_announcement(text)
            and not _RULE_VALUE_AFTER_COLON.search(text)
            and not cues.RULE_REQUEST.search(text)
            and not cues.working_habit(text)
        )
    )


_RULE_VALUE_AFTER_COLON = re.compile(r":\s*\S")


@dataclass(frozen=True)
class Clause:
    """One sentence of a prompt that states a rule: its text, kind, and position."""

    text: str
    kind: str
    index: int
    tier: str = ""  # set when the classifier already knows it (a question's answer: B)


@dataclass(frozen=True)
class Classification:
    """The classifier's verdict on one prompt: the rule-stating sentences found (maybe none)."""

    clauses: tuple[Clause, ...] = ()

    @property
    def is_signal(self) -> bool:
        return bool(self.clauses)

    @property
    def kind(self) -> str:
        if not self.clauses:
            return ""
        kinds = {c.kind for c in self.clauses}
        for kind in (CORRECTION, INSTRUCTION, PREFERENCE):
            if kind in kinds:
                return kind
        return self.clauses[0].kind


_EMBEDDED_QUESTION = re.compile(
    r"[,;:-]\s*(?:so\s+|and\s+|but\s+)?(?:how|what|why|where|which|can|could|would|should|"
    r"is\s+there|do|does|any\s+idea)\b[^,;]*\?$",
    re.I,
)
_BACK_REFERENCE = re.compile(
    r"^(?:this|that|it|these|those|which)\b(?!\s+(?:way|one)\b)"
    r"(?!(?:'s|\s+is)\s+(?:important|essential|crucial|vital|imperative|mandatory|required|best)\b)",
    re.I,
)


# A question typed without its question mark: "how do I squash to main.", "what changes do you
# need to make to the rules".
_UNMARKED_QUESTION = re.compile(
    r"^(?:(?:so|and|but|ok(?:ay)?|also)[,\s]+)?(?:how|what|why|where|which|who)\s+(?:\w+\s+){0,2}?"
    r"(?:do|does|did|is|are|was|were|can|could|would|should|will|shall|has|have)\s+"
    r"(?:you|we|i|it|they|this|that|the)\b",
    re.I,
)


_WH_WORD = re.compile(r"^(?:how|what|why|where|which|who)\b", re.I)


# A reason given for the rule before it: "This keeps the diff small", "It also makes the code
# easier to maintain in the future", "Doing so prevents merge conflicts".
_REASON = re.compile(
    r"^(?:(?:and|also|so|plus)[,\s]+)?(?:it|this|that|these|those|doing\s+so|which)\s+"
    r"(?:(?:also|really|will|would|can|could|should|usually|often|generally)\s+)*"
    r"(?:help|helps|make|makes|ensure|ensures|allow|allows|keep|keeps|prevent|prevents|improve|"
    r"improves|save|saves|reduce|reduces|means?|lets?|gives?|avoids?|enables?|prepares?|"
    r"benefits?|simplif(?:y|ies)|guarantees?)\b"
    r"|^(?:it|this|that|these|those)\s+will\s+(?!always\b|never\b|be\s+(?:our|the)\b)\w+",
    re.I,
)


def _is_question(sentence: str) -> bool:
    s = sentence.strip()
    if s.endswith("?"):
        # "Could you always use pnpm from now on?" is a request phrased as a question, and so
        # is "can we update the rule to make sure you always push?"
        # ("how can we improve the rules …?" asks for ideas: a question)
        if cues.RULE_REQUEST.search(s) and not _WH_WORD.match(s):
            return False
        return not (_POLITE_REQUEST.match(s) and _STRONG.search(s))
    return bool(_QUESTION_START.match(s)) and not _POLITE_REQUEST.match(s) and "?" in s


def _masked(sentence: str) -> str:
    """Inline code replaced by a placeholder, so a marker inside `…` does not count."""
    return _INLINE_CODE.sub("CODE", sentence)


def statement_part(sentence: str) -> str:
    """The sentence without a question tacked onto its end ("I prefer X, how can I …?" → "I
    prefer X"); "" when the whole sentence is a question."""
    s = sentence.strip()
    if not s.endswith("?"):
        return "" if _UNMARKED_QUESTION.match(s) else s
    match = _EMBEDDED_QUESTION.search(s)
    if match and match.start() > 0:
        return s[: match.start()].strip()
    return "" if _is_question(s) else s


# Markers strong enough to make a rule on their own ("always", "never", "from now on", a
# leading "don't"); the others ("I'd like you to", "make sure", "we use") need a practice.
_STRONG_RULE = re.compile(
    r"\b(?:always|never|from\s+now\s+on|going\s+forward|from\s+here\s+on|" + cues.IN_FUTURE + r"|"
    r"every\s+time|" + cues.WHENEVER + r"|no\s+more)\b|^(?:please\s+)?(?:do\s+not|don'?t)\s",
    re.I,
)


def _rule_kind(text: str) -> str:
    for pattern, kind in _RULE_PATTERNS:
        if pattern.search(text):
            if _TASK_START.match(text) and not _STRONG.search(text) and kind != PREFERENCE:
                # "Fix the bug in this repo", "Can you make sure the tests pass": a task.
                continue
            return kind
    return ""


def _after_announcement(sentence: str) -> str:
    """ "Onto some coding guidelines: always include try statements" → the part after the
    colon; the sentence itself otherwise."""
    head, colon, tail = sentence.partition(": ")
    if colon and is_announcement(_masked(head)) and len(_WORD.findall(tail)) >= MIN_CLAUSE_WORDS:
        return tail
    return sentence


def classify_sentence(sentence: str, *, first: bool = False) -> str:
    """The kind of rule one sentence states ("" when none): instruction, preference, correction.

    Evidence for: a rule marker ("always", "never", "from now on", "I prefer", "we use", "make
    sure" …), a correction of the previous action, or an imperative that sets a convention in
    general ("Start private helpers with '_'", "When naming fixtures, end them with '_factory'").
    Evidence against: a question, encouragement or small talk, a one-off task or exploration
    ("for now", "familiarise yourself"), an announcement of rules that names none, an
    evaluation with no practice ("consistency is key"). A weak marker ("I'd like you to",
    "make sure") also needs the clause to name a practice (a value, a tool, what is named or
    configured)."""
    sentence = statement_part(sentence)
    if len(_WORD.findall(sentence)) < MIN_CLAUSE_WORDS:
        return ""
    text = _masked(_after_announcement(sentence))
    # Evidence for first: most sentences have none, and the evidence against costs more.
    lead = _CORRECTION_LEAD.match(text) if first else None
    rest = text[lead.end() :] if lead else ""
    led = bool(lead and (_IMPERATIVE.match(rest) or _rule_kind(rest)))
    kind = _rule_kind(text)
    cue: bool | None = None  # computed when needed: most sentences never need it
    if not (led or kind or _CORRECTION_ANY.search(text) or _imperative_rule(text)):
        cue = cues.is_standing(text)
        if not cue:
            return ""
    if _REASON.match(text):
        return ""  # "This keeps the diff small": why the rule before it holds
    if (
        _BACK_REFERENCE.match(text)
        and not _STRONG.search(text)
        and not cues.STANDING_TIME.search(text)
        and not _CORRECTION_ANY.search(text)
    ):
        return ""  # "This is a convention we follow": the reason for the rule before it
    if (_CHATTER.search(text) or _ENCOURAGEMENT.search(text)) and not _STRONG_VALUE.search(text):
        return ""
    if cues.DEICTIC.search(text) and not (
        cues.STANDING_TIME.search(text)
        or cues.ALWAYS_NEVER.search(text)
        or cues.working_habit(text)
    ):
        return ""  # "Don't clean it up": about the thing at hand
    if led:
        return CORRECTION
    if _CORRECTION_ANY.search(text) and not negative_evidence(text):
        return CORRECTION
    if negative_evidence(text) or _EVALUATIVE.match(text):
        return ""
    if (
        _REMEMBER_FACT.match(text)
        or _REMEMBER_FACT.match(_LEAD_INS.sub("", text))
        or _remember_maxim(text)
    ) and not _STRONG_VALUE.search(text):
        return ""
    if _IDENTITY_GUESS.match(text) or _INSTEAD_WE_DO.match(_LEAD_INS.sub("", text)):
        return ""
    remark = _REMARK.match(_LEAD_INS.sub("", text)) and not _STRONG_VALUE.search(text)
    if (
        remark
        or _BACKGROUND.match(text)
        or (_SOFT_MARKER.search(text) and not _STRONG_VALUE.search(text))
    ):
        return ""  # "As you know, we use Git": context; "I recommend the X extension": advice
    after = _PREAMBLES.sub("", _LEAD_INS.sub("", text))
    if _ENCOURAGEMENT.search(after) and not _STRONG_VALUE.search(after):
        return ""  # "I want you to focus on Pythonic code": advice about attitude
    standing = (
        _GENERAL.search(text)
        or _STRONG.search(text)
        or re.search(r"\b(?:before|after|when)\b", text)
    )
    if after != text and not standing and (_TASK_START.match(after) or _ONE_OFF.search(after)):
        return ""  # "I want you to create a GitHub account": a task for now
    if kind and (_STRONG_RULE.search(text) or names_practice(text)):
        return kind
    if _imperative_rule(text):
        return INSTRUCTION
    if cue or (cue is None and cues.is_standing(text)):
        return PREFERENCE if cues.PREFERENCE_IN_PASSING.search(text) else INSTRUCTION
    return ""


def classify(prompt: str) -> Classification:
    """Find the sentences of a prompt that state an instruction, a preference or a correction.

    Questions, task requests and pasted code or logs yield nothing. The first sentence may be a
    correction of the previous action ("No, use pnpm"); later ones count as corrections only
    with an explicit "that's wrong" / "not X but Y".
    """
    if not isinstance(prompt, str) or not prompt.strip():
        return Classification()
    found: list[Clause] = []
    parts = sentences(prompt)
    for index, sentence in enumerate(parts):
        retracted = cues.retraction_at(sentence)
        if retracted >= 0:
            found.clear()  # "…, but I changed my mind", "scratch that": only the final wish
            sentence = sentence[retracted:] if retracted == 0 else ""
            sentence = cues.RETRACTION.sub("", sentence, count=1).strip(" ,;:-")
            if not sentence:
                continue
        if (
            index
            and cues.WHY_THIS_CHOICE.match(parts[index - 1])
            and cues.THE_ANSWER.match(sentence)
        ):
            # "Why are we using node? We use bun": the answer corrects the choice
            found.append(Clause(sentence, CORRECTION, index, TIER_CORRECTION))
            continue
        kind = classify_sentence(sentence, first=index == 0)
        if not kind:
            continue
        text = _after_announcement(statement_part(sentence))
        preference = cues.preference_in_passing(text)
        if (
            preference
            and len(preference) < len(text)
            and not cues.is_standing(cues.PREFERENCE_IN_PASSING.sub("", text))
        ):
            # "Build the page; I prefer Bootstrap over Foundation because …": the preference
            found.append(Clause(preference, PREFERENCE, index))
            continue
        if _REFERS_BACK.search(_masked(text)):
            previous = parts[index - 1] if index else ""
            if previous and not previous.rstrip().endswith("?") and names_practice(previous):
                if found and found[-1].index == index - 1:
                    found.pop()  # the rule before, restated with this one
                if len(previous) + len(text) < MAX_CLAUSE_CHARS:
                    # "We use the '@retry' decorator. Add this decorator to all methods."
                    text = previous.rstrip(" .!") + ": " + text[:1].lower() + text[1:]
            elif (
                kind != CORRECTION
                and not _STRONG_VALUE.search(text)
                and not names_practice(_the_rest(text))
                and not cues.RULE_REQUEST.search(text)
                and not cues.working_habit(text)
            ):
                # "Apply this consistently from now on": nothing says what "this" is, and a rule
                # that does not say what it is about cannot be kept
                continue
        found.append(Clause(text, kind, index))
    return Classification(tuple(found))


def _the_rest(text: str) -> str:
    """A rule without its back-reference, its scope ("in all your Python code") and its
    frequency ("consistently", "for every file"): what is left must name a practice."""
    tail = _masked(text).rpartition(": ")[2]  # "This is our convention: apply it from now on"
    return _GENERAL.sub(" ", _SCOPE.sub(" ", _REFERS_BACK.sub(" ", tail)))


# Where a rule applies, not what it is: "in your code", "across all our Python scripts".
_SCOPE = re.compile(
    r"\b(?:in|across|throughout|for|to|into)\s+(?:all\s+|each\s+|every\s+|any\s+)?(?:of\s+)?"
    r"(?:your|our|the|my|all)?\s*(?:[\w-]+\s+){0,3}?(?:code|codebases?|code\s*base|scripts?|"
    r"modules?|projects?|files?|work(?:flow)?|repos?|repositor(?:y|ies)|programs?|applications?|"
    r"apps?)\b",
    re.I,
)


# A rule whose object is a pronoun or "this decorator / these names": it needs the sentence
# before it to say what it is about.
_REFERS_BACK = re.compile(
    r"\b(?:this|these|those)\s+(?:decorator|convention|practice|rule|prefix|suffix|naming|"
    r"names?|module|tool|approach|habit|guideline|standard|format|style|one|way)\b"
    r"|\b(?:apply|follow|use|add|include|implement|incorporate|adopt|keep|do|start|avoid|"
    r"skip|import|end|name|prefix|suffix|try|prioriti[sz]e|integrate|utili[sz]e|embrace|"
    r"stick\s+to|stick\s+with|consistent\s+with|refer\s+to)\s+"
    r"(?:\w+ing\s+(?:on\s+|with\s+|to\s+)?)?(?:this|these|those|it|them|that)\b"
    r"(?!\s+(?:way|one|is|was|are|were|the|a|an|you|we)\b)",
    re.I,
)


# --- is a stored statement a lesson at all? -------------------------------------------------

# Text an assistant writes about its own work, or Claude Code's compaction summary: never the
# user's rule, whatever words it contains.
_ASSISTANT_TEXT = re.compile(
    r"^(?:i(?:'ll|\s+will|'m\s+going\s+to|\s+would|\s+need\s+to|\s+can\s+see)|let\s+me|"
    r"now\s+(?:i|let)|since\s+the\s+user|the\s+user\s+(?:wants|asked|explicitly|said)|"
    r"this\s+session\s+is\s+being\s+continued|looking\s+at\s+the|based\s+on\s+the\s+"
    r"(?:conversation|summary))\b",
    re.I,
)


@dataclass(frozen=True, slots=True)
class LessonCheck:
    """Whether a statement reads as a standing lesson; `reason` says why not (empty when ok)."""

    ok: bool
    reason: str = ""


def lesson_check(statement: str) -> LessonCheck:
    """The one check that a stored or captured statement is a lesson: not assistant text, not a
    question, not a one-off task. Capture and maintenance both use it."""
    text = statement.strip() if isinstance(statement, str) else ""
    if not text:
        return LessonCheck(False, "empty")
    if _ASSISTANT_TEXT.match(text):
        return LessonCheck(False, "assistant text, not the user's words")
    verdict = classify(text)
    if verdict.is_signal:
        return LessonCheck(True)
    if text.rstrip().endswith("?") or _QUESTION_START.match(text):
        return LessonCheck(False, "a question, not a rule")
    return LessonCheck(False, "a one-off request or remark, not a standing rule")
