"""The prompt classifier: does a sentence state a standing rule, a preference or a correction?

Pure Python (no Django). It runs on the UserPromptSubmit request path, so it is regular
expressions over the prompt's prose only: no embedding, no I/O, well under 1 ms per prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.maths.learning import cues, indirect
from memory.maths.learning.evidence import (
    _BACKGROUND,
    _CHATTER,
    _CORRECTION_ANY,
    _CORRECTION_LEAD,
    _ENCOURAGEMENT,
    _EVALUATIVE,
    _GENERAL,
    _IDENTITY_GUESS,
    _IMPERATIVE,
    _INSTEAD_WE_DO,
    _ONE_OFF,
    _POLITE_REQUEST,
    _QUESTION_START,
    _REMARK,
    _REMEMBER_FACT,
    _RULE_PATTERNS,
    _SOFT_MARKER,
    _STRONG,
    _STRONG_VALUE,
    _TASK_START,
    _imperative_rule,
    _remember_maxim,
    general,
    is_announcement,
    names_practice,
    negative_evidence,
    reports_what_happens,
)
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
    TIER_INFERRED,
    sentences,
)


@dataclass(frozen=True)
class Clause:
    """One sentence of a prompt that states a rule: its text, kind, and position."""

    text: str
    kind: str
    index: int
    tier: str = ""  # set when the classifier already knows it (a question's answer: B)
    quote: str = ""  # the person's words when `text` restates them (a reproach's rule)


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


# A modal that prescribes ("the status must be updated with X, not Y"): not a description.
_PRESCRIBES = re.compile(
    r"\b(?:must|should|shall|needs?\s+to|has\s+to|have\s+to|ought\s+to)\b", re.I
)
# A clause that cannot stand alone: "rather than X", "if X", "when X" …
_SUBORDINATE = re.compile(
    r"^(?:(?:and|but|so|ok(?:ay)?)[,\s]+)?(?:rather\s+than|instead\s+of|if|when|whenever|because|"
    r"since|although|though|while|unless|once|after|before|for\s+(?:the|this|that))\b",
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
    """Inline code replaced by a placeholder, so a marker inside `…` does not count; markers
    that only seem to address the agent made neutral (`cues.plain_intent`)."""
    return cues.plain_intent(_INLINE_CODE.sub("CODE", sentence))


def statement_part(sentence: str) -> str:
    """The sentence without a question tacked onto its end ("I prefer X, how can I …?" → "I
    prefer X"); "" when the whole sentence is a question."""
    s = sentence.strip()
    if not s.endswith("?"):
        return "" if _UNMARKED_QUESTION.match(s) else s
    match = _EMBEDDED_QUESTION.search(s)
    if match and match.start() > 0:
        head = s[: match.start()].strip()
        # "rather than X, could we Y?": the question is the sentence, its head only a condition
        return "" if _SUBORDINATE.match(head) else head
    return "" if _is_question(s) else s


# Markers strong enough to make a rule on their own ("always", "never", "from now on", a
# leading "don't"); the others ("I'd like you to", "make sure", "we use") need a practice.
_STRONG_RULE = re.compile(
    r"\b(?:always|never|from\s+now\s+on|going\s+forward|from\s+here\s+on|" + cues.IN_FUTURE + r"|"
    r"every\s+time|" + cues.WHENEVER + r"|no\s+more)\b|^(?:please\s+)?(?:do\s+not|don'?t)\s",
    re.I,
)


def _rule_kind(text: str) -> str:
    kind = _marked_kind(text)
    if kind:
        return kind
    # "oh, please don't amend commits": a marker that wants the clause's start, after a lead-in
    bare = _LEAD_INS.sub("", text)
    return _marked_kind(bare) if bare != text else ""


def _marked_kind(text: str) -> str:
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
    if cues.PRONOUN_ONLY.match(text):
        return ""  # "We don't commit it": names nothing once stored
    if cues.DEICTIC.search(text) and not (
        cues.STANDING_TIME.search(text)
        or cues.ALWAYS_NEVER.search(text)
        or cues.working_habit(text)
    ):
        return ""  # "Don't clean it up": about the thing at hand
    if (
        not led
        and cues.DESCRIPTION.match(text)
        and not cues.TO_THE_AGENT.search(text)
        and not _STRONG_RULE.search(text)
        and not cues.STANDING_TIME.search(text)
        and not _PRESCRIBES.search(text)
        and not cues.EXPLICIT_CORRECTION.search(text)
    ):
        return ""  # "The handler uses X instead of Y": what the code does
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
    if (
        _IDENTITY_GUESS.match(text)
        or _INSTEAD_WE_DO.match(_LEAD_INS.sub("", text))
        or reports_what_happens(text)
    ):
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
        general(text) or _STRONG.search(text) or re.search(r"\b(?:before|after|when)\b", text)
    )
    if after != text and not standing and (_TASK_START.match(after) or _ONE_OFF.search(after)):
        return ""  # "I want you to create a GitHub account": a task for now
    if kind and (_STRONG_RULE.search(text) or names_practice(text)):
        return kind
    if _imperative_rule(text):
        return INSTRUCTION
    if cue or (cue is None and cues.is_standing(text)):
        return PREFERENCE if indirect.PREFERENCE_IN_PASSING.search(text) else INSTRUCTION
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
        if _is_fragment(sentence):
            continue
        retracted = indirect.retraction_at(sentence)
        if retracted >= 0:
            found.clear()  # "…, but I changed my mind", "scratch that": only the final wish
            sentence = sentence[retracted:] if retracted == 0 else ""
            sentence = indirect.RETRACTION.sub("", sentence, count=1).strip(" ,;:-")
            if not sentence:
                continue
        if (
            index
            and indirect.WHY_THIS_CHOICE.match(parts[index - 1])
            and indirect.THE_ANSWER.match(sentence)
        ):
            # "Why are we using node? We use bun": the answer corrects the choice
            found.append(Clause(sentence, CORRECTION, index, TIER_CORRECTION))
            continue
        reproach = indirect.reproach_rule(sentence) or indirect.pointless_rule(sentence)
        if reproach and not (
            index + 1 < len(parts) and indirect.THE_ANSWER.match(parts[index + 1])
        ):
            # "Why are you still using vale?", "there is no point adding X": the rule it
            # carries, for review (the answer after "why are we using node?", when there is
            # one, is the rule instead)
            found.append(Clause(reproach, CORRECTION, index, TIER_INFERRED, quote=sentence))
            continue
        kind = classify_sentence(sentence, first=index == 0)
        if not kind:
            continue
        text = _after_announcement(statement_part(sentence))
        preference = indirect.preference_in_passing(text)
        if (
            preference
            and len(preference) < len(text)
            and not cues.is_standing(indirect.PREFERENCE_IN_PASSING.sub("", text))
        ):
            # "Build the page; I prefer Bootstrap over Foundation because …": the preference
            found.append(Clause(preference, PREFERENCE, index))
            continue
        if (
            _ANSWERS_THE_LAST.match(text)
            and found
            and found[-1].index == index - 1
            and len(found[-1].text) + len(text) < MAX_CLAUSE_CHARS
        ):
            # "Check that you are on the right branch. If not, always branch off main.": one
            # rule, its condition in the sentence before
            said = found.pop()
            text = said.text.rstrip(" .!") + ", and " + text[:1].lower() + text[1:]
            found.append(Clause(text, said.kind, said.index, said.tier))
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


_FRAGMENT_END = re.compile(
    r"(?::|\.\.\.+|\u2026)\s*$"
    # cut short: it ends on a word that needs what follows ("Print something like.", "…, run.")
    r"|\b(?:the|a|an|and|or|via|e\.g|i\.e)\s*[.!]?\s*$"
    r"|(?:something|anything|stuff|this|that)\s+like\s*[.!]?\s*$"
    r"|(?:^|[,;]\s*|\b(?:please|then|just|and|can)\s+)(?:run|set|use|add|call|type|execute|"
    r"enter|paste)\s*[.!]?\s*$",
    re.I,
)
_FRAGMENT_START = re.compile(
    r"(?:in\s+order\s+)?to\s+(?!be\s+(?:clear|honest|sure)\b|clarify\b|sum\s+up\b)\w+\b[^,;:]*$",
    re.I,
)
# A reviewer's suggestion ("Consider extracting this into a helper").
_SUGGESTION = re.compile(
    r"^(?:\w+\s+){0,2}?consider\s+\w+ing\b|[,;]\s*consider\s+(?:also\s+)?\w+ing\b", re.I
)


def _is_fragment(sentence: str) -> bool:
    """Not a sentence of its own: a line that introduces what follows it ("To silence it,
    run:", "Print something like:"), one that trails off or is cut short ("… ends with the."),
    a purpose with no main clause ("To keep the diff small."), or a reviewer's suggestion."""
    return bool(
        _FRAGMENT_END.search(sentence[-40:])
        or _FRAGMENT_START.match(sentence)
        or ("onsider" in sentence and _SUGGESTION.search(sentence))
    )


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


# A sentence that answers the condition of the one before: "If not, …", "Otherwise, …".
_ANSWERS_THE_LAST = re.compile(r"^(?:if\s+(?:not|so)|otherwise)\b\s*,?", re.I)
# A rule whose object is a pronoun or "this decorator / these names": it needs the sentence
# before it to say what it is about.
_REFERS_BACK = re.compile(
    r"\b(?:this|these|those)\s+(?:decorator|convention|practice|rule|prefix|suffix|naming|"
    r"names?|module|tool|approach|habit|guideline|standard|format|style|one|way)\b"
    r"|\b(?:apply|follow|use|add|include|implement|incorporate|adopt|keep|do|start|avoid|"
    r"skip|import|end|name|prefix|suffix|try|prioriti[sz]e|integrate|utili[sz]e|embrace|"
    r"stick\s+to|stick\s+with|consistent\s+with|refer\s+to)\s+"
    r"(?:\w+ing\s+(?:on\s+|with\s+|to\s+)?)?(?:this|these|those|it|them|that)\b"
    r"(?!\s+(?:way|one|is|was|are|were|the|a|an|you|we)\b)"
    r"|" + cues.MAKE_IT_STANDING,
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
    if cues.rule_request_without_rule(text):
        return LessonCheck(
            False, "a request to write a rule down that does not say the rule (it is in the chat)"
        )
    leans = cues.LEANS_ON_CONVERSATION.search(text)
    if leans:
        return LessonCheck(
            False,
            f'it leans on the conversation ("{leans.group(0)}"): stored alone it names nothing '
            "to act on",
        )
    verdict = classify(text)
    if verdict.is_signal:
        return LessonCheck(True)
    if text.rstrip().endswith("?") or _QUESTION_START.match(text):
        return LessonCheck(False, "a question, not a rule")
    return LessonCheck(False, "a one-off request or remark, not a standing rule")
