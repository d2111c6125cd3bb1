"""Maintenance's keyword proposals: the words to find a rule by ("broaden") or to exclude it by
("refine_keywords"), from the prompts of the sessions it was followed or judged irrelevant in
(Claude; fallback: the words most of those prompts share, `salient_words`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from memory.maths.attribution import key_terms
from memory.models import AgentSession, Engram, Injection, Outcome
from memory.services import llm

MAX_NEW_TAGS = 5
MAX_PROMPTS = 40  # prompts read for the keyword fallbacks
# Deliveries chosen by the prompt's words. Narrowing an engram's keywords changes only these: the
# brief carries the project's rules by scope, and a reminder by its trigger.
KEYWORD_BUCKETS = (
    Injection.Bucket.CONSTRAINT,
    Injection.Bucket.DIRECTIVE,
    Injection.Bucket.CONSIDER,
    Injection.Bucket.SPREAD,
)
KEYWORDS_SCHEMA = {
    "type": "object",
    "properties": {
        "keywords": {
            "type": "array",
            "items": {"type": "string", "minLength": 2, "maxLength": 40},
            "minItems": 1,
            "maxItems": MAX_NEW_TAGS,
        },
        "reason": {"type": "string", "maxLength": 300},
    },
    "required": ["keywords"],
}


def prompts_of(engram: Engram, result: str) -> list[str]:
    """The prompts to read keywords from.

    Irrelevant: the prompts that delivered the engram and were judged irrelevant (what to
    exclude). Followed: the prompts of the sessions it was followed in (where it applies, found
    or not), from the session's own prompt list, else the queries delivered in it."""
    outcomes = Outcome.objects.filter(engram=engram, result=result)
    if result == Outcome.Result.IRRELEVANT:
        return list(
            outcomes.filter(injection__bucket__in=KEYWORD_BUCKETS)
            .exclude(injection__query="")
            .order_by("-created_at")
            .values_list("injection__query", flat=True)[:MAX_PROMPTS]
        )
    sessions = [
        int(pk) for pk in outcomes.values_list("injection__session_id", flat=True)[:MAX_PROMPTS]
    ]
    found: list[str] = []
    for listed in AgentSession.objects.filter(pk__in=sessions).values_list("prompts", flat=True):
        found += [p for p in listed or [] if isinstance(p, str)]
    if not found:
        found = list(
            Injection.objects.filter(session_id__in=sessions)
            .exclude(query="")
            .order_by("-created_at")
            .values_list("query", flat=True)[:MAX_PROMPTS]
        )
    return [p for p in found if p.strip()][:MAX_PROMPTS]


def salient_words(
    prompts: Iterable[str], known: Iterable[str], limit: int = MAX_NEW_TAGS
) -> list[str]:
    """The words most prompts share that the engram does not already say (no LLM)."""
    seen = {word.lower() for text in known for word in key_terms(text, limit=50)}
    counts: Counter[str] = Counter()
    for prompt in prompts:  # each prompt's words once, in the order they were first met
        words = (w for w in key_terms(prompt, limit=50) if w not in seen and len(w) > 2)
        counts.update(list(dict.fromkeys(words)))
    return [word for word, n in counts.most_common() if n >= 2][:limit]


def keywords(owner: Any, engram: Engram, *, result: str, task: str) -> tuple[list[str], str]:
    prompts = prompts_of(engram, result)
    if not prompts:
        return [], llm.PRODUCER_HEURISTIC
    known = [engram.statement, *(engram.tags or [])]
    purpose = (
        "where this rule applies but is not being found: keywords to find it by"
        if result == "followed"
        else "where this rule keeps being shown but does not apply: keywords for the contexts to "
        "exclude"
    )
    try:
        answer = llm.llm_run(
            owner=owner,
            task=f"maintenance.{task}",
            schema=KEYWORDS_SCHEMA,
            instructions=(
                f"Rule for a coding agent: {engram.statement}\nThe data holds prompts {purpose}. "
                f"Reply with at most {MAX_NEW_TAGS} short lowercase keywords."
            ),
            data="\n".join(prompts),
        )
        words = [str(w).strip().lower() for w in answer["keywords"] if str(w).strip()]
        return words[:MAX_NEW_TAGS], llm.PRODUCER_LLM
    except llm.LlmUnavailable:
        return salient_words(prompts, known), llm.PRODUCER_HEURISTIC


def merged(tags: Iterable[str] | None, words: Iterable[str]) -> list[str]:
    out = list(tags or [])
    for word in words:
        if word not in out:
            out.append(word)
    return out


# --- applying -----------------------------------------------------------------------------
