"""A rule the person's later prompts ask against: "Do not commit anything", then, in later
sessions, "commit and push".

A rule that rules out an action for the agent ("don't X", "never X") or keeps it for the
person ("let me X") is answered by a later prompt that asks the agent for that very action.
Once the person does that in more than one later session, the rule no longer says what they
want (or never did beyond one task): emphasising it would act against their later words, and
maintenance asks whether to retire it instead (`memory.services.maintenance`).

Pure Python (no Django).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from memory.maths.attribution import STOP_WORDS, TOKEN, matches
from memory.maths.learning.extract import negated_action
from memory.maths.learning.text import is_document, sentences

# Words between "don't" and the action that do not change it ("don't just commit").
_ADVERB = re.compile(r"^(?:just|ever|even|actually|really|blindly|automatically)\s+", re.I)
# "let me X", "I'll X myself": the action the person keeps for themselves.
_KEPT = re.compile(
    r"\blet\s+me\s+([a-z]{3,})\b(.*)|\b(?:i'?ll|i\s+will|i\s+want\s+to)\s+([a-z]{3,})\b(.*?)\s+myself\b",
    re.I,
)
# Verbs after "don't" / "let me" that name no action of the agent's: "don't forget to …" is a
# rule to do something, "let me know" asks to be told.
_NOT_AN_ACTION = frozenset(
    [
        "forget",
        "hesitate",
        "worry",
        "mind",
        "fail",
        "miss",
        "be",
        "have",
        "need",
        "assume",
        "let",
        "know",
        "see",
        "think",
        "check",
        "explain",
        "understand",
        "repeat",
        "ask",
    ]
)
# Objects that say nothing about which instances the rule covers: the verb alone decides.
_GENERIC_OBJECT = frozenset(
    [
        "anything",
        "everything",
        "something",
        "nothing",
        "it",
        "this",
        "that",
        "them",
        "things",
        "stuff",
        "any",
        "code",
        "changes",
        "change",
        "yet",
        "without",
    ]
)
# The end of the clause that holds the action's object.
_CLAUSE_END = re.compile(
    r"[,;:()]|\s[-\u2013\u2014]\s|\s(?:unless|until|because|since|as|when|while|if|but|and\s+instead)\s",
    re.I,
)
# A sentence that asks for an action: the verb first, after at most a few words of politeness
# or sequencing ("ok, commit and push", "can you commit everything", "now run it"), or after
# "and" / "then" inside the sentence ("fix it and commit").
_LEAD = (
    r"^(?:(?:ok(?:ay)?|yes|yep|yeah|great|good|cool|nice|perfect|thanks|now|then|so|and|also|"
    r"pls|please|just|go\s+ahead\s+and|let'?s|can\s+you|could\s+you|would\s+you|will\s+you|"
    r"can\s+u)[\s,!.]+){0,4}"
)
# Quoted text is someone else's words (an example prompt, a message to send), not a request.
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|`[^`\n]*`")
_NEGATION = re.compile(r"\b(?:don'?t|do\s+not|not|never|no|without|instead\s+of)\b", re.I)


MAX_OBJECT_TERMS = 4
JOINED_MAX_WORDS = 12


@dataclass(frozen=True)
class RuledOut:
    """The action a rule rules out for the agent: its verb and the key terms of its object
    (empty when the object is "anything", "it", …: the verb alone decides)."""

    verb: str
    object_terms: tuple[str, ...]


def ruled_out(statement: str) -> RuledOut | None:
    """The action `statement` rules out for the agent (`negated_action`: "don't X") or keeps
    for the person ("let me X", "I'll X myself"), or None."""
    phrase = _ADVERB.sub("", negated_action(statement))
    kept = None if phrase else _KEPT.search(statement)
    if kept:
        phrase = " ".join(kept.group(1, 2) if kept.group(1) else kept.group(3, 4))
    found = re.match(r"([a-z]{3,})\b(.*)", phrase, re.I | re.S)
    if not found:
        return None
    verb, rest = found.group(1), found.group(2)
    verb = verb.lower()
    if verb in _NOT_AN_ACTION:
        return None
    clause = _CLAUSE_END.split(rest, maxsplit=1)[0]
    terms: list[str] = []
    for token in TOKEN.findall(clause):
        word = token.strip(".:/-").lower()
        # short words count here: "a PR" is the object of "don't create a PR, just a commit"
        if len(word) > 1 and word not in STOP_WORDS | _GENERIC_OBJECT and word not in terms:
            terms.append(word)
    return RuledOut(verb, tuple(terms[:MAX_OBJECT_TERMS]))


@functools.lru_cache(maxsize=256)
def _requests(verb: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A request with `verb` first, and one with it after "and" / "then"."""
    word = re.escape(verb)
    first = re.compile(_LEAD + word + r"\b", re.I)
    return first, re.compile(r"\b(?:and|then|&)\s+(?:also\s+)?" + word + r"\b", re.I)


def asks_for(prompt: str, action: RuledOut) -> str:
    """The sentence of `prompt` that asks the agent for `action` ("" when none does): the verb
    in a request's place, not negated, with enough of the object's terms when the rule names
    an object. A pasted document (`text.is_document`) asks for nothing."""
    if is_document(prompt):
        return ""
    first, joined = _requests(action.verb)
    for sentence in sentences(prompt):
        text = _QUOTED.sub(" ", sentence).strip().strip("\"'`*> ")
        # "… and commit" asks only in a short request ("fix it and commit"); in a long sentence
        # it is more often part of a description ("prompts that do things and commit").
        short = len(text.split()) <= JOINED_MAX_WORDS
        found = first.search(text) or (joined.search(text) if short else None)
        if found is None or _NEGATION.search(text[: found.end()]):
            continue
        if action.object_terms and not matches(action.object_terms, text):
            continue
        return text
    return ""
