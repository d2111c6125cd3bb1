"""Session learning: the prompt classifier, the heuristic lesson extractor, transcript parsing
and error → fix pairing.

Pure Python (no Django). The classifier runs on the UserPromptSubmit request path, so it is
regular expressions over the prompt's prose only: no embedding, no I/O, well under 1 ms for a
prompt of a few kilobytes. It looks for explicit instructions ("always/never/don't/from now
on/remember/make sure/I prefer/we use X, not Y", a rule stated for "all"/"every" case) and
corrections of the previous action ("no, use …", "that's wrong …", "not X but Y"), sentence by
sentence, so a rule inside a long prompt is found and a question, a task request or pasted
code or log output is not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

# Kinds of signal, and the tiers of a draft (DESIGN "Session learning").
INSTRUCTION = "instruction"
PREFERENCE = "preference"
CORRECTION = "correction"
TIER_EXPLICIT = "A"
TIER_CORRECTION = "B"
TIER_INFERRED = "C"

MAX_DRAFTS_PER_PROMPT = 3
MAX_DRAFTS_PER_SESSION = 20
# Only the first part of a very long prompt is classified (pasted material sits at the end).
MAX_CLASSIFIED_CHARS = 20_000
MIN_CLAUSE_WORDS = 3
MAX_CLAUSE_CHARS = 300
MAX_QUOTE_CHARS = 500

# --- prose, code and logs -------------------------------------------------------------------

_FENCE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
_INLINE_CODE = re.compile(r"`[^`\n]{0,200}`")
_LOG_LINE = re.compile(
    r"""^\s*(?:
        \d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}          # timestamps
      | \[?(?:ERROR|WARN(?:ING)?|INFO|DEBUG|TRACE|FATAL|CRITICAL)\b
      | Traceback\b | File\ " | [\w.]*(?:Error|Exception|Failure):\s
      | at\ [\w$.<>]+\( | \$\ | >>>\ | \.\.\.\ | [#>]\ ?\w+@
      | npm\ (?:ERR|WARN) | error(?:\[\w+\])?: | warning: | E\s+ | \d+\s*\|
      | [-+]{3}\ | @@\ | diff\ --git
    )""",
    re.X | re.I,
)
_CODE_CHARS = set("{}()[];=<>$\\|&*#")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=\S)|\n+")
_WORD = re.compile(r"[A-Za-z][A-Za-z']*")


def _is_code_line(line: str) -> bool:
    stripped = line.strip()
    if not stripped:
        return False
    if line.startswith(("    ", "\t")) or _LOG_LINE.match(line):
        return True
    symbols = sum(1 for ch in stripped if ch in _CODE_CHARS)
    words = len(_WORD.findall(stripped))
    # Code and stack traces: many symbols per word, or a line ending like a statement.
    if symbols >= 3 and symbols * 3 > words:
        return True
    return stripped.endswith(("{", "};", ");", "*/")) or stripped.startswith(("//", "/*", "#!"))


# Typographic apostrophes and dashes read as their ASCII forms.
_TYPOGRAPHY = str.maketrans({"\u2019": "'", "\u2018": "'", "\u2013": "-", "\u2014": "-"})


def prose(text: str) -> str:
    """The text with fenced blocks, indented or log-like lines and code-dense lines removed."""
    text = _FENCE.sub("\n", text[:MAX_CLASSIFIED_CHARS].translate(_TYPOGRAPHY))
    return "\n".join(line for line in text.splitlines() if not _is_code_line(line))


def sentences(text: str) -> list[str]:
    """Sentences (and lines) of the prose of `text`, in order, stripped."""
    out = []
    for part in _SENTENCE_END.split(prose(text)):
        part = part.strip(" \t-*•>")
        if part:
            out.append(part)
    return out


# --- the classifier -------------------------------------------------------------------------

_QUESTION_START = re.compile(
    r"^(?:how|what|why|where|when|which|who|whose|is|are|was|were|do|does|did|can|could|"
    r"would|will|should|shall|may|might|has|have|any\s+idea|is\s+there)\b",
    re.I,
)
_POLITE_REQUEST = re.compile(r"^(?:can|could|would|will)\s+you\s+(?:please\s+)?", re.I)
_STRONG = re.compile(
    r"\b(?:always|never|from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|"
    r"from\s+here\s+on|every\s+time|whenever)\b",
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
        (r"\b(?:from\s+now\s+on|going\s+forward|from\s+here\s+on|in\s+(?:the\s+)?future)\b",
         INSTRUCTION),
        (r"^(?:please\s+)?(?:do\s+not|don'?t)\s+(?!worry|hesitate|forget\s+that\b|mind|"
         r"panic|bother|know|think|get\s+me|stress|feel|get\s+discouraged|hold\s+back|skimp|"
         r"wait|be\s+afraid|let\s+(?:your|it|that|this))\w+", INSTRUCTION),
        (r"\b(?:we|i)\s+(?:do\s+not|don'?t|never)\s+(?:use|want|allow|like|do|write|"
         r"commit|put|add|need|rely|mix)\b", INSTRUCTION),
        (r"\b(?:remember|keep\s+in\s+mind|note)\s+(?:to|that|this)\b", INSTRUCTION),
        (r"^(?:please\s+)?remember\b", INSTRUCTION),
        (r"(?:^(?:please\s+)?|[,;:]\s*)(?:make\s+sure|be\s+sure|ensure)\s+(?:to|that\s+(?:you|we)|"
         r"you|we|all|every|each)\b", INSTRUCTION),
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
    r"\bthat(?:'s|\s+is|\s+was)\s+(?:wrong|not\s+(?:right|correct|what)|incorrect)\b"
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
    r"\b(?:feel\s+free|let\s+me\s+know|reach\s+out|don'?t\s+hesitate|any\s+questions|thank(?:s|\s+you)|"
    r"nice\s+to\s+meet|glad|happy\s+to\s+help|have\s+a\s+(?:good|great|nice)|good\s+luck|"
    r"see\s+you|welcome|take\s+care|appreciate|my\s+door|catch\s+up|talk\s+(?:soon|later))\b",
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
    r"monitors?|laptop|desktop|machine|computer|phone|notebooks?|tool|tools|platform)\b",
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
    r"several|key|important|following|our|your|my|the|this|these|those|a|an)\s+"
    r"(?:[\w-]+\s+){0,3}?" + _META_NOUN + r"\b",
    re.I,
)
# Encouragement, reassurance and small talk: about the person, not the work.
_ENCOURAGEMENT = re.compile(
    r"\b(?:happy\s+to|here\s+(?:to|for)\s+(?:help|support|you)|door\s+is\s+(?:always\s+)?open|"
    r"(?:don'?t|do\s+not|never)\s+(?:be\s+(?:too\s+hard|afraid|shy|discouraged)|underestimate|"
    r"give\s+up|doubt|stop\s+learning)|keep\s+up\s+the|proud\s+of|great\s+job|well\s+done|"
    r"feel\s+(?:free|empowered|comfortable|confident)|trust\s+(?:me|yourself|your)|"
    r"the\s+best\s+\w+\s+you\s+can\s+be|be\s+patient\s+with\s+yourself|believe\s+in|"
    r"you(?:'re|\s+are)\s+(?:doing|making|on\s+the\s+right)|no\s+pressure|"
    r"embrace\s+the|challenge\s+yourself|enjoy\s+the|hold\s+you\s+back|"
    # advice about attitude rather than a practice: "always focus on the impact"
    r"^(?:(?:always|never|please|just|also|so)\s+)*(?:focus\s+on|strive|aim\s+to|be\s+(?:open|"
    r"proactive|patient|confident|kind|efficient|practical|mindful|curious)|seek\s+(?:feedback|"
    r"help|out)|listen|reflect\s+on|celebrate|keep\s+(?:learning|growing|an\s+open)))\b",
    re.I,
)
# A task for now or a one-off exploration, not a standing rule.
_ONE_OFF = re.compile(
    r"\b(?:if\s+you\s+haven'?t\s+already|for\s+your\s+next\s+task|in\s+the\s+coming\s+days|"
    r"tomorrow|next\s+(?:week|time|sprint)|to\s+begin\s+with|to\s+get\s+started)\b"
    r"|\b(?:for\s+now|for\s+the\s+time\s+being|right\s+now|at\s+the\s+moment|today|soon|"
    r"this\s+time|this\s+week|first)\s*[.!]?$"
    r"|\b(?:familiari[sz]e\s+yourself|get\s+(?:comfortable|familiar|settled|a\s+feel)|"
    r"play(?:ing)?\s+around|try(?:ing)?\s+out|take\s+(?:some|the)\s+time\s+to\s+(?:explore|learn|"
    r"get|read)|explore|dive\s+(?:deep|into|straight))\b",
    re.I,
)
# "You must be Eva": a greeting, not an obligation.
_NOT_OBLIGATION = re.compile(r"\bmust\s+be\s+(?:[A-Z]\w*|new|tired|excited|thrilled|the)\b")
# "Remember that autonomy doesn't mean isolation": a thought to keep, not a practice.
_REMEMBER_FACT = re.compile(
    r"^(?:always\s+|just\s+|please\s+)?(?:remember|keep\s+in\s+mind)\s+that\s+"
    r"(?!(?:you|we)\s+(?:always|never|use|must|should|need|do\s+not|don'?t)\b)",
    re.I,
)
# Background rather than a rule: "As you know, we use Git", "You're using your remote days
# judiciously", "We'll be making a difference" (a description of the person or the team with
# no obligation in it).
_BACKGROUND = re.compile(
    r"^(?:as\s+you(?:'re|\s+are)?\s+(?:know|aware|may\s+know|can\s+see)\b"
    r"|(?:you(?:'re|\s+are)|your|i\s+always|we(?:'ll|\s+will)\s+be)\b"
    r"(?![^.]*\b(?:must|should|need\s+to|have\s+to|always|never|from\s+now\s+on|going\s+forward)\b))",
    re.I,
)
# A general remark about a third party rather than an instruction to the reader: "A profiler
# can't fix poor coding practices", "Innovation doesn't always have to be groundbreaking",
# "There's always more to learn" (no modal, nothing addressed to anyone).
_REMARK = re.compile(
    r"^(?:a|an|the|every(?:one|body|thing)|nobody|no\s+one|there(?:'s|\s+is|\s+are)|"
    r"it(?:'s|\s+is)\s+(?!important|essential|crucial|vital|imperative|mandatory|required|best)|"
    r"[\w-]+\s+(?:doesn'?t|don'?t|isn'?t|aren'?t|can'?t)\s+(?:always|just|have\s+to))\b"
    r"(?![^.]*\b(?:should|must|need\s+to|needs\s+to|has\s+to|have\s+to|is\s+to|are\s+to)\b)",
    re.I,
)
# A recommendation or encouragement rather than a rule; it counts only with a named value.
_SOFT_MARKER = re.compile(r"\b(?:i|we)\s+(?:also\s+)?(?:'d\s+)?(?:recommend|suggest)\b", re.I)
# An evaluation of a value with no practice in it: "Consistency is key", "Feedback is a gift".
_EVALUATIVE = re.compile(
    r"^(?:(?:always\s+|just\s+)?remember\s+that\s+|keep\s+in\s+mind\s+that\s+)?(?:[\w'-]+\s+){1,5}?"
    r"(?:is|are|isn'?t|aren'?t)\s+(?:just\s+|not\s+just\s+|all\s+|also\s+|so\s+|really\s+)?"
    r"(?:key|crucial|essential|important|vital|a\s+gift|everything|about|as\s+important|"
    r"just\s+as|a\s+(?:lifelong|team|great|powerful|journey))\b",
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
        return True  # "No notebooks for taking notes."
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


def negative_evidence(text: str) -> bool:
    """Evidence that a sentence with a rule's marker is not a rule: encouragement, a one-off
    task or exploration, a greeting, or an announcement of rules to come."""
    return bool(
        _ENCOURAGEMENT.search(text)
        or (_ONE_OFF.search(text) and not _STRONG.search(text))
        or _NOT_OBLIGATION.search(text)
        or (is_announcement(text) and not _RULE_VALUE_AFTER_COLON.search(text))
    )


_RULE_VALUE_AFTER_COLON = re.compile(r":\s*\S")


@dataclass(frozen=True)
class Clause:
    """One sentence of a prompt that states a rule: its text, kind, and position."""

    text: str
    kind: str
    index: int


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


def _is_question(sentence: str) -> bool:
    s = sentence.strip()
    if s.endswith("?"):
        # "Could you always use pnpm from now on?" is a request phrased as a question.
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
        return s
    match = _EMBEDDED_QUESTION.search(s)
    if match and match.start() > 0:
        return s[: match.start()].strip()
    return "" if _is_question(s) else s


# Markers strong enough to make a rule on their own ("always", "never", "from now on", a
# leading "don't"); the others ("I'd like you to", "make sure", "we use") need a practice.
_STRONG_RULE = re.compile(
    r"\b(?:always|never|from\s+now\s+on|going\s+forward|from\s+here\s+on|in\s+(?:the\s+)?"
    r"future|every\s+time|whenever|no\s+more)\b|^(?:please\s+)?(?:do\s+not|don'?t)\s",
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
    general ("Start attribute names with 'q_'", "When naming methods, end them with '_a'").
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
    if not (led or kind or _CORRECTION_ANY.search(text) or _imperative_rule(text)):
        return ""
    if (
        _BACK_REFERENCE.match(text)
        and not _STRONG.search(text)
        and not _CORRECTION_ANY.search(text)
    ):
        return ""  # "This is a convention we follow": the reason for the rule before it
    if (_CHATTER.search(text) or _ENCOURAGEMENT.search(text)) and not _STRONG_VALUE.search(text):
        return ""
    if led:
        return CORRECTION
    if _CORRECTION_ANY.search(text) and not negative_evidence(text):
        return CORRECTION
    if negative_evidence(text) or _EVALUATIVE.match(text):
        return ""
    if _REMEMBER_FACT.match(_LEAD_INS.sub("", text)) and not _STRONG_VALUE.search(text):
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
        kind = classify_sentence(sentence, first=index == 0)
        if not kind:
            continue
        text = _after_announcement(statement_part(sentence))
        if _REFERS_BACK.search(_masked(text)):
            previous = parts[index - 1] if index else ""
            if previous and not previous.rstrip().endswith("?") and names_practice(previous):
                if found and found[-1].index == index - 1:
                    found.pop()  # the rule before, restated with this one
                if len(previous) + len(text) < MAX_CLAUSE_CHARS:
                    # "We use the '@retry' decorator. Add this decorator to all methods."
                    text = previous.rstrip(" .!") + ": " + text[:1].lower() + text[1:]
            elif kind != CORRECTION and not _STRONG_VALUE.search(text):
                continue  # "Apply this consistently": nothing says what "this" is
        found.append(Clause(text, kind, index))
    return Classification(tuple(found))


# A rule whose object is a pronoun or "this decorator / these names": it needs the sentence
# before it to say what it is about.
_REFERS_BACK = re.compile(
    r"\b(?:this|these|those)\s+(?:decorator|convention|practice|rule|prefix|suffix|naming|"
    r"names?|module|tool|approach|habit|guideline|standard|format|style|one|way)\b"
    r"|\b(?:apply|follow|use|add|include|implement|incorporate|adopt|keep|do|start|avoid|"
    r"skip|import|end|name|prefix|suffix|try)\s+(?:\w+ing\s+(?:on\s+|with\s+|to\s+)?)?"
    r"(?:this|these|those|it|them|that)\b",
    re.I,
)


# --- the heuristic extractor ----------------------------------------------------------------

_LEAD_INS = re.compile(
    r"^(?:(?:ok(?:ay)?|so|and|also|oh|well|now|then|but|plus|hey|right|alright|great|"
    r"first(?:ly)?|second(?:ly)?|third(?:ly)?|finally|lastly|additionally|moreover|furthermore|"
    r"one\s+more\s+thing|another\s+thing|on\s+(?:a|another)\s+note|by\s+the\s+way|btw|"
    r"as\s+(?:a|for)\s+\w+|in\s+addition|moving\s+on|next|importantly|to\s+be\s+clear|"
    r"actually|wait|hmm|sorry|yes|yeah|please|just|(?!(?:always|never)\b)[A-Z][a-z]+(?=,))"
    r"[\s,:;.!-]+"
    # "No, use pnpm" loses its "No,"; "No notebooks for notes" keeps its "No".
    r"|(?:no|nope)\s*[,:;.!-][\s,:;.!-]*)+",
    re.I,
)
_PREAMBLES = re.compile(
    r"^(?:(?:i(?:\s+would|'d)\s+like\s+(?:you|us)\s+to|i\s+want\s+(?:you|us)\s+to|"
    r"i\s+need\s+you\s+to|i\s+expect\s+you\s+to|i\s+(?:want\s+to\s+)?encourage\s+you\s+to|"
    r"i(?:'d)?\s+(?:really\s+)?(?:like|want)\s+to\s+"
    r"(?:remind|tell|ask)\s+you\s+(?:to|that)|make\s+sure\s+(?:to|that|you)|be\s+sure\s+to|"
    r"ensure\s+that|remember\s+(?:to|that)|keep\s+in\s+mind\s+(?:to|that)|please\s+note\s+that|"
    r"note\s+that|from\s+now\s+on|going\s+forward|from\s+here\s+on|in\s+(?:the\s+)?future|"
    r"that(?:'s|\s+is|\s+was)\s+(?:wrong|not\s+right|incorrect)|"
    r"one\s+(?:of\s+the\s+things|thing)\s+i\s+(?:insist\s+on|want\s+you\s+to\s+\w+)\s+is|"
    r"it(?:'s|\s+is)\s+(?:important|essential|crucial|vital|imperative|mandatory|required|best)\s+"
    r"(?:that\s+(?:you|we)|to|if\s+you)|"
    r"(?:can|could|would|will)\s+you\s+(?:please\s+)?)"
    r"[\s,:;.!-]*)+",
    re.I,
)
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
_SUBCLAUSE = re.compile(r"(?:[,;]\s*|\s+)(?:so|but|and\s+so|which\s+is\s+why|hence)\s+|;\s+", re.I)


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


# A cleaned clause that asks for attention or effort but names no practice is not a lesson.
_META = re.compile(
    r"^(?:pay(?:ing)?\s+(?:extra\s+|close\s+)?attention|focus|shift|proceed|try\s+(?:something|"
    r"to\s+(?:keep|stay|be))|keep\s+(?:me|us|it\s+simple|up)|start\s+(?:paying|adopting|thinking)|"
    r"develop|own\s+the|set\s+aside|review\s+the|let'?s|i\s+(?:trust|like|love|hope|think|believe|"
    r"know|am|was|will)|i'?m|we'?re|we\s+(?:want|can|could|will|are)|here\s+(?:are|is)|"
    r"attention\s+to|with\s+(?:these|this)|it'?s|this|these|that|there|for\s+(?:our|the)\s+\w+,)\b",
    re.I,
)


def extract(prompt: str, *, limit: int = MAX_DRAFTS_PER_PROMPT) -> list[LessonDraft]:
    """Heuristic extraction: each rule-stating clause of `prompt`, cleaned, as a draft (≤ limit).

    Never the whole prompt: only the sentence that states the rule, without its lead-in and its
    reason. Explicit instructions and preferences are tier A, corrections tier B.
    """
    drafts: list[LessonDraft] = []
    seen: set[str] = set()
    clauses = list(classify(prompt).clauses)
    for clause in clauses:
        statement = clean_clause(focus(clause.text))
        if len(_WORD.findall(statement)) < MIN_CLAUSE_WORDS or _META.match(statement):
            continue
        key = statement.casefold()
        if key in seen:
            continue
        seen.add(key)
        tier = TIER_CORRECTION if clause.kind == CORRECTION else TIER_EXPLICIT
        drafts.append(
            LessonDraft(
                statement=statement,
                polarity=polarity_of(statement),
                tier=tier,
                type=type_of(statement),
                anti_pattern=anti_pattern_of(statement),
                tags=tags_of(statement),
                rationale=clause.text[:MAX_QUOTE_CHARS],
                kind=clause.kind,
            )
        )
        if len(drafts) >= limit:
            break
    return drafts


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
    function argument names, always start them with 'e_'" / "Start function argument names
    with 'g_'")."""
    va, vb = values_of(new), values_of(old)
    if not va or not vb or va == vb:
        return False
    a, b = plain_words(new), plain_words(old)
    if not a or not b:
        return False
    return len(a & b) / len(a | b) >= SAME_RULE_WORDS


# The slot a rule fills: what it names or configures. Two rules of the same slot with other
# values (or the opposite direction) are two versions of one rule, however they are worded:
# "When naming function argument names, always start them with 'e_'" and "start function
# argument names with 'g_' from now on" fill (argument+function names, start).
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
# "start ending your method names with '_p'": the position is "end", not "start".
_POSITION_WORD = re.compile(r"\b(" + "|".join(_POSITION) + r")(?!\w*\s+\w+ing\b)", re.I)
_NAMING_WORD = re.compile(r"\bnam(?:e|es|ed|ing)\b|\bprefix|\bsuffix", re.I)
# "use X as the main computer", "use X for video calls", "switch to X for our tickets".
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
    "End attribute names with '_j' and start method names with 'a_'" has two."""
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
            # arguments of your functions" and "argument variables" all name arguments.
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
    # "your main VCS" and "our version control system"
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


def is_variant(new: str, old: str) -> bool:
    """A lexical variant test that compares what the rules are about rather than their words:
    the same naming slot with another value, the same role filled by another tool, the same
    words in the opposite direction, or the same rule words with another value."""
    if new.strip().casefold() == old.strip().casefold():
        return False
    slots_new, slots_old = naming_slots(new), naming_slots(old)
    if slots_new and slots_old:
        # Two naming rules: the same slot (what is named, where) with another value, and
        # nothing else: "end function names" is not "end function argument names".
        return bool(slots_new & slots_old) and values_of(new) != values_of(old)
    if same_rule_other_value(new, old) or same_rule_other_value(_digits(new), _digits(old)):
        return True  # "no more than three days a week" / "no more than twice a week"
    tool_new, tool_old = tool_slot(new), tool_slot(old)
    if tool_new and tool_old and not (tool_new[0] & tool_old[0]) and _same_role(tool_new, tool_old):
        return True
    negative_new = bool(_NEGATIVE_DIRECTION.search(new))
    if negative_new != bool(_NEGATIVE_DIRECTION.search(old)):
        a = plain_words(new) - _DIRECTION_WORDS
        b = plain_words(old) - _DIRECTION_WORDS
        if a and b and len(a & b) / len(a | b) >= SAME_RULE_WORDS:
            return True
        # "Stop using a linter altogether" / "Use a linter for all your Python code"
        if _used_objects(new) & _used_objects(old):
            return True
    return False


# --- transcripts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One entry of a Claude Code transcript: user / assistant text, tool_use or tool_result."""

    kind: str  # user | assistant | tool_use | tool_result
    text: str = ""
    tool: str = ""
    tool_id: str = ""
    tool_input: str = ""
    is_error: bool = False


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text") or ""))
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _clean(value: Any) -> Any:
    """JSON with every string a database column takes: JSON escapes may spell a NUL (PostgreSQL
    refuses it) or a lone surrogate (UTF-8 cannot encode it)."""
    if isinstance(value, str):
        return value.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def parse_line(line: str | bytes) -> list[Entry]:
    """The entries of one JSONL line of a Claude Code transcript ([] for anything else)."""
    try:
        row = _clean(json.loads(line))
    except ValueError:
        return []
    if not isinstance(row, dict):
        return []
    kind = row.get("type")
    message = row.get("message")
    if kind not in {"user", "assistant"} or not isinstance(message, dict):
        return []
    if row.get("isMeta") or row.get("isSidechain"):
        return []
    content = message.get("content")
    entries: list[Entry] = []
    if kind == "user":
        if isinstance(content, str):
            if not content.lstrip().startswith(("<command-", "<local-command", "<system-")):
                entries.append(Entry("user", text=content))
            return entries
        if isinstance(content, list):
            texts = []
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_result":
                    entries.append(
                        Entry(
                            "tool_result",
                            text=_content_text(block.get("content"))
                            or _json_text(block.get("content") or ""),
                            tool_id=str(block.get("tool_use_id") or ""),
                            is_error=bool(block.get("is_error")),
                        )
                    )
                elif block.get("type") == "text":
                    texts.append(str(block.get("text") or ""))
            text = "\n".join(t for t in texts if t.strip())
            if text:
                entries.insert(0, Entry("user", text=text))
        return entries
    if isinstance(content, str):
        return [Entry("assistant", text=content)] if content.strip() else []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and str(block.get("text") or "").strip():
            entries.append(Entry("assistant", text=str(block["text"])))
        elif block.get("type") == "tool_use":
            entries.append(
                Entry(
                    "tool_use",
                    tool=str(block.get("name") or ""),
                    tool_id=str(block.get("id") or ""),
                    tool_input=_json_text(block.get("input") or {}),
                )
            )
    return entries


def parse_lines(lines: Iterable[str | bytes]) -> list[Entry]:
    out: list[Entry] = []
    for line in lines:
        if line and line.strip():
            out.extend(parse_line(line))
    return out


def split_complete(data: bytes) -> tuple[list[bytes], int]:
    """Complete lines of a chunk read from a JSONL file, and how many bytes they span.

    A last line without its newline may still be being written: it is left for the next read,
    so the offset only ever moves past whole lines.
    """
    end = data.rfind(b"\n")
    if end < 0:
        return [], 0
    return data[:end].split(b"\n"), end + 1


def render_entries(entries: Sequence[Entry], limit: int = 12_000) -> str:
    """A compact text of transcript entries for a judge or extractor (newest kept when cut)."""
    lines = []
    for e in entries:
        if e.kind == "user":
            lines.append(f"USER: {e.text.strip()[:1500]}")
        elif e.kind == "assistant":
            lines.append(f"ASSISTANT: {e.text.strip()[:1500]}")
        elif e.kind == "tool_use":
            lines.append(f"TOOL {e.tool}: {e.tool_input[:400]}")
        else:
            lines.append(f"RESULT{' (error)' if e.is_error else ''}: {e.text.strip()[:300]}")
    text = "\n".join(lines)
    return text[-limit:]


# --- error → fix ------------------------------------------------------------------------------

_TOKEN = re.compile(r"[\w.@/-]+")
SIMILAR_CALL = 0.3


@dataclass(frozen=True)
class Call:
    """One tool call as error → fix pairing sees it."""

    tool: str
    tool_input: str
    success: bool
    output: str = ""


@dataclass(frozen=True)
class Fix:
    tool: str
    failed: str
    fixed: str
    error: str
    statement: str = field(default="")


def _tokens(text: str) -> frozenset[str]:
    return frozenset(t.casefold() for t in _TOKEN.findall(text))


def call_similarity(a: str, b: str) -> float:
    """Jaccard similarity of the two inputs' tokens (0 when either is empty)."""
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)


def _command(tool_input: str) -> str:
    try:
        value = json.loads(tool_input)
    except ValueError:
        return tool_input
    if isinstance(value, dict):
        for key in ("command", "file_path", "path", "pattern", "url", "query"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return tool_input


def _first_line(text: str, limit: int = 160) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:limit]
    return ""


def error_fixes(calls: Sequence[Call], *, window: int = 6) -> list[Fix]:
    """Each failed call followed (within `window` calls) by a successful similar call of the
    same tool with a different input: the failure, the fix and a draft statement."""
    fixes: list[Fix] = []
    used: set[int] = set()
    for i, failed in enumerate(calls):
        if failed.success:
            continue
        for j in range(i + 1, min(len(calls), i + 1 + window)):
            fixed = calls[j]
            if j in used or fixed.tool != failed.tool or not fixed.success:
                continue
            a, b = _command(failed.tool_input), _command(fixed.tool_input)
            if a.strip() == b.strip() or call_similarity(a, b) < SIMILAR_CALL:
                continue
            used.add(j)
            error = _first_line(failed.output)
            statement = f"For {failed.tool}: use `{b[:160]}` instead of `{a[:160]}`"
            statement += f" (it failed with: {error})." if error else "."
            fixes.append(Fix(failed.tool, a[:400], b[:400], error, statement))
            break
    return fixes
