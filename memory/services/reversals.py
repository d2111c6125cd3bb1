"""Later prompts that ask against a rule (`memory.maths.learning.reversal`), read from the
sessions the rule was delivered in: the evidence behind maintenance's "you later asked for
it" proposal."""

from __future__ import annotations

from memory.maths import learning
from memory.models import AgentSession, Engram, LearningDraft

# The person asked for the action the rule rules out in this many later sessions: once may be
# a deliberate exception, twice says the rule no longer holds.
ASKED_AGAINST_SESSIONS = 2
MAX_SESSIONS = 40  # the latest sessions the rule was delivered in that are read
QUOTE_CHARS = 200


def asked_against(engram: Engram) -> tuple[dict[str, str], ...]:
    """The person's requests for what `engram` rules out, one per later session it was
    delivered in (newest first), when there are ASKED_AGAINST_SESSIONS or more; else ().

    Only sessions other than those it was learned in count: a rule and a request in the same
    session are one task's instructions."""
    action = learning.ruled_out(engram.statement)
    if action is None:
        return ()
    learned = LearningDraft.objects.filter(engram=engram, session__isnull=False).values(
        "session_id"
    )
    sessions = (
        AgentSession.objects.filter(owner=engram.owner, injections__engram=engram)
        .exclude(pk__in=learned)
        .distinct()
        .order_by("-started_at", "-pk")
        .values_list("session_id", "prompts")[:MAX_SESSIONS]
    )
    found: list[dict[str, str]] = []
    for session_id, prompts in sessions:
        for prompt in prompts or []:
            said = learning.asks_for(prompt, action) if isinstance(prompt, str) else ""
            if said:
                found.append(
                    {
                        "session": session_id,
                        "result": "asked for it",
                        "evidence": said[:QUOTE_CHARS],
                    }
                )
                break
    return tuple(found) if len(found) >= ASKED_AGAINST_SESSIONS else ()


def asked_against_summary(found: tuple[dict[str, str], ...]) -> str:
    """The proposal's reason: how many later sessions asked for it, and what they said."""
    said = ", ".join(f"\u201c{quote['evidence'][:80]}\u201d" for quote in found[:3])
    return (
        f"You later asked for what it rules out, in {len(found)} sessions it was delivered in: "
        f"{said}. Retire it, unless those were exceptions."
    )
