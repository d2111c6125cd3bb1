"""The LLM side of lesson extraction: the task's instructions and schema, a transcript delta cut
into calls, and the check that a lesson the model calls the user's (tier A or B) quotes the
user's own words.

`memory.services.learning.signal_extract` decides what each signal sends (`Run`s) and falls back
to the heuristic extractor for what the LLM did not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lib.llm import find_quote, sizing
from memory.maths import learning
from memory.models import Engram, LearningDraft
from memory.services.llm import llm_run

EXTRACT_TASK = "memory.learning_extract"
EXTRACT_INSTRUCTIONS = (
    "Extract the lessons a coding agent should remember from this material from a Claude Code "
    "session. Tier A: an explicit instruction or preference the user stated (always/never/from "
    "now on/we use X, not Y/I prefer …). Tier B: the user correcting the agent's previous "
    "action. Tier C: a lesson you infer from what happened (an error and its fix), not stated "
    "by the user. The statement is one short imperative sentence in the user's terms, never "
    "the whole prompt; anti_pattern is what to avoid (required for tier A when the user named "
    "it). For tier A and B, quote copies the user's own words the lesson comes from, exactly as "
    "written in the user's text (in a transcript: a USER line); a lesson whose quote is not "
    "found there is kept as tier C. Questions, task requests and pasted code or logs are not "
    "lessons. Return at most {limit} lessons, none if there are none."
)
EXTRACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "lessons": {
            "type": "array",
            "maxItems": learning.MAX_DRAFTS_PER_SESSION,
            "items": {
                "type": "object",
                "properties": {
                    "statement": {"type": "string", "minLength": 3, "maxLength": 500},
                    "type": {"enum": list(Engram.Type.values)},
                    "polarity": {"enum": ["do", "dont"]},
                    "tier": {"enum": ["A", "B", "C"]},
                    "quote": {"type": "string", "maxLength": 300},
                    "anti_pattern": {"type": "string", "maxLength": 300},
                    "tags": {
                        "type": "array",
                        "items": {"type": "string", "maxLength": 50},
                        "maxItems": 8,
                    },
                    "rationale": {"type": "string", "maxLength": 500},
                    "trigger_context": {"type": "string", "maxLength": 300},
                },
                "required": ["statement", "type", "polarity", "tier"],
            },
        }
    },
    "required": ["lessons"],
}
# One transcript delta is sent in calls of at most this many rendered characters (about 4,000
# tokens), at most MAX_EXTRACT_CALLS of them; the heuristic reads the entries past the last call
# sent. Only runs that hold something the user typed are sent: the rest holds no user's words.
EXTRACT_CHUNK_CHARS = 12_000
MAX_EXTRACT_CALLS = 4
MAX_LESSONS_PER_CALL = 8
# One lesson at its longest as the schema allows (every string at its maxLength, 8 tags, the
# enums and the JSON around them), for max_tokens: the answer is never cut by the output cap.
LESSON_JSON_CHARS = 500 + 300 + 300 + 8 * 55 + 500 + 300 + 40 + 200

# Tier A (an explicit instruction) and B (a correction) are the user's own words.
TIERS_OF_USER = frozenset({LearningDraft.Tier.EXPLICIT, LearningDraft.Tier.CORRECTION})


@dataclass(frozen=True)
class Run:
    """One extraction call's material: the text sent, the user's own words in it (where a tier
    A/B quote must be found), and the transcript entries it covers."""

    text: str
    users: tuple[str, ...] = ()
    entries: tuple[learning.Entry, ...] = ()


def transcript_runs(entries: Sequence[learning.Entry]) -> list[Run]:
    """Whole entries packed into runs of at most EXTRACT_CHUNK_CHARS rendered characters; runs
    with no user entry are left out (no user's words, no lesson of theirs)."""
    lines = [learning.render_entries([e], limit=EXTRACT_CHUNK_CHARS) for e in entries]
    runs = []
    for start, end in sizing.pack([len(line) for line in lines], EXTRACT_CHUNK_CHARS):
        covered = tuple(entries[start:end])
        users = tuple(e.text for e in covered if e.kind == "user")
        if users:
            runs.append(Run(text="\n".join(lines[start:end]), users=users, entries=covered))
    return runs


def schema_for(limit: int) -> dict[str, Any]:
    """EXTRACT_SCHEMA narrowed to one call: at most `limit` lessons."""
    lessons = {**EXTRACT_SCHEMA["properties"]["lessons"], "maxItems": limit}
    return {**EXTRACT_SCHEMA, "properties": {"lessons": lessons}}


def output_budget(lessons: int) -> int:
    """max_tokens for `lessons` lessons, each at the longest the schema allows."""
    return sizing.output_tokens(chars=LESSON_JSON_CHARS, items=lessons, base_chars=60)


def lessons_from_llm(
    *, owner: Any, run: Run, limit: int, inferred_only: bool = False
) -> list[learning.LessonDraft]:
    """One extraction call (raises LlmUnavailable). Tier A and B stand only when the lesson's
    quote (or, without one, its rationale) is found in the user's own words of the run, and the
    draft then keeps the words as the user wrote them; otherwise the lesson is tier C."""
    answer = llm_run(
        owner=owner,
        task=EXTRACT_TASK,
        schema=schema_for(limit),
        instructions=EXTRACT_INSTRUCTIONS.format(limit=limit),
        data=run.text,
        max_tokens=output_budget(limit),
    )
    drafts = []
    for item in answer.get("lessons", [])[:limit]:
        tier = str(item.get("tier") or "C")
        rationale = str(item.get("rationale") or "")
        if tier in TIERS_OF_USER:
            quoted = find_quote(str(item.get("quote") or rationale), run.users)
            if quoted is None:
                tier = learning.TIER_INFERRED  # not the user's words: an inference at most
            else:
                rationale = quoted
        if inferred_only:
            tier = learning.TIER_INFERRED  # nobody said it: inferred whatever the model says
        drafts.append(
            learning.LessonDraft(
                statement=str(item["statement"]).strip(),
                polarity=item.get("polarity") or "do",
                tier=tier,
                type=str(item.get("type") or "behavioral"),
                anti_pattern=str(item.get("anti_pattern") or ""),
                tags=tuple(str(t)[:50] for t in item.get("tags") or ()),
                rationale=rationale[: learning.MAX_QUOTE_CHARS],
                trigger_context=str(item.get("trigger_context") or ""),
            )
        )
    return drafts
