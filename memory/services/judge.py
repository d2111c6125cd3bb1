"""The outcome judge: one LLM call per ended session decides, for each injected engram, whether
it was followed, contradicted, ignored or irrelevant, with one line of evidence.

Inputs (redacted by `llm_run`): the lessons judged, the session's observations, its transcript
deltas and its last assistant message, each part within its own share of the call's characters,
so the lessons are never cut whatever the size of the rest. A session with more than
`JUDGE_BATCH` engrams to judge takes one call per batch. Without a key, over budget or on any
failure the caller falls back to the deterministic heuristic for every engram without a verdict;
explicit agent or person feedback is never judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lib.llm import sizing
from memory.maths import learning
from memory.models import AgentSession, Engram, LearningSignal, Observation, Outcome
from memory.services.llm import LlmUnavailable, configured, llm_run

JUDGE_TASK = "memory.outcome_judge"
MAX_OBSERVATIONS = 60
MAX_OBSERVATION_CHARS = 400
MAX_DATA_CHARS = 24_000
# Engrams judged in one call: their lines fit LESSONS_CHARS at LESSON_LINE_MIN each, and the
# answer (one verdict each) stays a few thousand tokens.
JUDGE_BATCH = 25
# The lessons block aims at this many characters; it is never cut: with many lessons each line
# is shortened instead, between LESSON_LINE_MIN and LESSON_LINE_MAX characters.
LESSONS_CHARS = 9_000
LESSON_LINE_MIN = 160
LESSON_LINE_MAX = 600
LAST_MESSAGE_CHARS = 4_000
# How the characters left after the lessons are shared (a part that needs less leaves the rest
# to the others): what the agent did weighs most.
PART_WEIGHTS = {"tool_calls": 0.35, "transcript": 0.45, "last_message": 0.2}
EVIDENCE_CHARS = 300
# One verdict at its longest: the evidence, an id (engram ids are at most 40 characters), the
# result, and the JSON around them; and the answer's own framing.
VERDICT_CHARS = EVIDENCE_CHARS + 40 + 12 + 80
ANSWER_FRAMING_CHARS = 60
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
                    "evidence": {"type": "string", "maxLength": EVIDENCE_CHARS},
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


def schema_for(ids: Sequence[str]) -> dict[str, Any]:
    """SCHEMA narrowed to one call: ids among those judged, at most one verdict each."""
    verdicts = dict(SCHEMA["properties"]["verdicts"])
    items = dict(verdicts["items"])
    items["properties"] = {**items["properties"], "id": {"enum": list(ids)}}
    verdicts.update(items=items, maxItems=len(ids))
    return {**SCHEMA, "properties": {"verdicts": verdicts}}


def output_budget(count: int) -> int:
    """max_tokens for `count` verdicts, each at the longest the schema allows."""
    return sizing.output_tokens(chars=VERDICT_CHARS, items=count, base_chars=ANSWER_FRAMING_CHARS)


def _lessons(engrams: Sequence[Engram]) -> str:
    line_chars = min(LESSON_LINE_MAX, max(LESSON_LINE_MIN, LESSONS_CHARS // max(len(engrams), 1)))
    lines = []
    for engram in engrams:
        anti = engram.extra.get("anti_pattern", "") if isinstance(engram.extra, dict) else ""
        anti = anti if isinstance(anti, str) else ""
        line = f"{engram.engram_id} [{engram.polarity or 'do'}]: "
        line += " ".join(engram.statement.split())[: line_chars * 2 // 3]
        if anti:
            line += f" (avoid: {' '.join(anti.split())[: line_chars // 3]})"
        lines.append(line)
    return "\n".join(lines)


def _newest_lines(lines: Sequence[str], limit: int) -> str:
    """The newest lines whose total fits `limit` characters (whole lines; one too long is cut)."""
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        cost = len(line) + (1 if kept else 0)
        if used + cost > limit:
            if not kept and limit > 0:
                kept.append(line[:limit])
            break
        kept.append(line)
        used += cost
    return "\n".join(reversed(kept))


def _data(
    engrams: Sequence[Engram],
    *,
    tool_calls: Sequence[str],
    entries: Sequence[learning.Entry],
    last_message: str,
) -> str:
    lessons = _lessons(engrams)
    frame = (
        "<lessons>\n{lessons}\n</lessons>\n<tool_calls>\n{tool_calls}\n</tool_calls>\n"
        "<transcript>\n{transcript}\n</transcript>\n"
        "<last_assistant_message>\n{last_message}\n</last_assistant_message>"
    )
    fixed = len(frame.format(lessons=lessons, tool_calls="", transcript="", last_message=""))
    transcript_full = learning.render_entries(entries, limit=MAX_DATA_CHARS * 100)
    wants = {
        "tool_calls": len("\n".join(tool_calls)),
        "transcript": len(transcript_full),
        "last_message": min(len(last_message), LAST_MESSAGE_CHARS),
    }
    room = sizing.share(MAX_DATA_CHARS - fixed, wants, PART_WEIGHTS)
    calls = _newest_lines(tool_calls, room["tool_calls"])
    # Whole tool-call lines rarely fill their share exactly: the transcript takes what is left.
    transcript_room = min(wants["transcript"], room["transcript"] + room["tool_calls"] - len(calls))
    return frame.format(
        lessons=lessons,
        tool_calls=calls,
        transcript=transcript_full[len(transcript_full) - transcript_room :]
        if transcript_room > 0
        else "",
        last_message=last_message[: room["last_message"]],
    )


def _session_parts(session: AgentSession) -> tuple[list[str], list[learning.Entry]]:
    observations = Observation.objects.filter(session=session).order_by("-created_at", "-pk")[
        :MAX_OBSERVATIONS
    ]
    tool_calls = [
        f"{o.tool} ({'ok' if o.success else 'FAILED'}): {o.tool_input[:MAX_OBSERVATION_CHARS]}"
        for o in reversed(list(observations))
    ]
    deltas = LearningSignal.objects.filter(
        session=session, kind=LearningSignal.Kind.TRANSCRIPT
    ).order_by("offset_start")
    entries = [e for d in deltas for e in learning.parse_lines(d.text.splitlines())]
    return tool_calls, entries


def session_judge(*, session: AgentSession, engrams: Sequence[Engram]) -> dict[int, Verdict]:
    """LLM verdicts by engram pk for the engrams given; the engrams without one (none at all
    when the LLM is unavailable) are left to the heuristic. One call per `JUDGE_BATCH` engrams:
    one call for a session of ordinary size."""
    unique = list({e.pk: e for e in engrams}.values())
    if not unique or not configured():  # no key (the default): the heuristic, nothing to read
        return {}
    tool_calls, entries = _session_parts(session)
    verdicts: dict[int, Verdict] = {}
    for start in range(0, len(unique), JUDGE_BATCH):
        batch = unique[start : start + JUDGE_BATCH]
        ids = [e.engram_id for e in batch]
        try:
            answer = llm_run(
                owner=session.owner,
                task=JUDGE_TASK,
                schema=schema_for(ids),
                instructions=INSTRUCTIONS,
                data=_data(
                    batch,
                    tool_calls=tool_calls,
                    entries=entries,
                    last_message=session.last_assistant_message,
                ),
                max_tokens=output_budget(len(batch)),
            )
        except LlmUnavailable:
            break  # the rest go to the heuristic; no point asking again now
        by_id = {e.engram_id: e.pk for e in batch}
        for item in answer.get("verdicts", []):
            pk = by_id.get(str(item.get("id")))
            if pk is not None and pk not in verdicts:
                evidence = " ".join(str(item.get("evidence") or "").split())[:EVIDENCE_CHARS]
                verdicts[pk] = Verdict(str(item["result"]), evidence)
    return verdicts
