"""Evidence for and against a rule in one sentence of a prompt: the markers of a rule, the
imperatives that set a convention, the practice a rule names, and what makes a rule-like
sentence something else (small talk, a one-off task, an announcement, a maxim, a remark).

Pure Python (no Django); the classifier (`classify`) weighs these, sentence by sentence.
"""

from __future__ import annotations

import re

from memory.maths.learning import cues
from memory.maths.learning.text import INSTRUCTION, PREFERENCE

# --- evidence for a rule -------------------------------------------------------------------

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
         r"commit|put|add|rely|mix)\b", INSTRUCTION),
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
         r"\s+(?!by\b|for\s+a\b)\w+", INSTRUCTION),
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
    r"thanks|need|idea|rush|doubt|for\s+a\b))[,.!:;-]*\s*",
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
# "all" about the work at hand, not every case: "commit and push all changes", "all the edits".
_AT_HAND = re.compile(
    r"\ball\s+(?:of\s+)?(?:the\s+|my\s+|your\s+|our\s+|these\s+|those\s+)?(?:current\s+|local\s+|"
    r"pending\s+|uncommitted\s+|staged\s+|remaining\s+|outstanding\s+)?(?:changes|modifications|"
    r"edits|work|commits)\b(?!\s+(?:that|which|to|in|of|you|we)\b)",
    re.I,
)


def general(text: str) -> re.Match[str] | None:
    """A word that makes a rule general ("all", "every", "whenever" …), not "all" of the work
    at hand ("commit all changes")."""
    found = _GENERAL.search(text)
    if found and found.group(0).lower() == "all" and _AT_HAND.search(text):
        return _GENERAL.search(_AT_HAND.sub(" ", text))
    return found


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
    r"summari[sz]e|find|open|read|run\s+the|deploy|update\s+the|rename\s+the|delete\s+the|give\s+me|"
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
    r"\b(?:happy\s+to|here\s+to\s+help|(?:don'?t|do\s+not)\s+(?:be\s+afraid|worry|shy\s+away|"
    r"underestimate)|you\s+never\s+know|"
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
        or general(text)
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
        and not _NAMED_AS_STANDARD.search(text)
    )


# "Going forward kebab-case H1 is the standard": the standard named before it, not announced.
_NAMED_AS_STANDARD = re.compile(
    r"(?<![\w`'\"-])(?!(?:it|this|that|which|what|there|here|what's)\s)[\w`'\"-]+\s+"
    r"(?:is|are|becomes?|should\s+be)\s+(?:the|our)\s+(?:new\s+)?"
    r"(?:standard|convention|default|norm)\b",
    re.I,
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
    # A bare identifier ("Put it in handleSessionEnd") names the code at hand; it is a
    # convention's value only after a naming verb ("Prefix helpers with _private_") or quoted.
    # "@name" is a decorator only after a naming verb ("Decorate views with @login_required");
    # elsewhere it is a file Claude Code was pointed at ("Commit and update @changelog").
    value = _QUOTED.search(text) or (_NAMING_VERB.match(rest) and _CONVENTION_VALUE.search(text))
    return bool(scoped or value or general(text) or _GENERIC_OBJECT.search(rest))


# A value a convention sets (a quoted name, a decorator, snake_case or camelCase), not a product's
# name ("Push both branches to GitHub" is a task, "Prefix private helpers with '_'" a convention).
_CONVENTION_VALUE = re.compile(
    r"'[^'\s]{1,40}'|\"[^\"\n]{1,40}\"|`[^`\n]{1,60}`|@\w+|\b\w*_\w+\b|\b\w+_(?!\w)|\b[a-z]\w*[a-z][A-Z]\w*\b"
)
_QUOTED = re.compile(r"'[^'\s]{1,40}'|\"[^\"\n]{1,40}\"|`[^`\n]{1,60}`")
_NAMING_VERB = re.compile(
    r"(?:name|prefix|suffix|start|end|call|rename|label|capitali[sz]e|format|type|mark|"
    r"decorate|annotate|append|begin|finish|terminate|declare|define|use|import)\b",
    re.I,
)
# What happens when the person does something, reported: "every time I run the tests they hang".
_REPORT = re.compile(r"^(?:every\s+time|each\s+time|whenever|when)\s+i\b", re.I)


def reports_what_happens(text: str) -> bool:
    """ "Every time I …, <it happens>" with nothing asked of the agent (no imperative after the
    comma, nobody addressed)."""
    if not _REPORT.match(text) or cues.TO_THE_AGENT.search(text):
        return False
    _, comma, after = text.partition(",")
    return not (comma and (_IMPERATIVE.match(after.strip()) or _RULE_VERB.match(after.strip())))


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
