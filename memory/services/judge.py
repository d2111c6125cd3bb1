"""The outcome judge: one LLM call per ended session decides, for each injected engram, whether
it was followed, contradicted, ignored or irrelevant, with one line of evidence.

Inputs (redacted by `llm_run`): the session's observations, its last assistant message and its
transcript deltas. Without a key, over budget or on any failure the caller falls back to the
deterministic heuristic; explicit agent or person feedback is never judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory.maths import learning
from memory.models import AgentSession, Engram, LearningSignal, Observation, Outcome
from memory.services.llm import LlmUnavailable, llm_run

JUDGE_TASK = "memory.outcome_judge"
MAX_OBSERVATIONS = 60
MAX_DATA_CHARS = 24_000
INSTRUCTIONS = (
    "You judge whether a coding agent followed the lessons it was given in one session. For "
    "each lesson (by its id) answer followed (the agent acted by it), contradicted (the agent "
    "did what it warns against), ignored (it applied but the agent did not act by it) or "
    "irrelevant (nothing in the session touched it), with one line of evidence quoting or "
    "naming what the agent did. Judge only the lessons listed."
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "result": {"enum": list(Outcome.Result.values)},
                    "evidence": {"type": "string", "maxLength": 300},
                },
                "required": ["id", "result", "evidence"],
            },
        }
    },
    "required": ["verdicts"],
}


@dataclass(frozen=True)
class Verdict:
    result: str
    evidence: str
    source: str = Outcome.Source.AUTO_LLM


def _data(session: AgentSession, engrams: Sequence[Engram]) -> str:
    parts = ["<lessons>"]
    for engram in engrams:
        anti = engram.extra.get("anti_pattern", "") if isinstance(engram.extra, dict) else ""
        line = f"{engram.engram_id} [{engram.polarity or 'do'}]: {engram.statement[:400]}"
        parts.append(line + (f" (avoid: {anti[:200]})" if anti else ""))
    parts.append("</lessons>\n<tool_calls>")
    observations = Observation.objects.filter(session=session).order_by("-created_at", "-pk")[
        :MAX_OBSERVATIONS
    ]
    for o in reversed(list(observations)):
        status = "ok" if o.success else "FAILED"
        parts.append(f"{o.tool} ({status}): {o.tool_input[:400]}")
    parts.append("</tool_calls>\n<transcript>")
    deltas = LearningSignal.objects.filter(
        session=session, kind=LearningSignal.Kind.TRANSCRIPT
    ).order_by("offset_start")
    entries = [e for d in deltas for e in learning.parse_lines(d.text.splitlines())]
    parts.append(learning.render_entries(entries, limit=MAX_DATA_CHARS // 2))
    parts.append("</transcript>\n<last_assistant_message>")
    parts.append(session.last_assistant_message[:4000])
    parts.append("</last_assistant_message>")
    return "\n".join(parts)[-MAX_DATA_CHARS:]


def session_judge(*, session: AgentSession, engrams: Sequence[Engram]) -> dict[int, Verdict]:
    """LLM verdicts by engram pk for the engrams given; {} when the LLM is unavailable (the
    caller then uses the heuristic). One call per session, whatever the number of engrams."""
    if not engrams:
        return {}
    try:
        answer = llm_run(
            owner=session.owner,
            task=JUDGE_TASK,
            schema=SCHEMA,
            instructions=INSTRUCTIONS,
            data=_data(session, engrams),
            max_tokens=200 + 80 * len(engrams),
        )
    except LlmUnavailable:
        return {}
    by_id = {e.engram_id: e.pk for e in engrams}
    verdicts: dict[int, Verdict] = {}
    for item in answer.get("verdicts", []):
        pk = by_id.get(str(item.get("id")))
        if pk is not None and pk not in verdicts:
            evidence = " ".join(str(item.get("evidence") or "").split())[:300]
            verdicts[pk] = Verdict(str(item["result"]), evidence)
    return verdicts
