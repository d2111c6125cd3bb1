"""A learning signal's drafts: the heuristic extractor or the LLM reads a prompt, a transcript
delta or an error → fix pair; a delta's entries leave out what was captured already and what the
agent itself wrote (a prompt it handed to another agent or session, remembered by digest at
PreToolUse: `AgentPrompt`). Used by `memory.services.learning.signal_extract`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q

from memory.maths import learning, textnorm
from memory.models import AgentPrompt, LearningDraft, LearningSignal
from memory.services import extraction
from memory.services.llm import PRODUCER_HEURISTIC, PRODUCER_LLM, LlmUnavailable, configured

# A signal keeps (and is digested on) this much of a prompt.
MAX_SIGNAL_CHARS = 8000
# A prompt the agent writes for another agent or session is remembered this long (the session
# it starts sends it within minutes); the daily job drops older ones.
AGENT_PROMPT_DAYS = 30


def person_quoted() -> Q:
    """The drafts that quote the person's words: from a prompt, or from a user entry of a
    transcript (not an error → fix pair, not the dialectic)."""
    return Q(signal__kind=LearningSignal.Kind.PROMPT) | Q(
        signal__kind=LearningSignal.Kind.TRANSCRIPT, entry_line__gt=0
    )


def quotes_the_person(engram: Any) -> bool:
    """Whether a captured engram came from the person's words (`person_quoted`)."""
    return LearningDraft.objects.filter(person_quoted(), engram=engram).exists()


# --- the agent's own prompts -------------------------------------------------------------------


def agent_prompts_record(*, owner: Any, tool_inputs: Iterable[Any], now: datetime) -> int:
    """Remember, by digest, the prompts the agent wrote in tool calls (`learning.agent_prompt`:
    a subagent's task, a spawned session's first prompt), so that one arriving as a session's
    user prompt is never taken as the person's words (`agent_written`). One insert, no read:
    it runs on PreToolUse. Returns how many were new."""
    digests = {
        textnorm.content_hash(prompt[:MAX_SIGNAL_CHARS])
        for prompt in map(learning.agent_prompt, tool_inputs)
        if prompt
    }
    if not digests:
        return 0
    made = AgentPrompt.objects.bulk_create(
        [AgentPrompt(owner=owner, digest=d, created_at=now) for d in sorted(digests)],
        ignore_conflicts=True,
    )
    return len(made)


def agent_prompts_prune(*, now: datetime) -> int:
    """The daily job: forget the agent's prompts older than AGENT_PROMPT_DAYS."""
    cutoff = now - timedelta(days=AGENT_PROMPT_DAYS)
    return AgentPrompt.objects.filter(created_at__lt=cutoff).delete()[0]


def agent_written(owner: Any, texts: Iterable[str], *, before: datetime | None = None) -> set[str]:
    """The digests among `texts` of prompts the agent wrote (recorded before `before`, when
    given), except the person's own prompts that the agent handed on word for word: a prompt
    captured from the person before stays theirs. Two queries."""
    digests = {textnorm.content_hash(t[:MAX_SIGNAL_CHARS]) for t in texts}
    recorded = AgentPrompt.objects.filter(owner=owner, digest__in=digests)
    if before is not None:
        recorded = recorded.filter(created_at__lt=before)
    found = set(recorded.values_list("digest", flat=True))
    if not found:
        return found
    return found - set(
        LearningSignal.objects.filter(
            owner=owner, kind=LearningSignal.Kind.PROMPT, digest__in=found
        ).values_list("digest", flat=True)
    )


# --- extraction ------------------------------------------------------------------------------


Sourced = tuple[learning.LessonDraft, learning.Entry | None]
# Earlier parts of a transcript read back for prompts still queued where they ended: a prompt
# waits for the running turn, which rarely spans more than a few reads (a subagent's Stop, a
# compaction).
MAX_CARRIED_READS = 8


def _heuristic(signal: LearningSignal, entries: Sequence[learning.Entry]) -> list[Sourced]:
    """The heuristic's drafts of a signal, each with the transcript entry it quotes (None for a
    prompt, whose signal is the quote, and for an error → fix pair)."""
    if signal.kind == LearningSignal.Kind.PROMPT:
        return [(draft, None) for draft in learning.extract(signal.text)]
    if signal.kind == LearningSignal.Kind.ERROR_FIX:
        statement = signal.text
        draft = learning.LessonDraft(
            statement=statement,
            polarity="do",
            tier=learning.TIER_INFERRED,
            type="procedural",
            # What the lesson warns about, for attribution; PreToolUse matches the command's
            # shape stored on the signal (`error_fix_of`), whatever the wording.
            anti_pattern=learning.failed_of(statement) or learning.anti_pattern_of(statement),
            tags=learning.tags_of(statement),
            rationale=statement,
        )
        return [(draft, None)]
    return list(learning.entry_drafts(entries))


def _entry_of(
    draft: learning.LessonDraft, entries: Sequence[learning.Entry]
) -> learning.Entry | None:
    """The user entry a draft of the LLM quotes (its rationale is then the user's words)."""
    quote = draft.rationale.strip()
    if not quote:
        return None
    return next((e for e in entries if e.kind == "user" and quote in e.text), None)


def _carried(signal: LearningSignal) -> list[str]:
    """The prompts the earlier parts of the session's transcript left queued (typed while the
    agent worked, not yet taken in where those parts ended): this part may hold their `remove`.
    Read back along the chain of parts that end where the next one starts, at most
    MAX_CARRIED_READS of them, oldest first, each keeping what the one before it carried."""
    if not signal.offset_start or signal.session_id is None:
        return []
    ends: dict[int, tuple[int, int]] = {}  # offset_end → (pk, offset_start), the newest per end
    for pk, start, end in (
        LearningSignal.objects.filter(
            session=signal.session_id,
            kind=LearningSignal.Kind.TRANSCRIPT,
            offset_end__lte=signal.offset_start,
        )
        .exclude(pk=signal.pk)
        .order_by("pk")
        .values_list("pk", "offset_start", "offset_end")
    ):
        ends[end] = (pk, start)
    chain: list[int] = []
    start = signal.offset_start
    while start in ends and len(chain) < MAX_CARRIED_READS and ends[start][0] not in chain:
        pk, start = ends[start]
        chain.append(pk)
    texts = LearningSignal.objects.in_bulk(chain)
    waiting: list[str] = []
    for pk in reversed(chain):
        lines = [*waiting, *texts[pk].text.split("\n")]
        waiting = [str(line) for line in learning.still_queued(lines)]
    return waiting


def transcript_entries(signal: LearningSignal) -> list[learning.Entry]:
    """A transcript delta's entries without the prompts UserPromptSubmit already captured as
    signals of the session (they are extracted from their own signal, never twice), and
    without the entries a resumed or forked session copied from an earlier one: Claude Code
    copies the history into the new session's file with each entry's uuid kept, and the
    prompts in it were not typed again, so they are no recurrence."""
    entries = learning.parse_lines(_carried(signal) + signal.text.split("\n"))
    typed = [e for e in entries if e.kind == "user"]
    # The words of a prompt the agent wrote in a tool call (a subagent's task, a session it
    # spawned) are the agent's: recorded before this delta (PreToolUse, another transcript),
    # or earlier in it. An entry before the tool call is the person's, handed on.
    written = agent_written(signal.owner, [e.text for e in typed], before=signal.created_at)
    written |= {
        textnorm.content_hash(e.text[:MAX_SIGNAL_CHARS]) for e in learning.handed_back(entries)
    }
    digests = {textnorm.content_hash(e.text[:MAX_SIGNAL_CHARS]) for e in typed}
    # This session's prompts, and another session's prompt copied here (its signal has no
    # uuid; typed anew, it would be a prompt of this session): both are captured already.
    captured = set(
        LearningSignal.objects.filter(
            owner=signal.owner_id, kind=LearningSignal.Kind.PROMPT, digest__in=digests
        ).values_list("digest", flat=True)
    )
    # A transcript read again, or an entry learned from in another session: learned once.
    learned = set(
        LearningDraft.objects.filter(
            owner=signal.owner_id, entry_uuid__in=[e.uuid for e in typed if e.uuid]
        ).values_list("entry_uuid", flat=True)
    )
    return [
        entry
        for entry in entries
        if entry.kind != "user"
        or (
            textnorm.content_hash(entry.text[:MAX_SIGNAL_CHARS]) not in captured | written
            and not (entry.uuid and entry.uuid in learned)
        )
    ]


def _llm_text(signal: LearningSignal, entries: Sequence[learning.Entry]) -> list[extraction.Run]:
    """What the LLM reads of a signal, call by call: a prompt in one call, all of it the user's
    words; an error → fix pair in one call with no user's words; a transcript delta (without
    the prompts already captured) in runs of whole entries, only those holding a user entry."""
    if signal.kind == LearningSignal.Kind.PROMPT:
        return [extraction.Run(text=signal.text, users=(signal.text,))]
    if signal.kind != LearningSignal.Kind.TRANSCRIPT:
        return [extraction.Run(text=signal.text)]
    return extraction.transcript_runs(list(entries))


def extract(
    signal: LearningSignal, limit: int, entries: Sequence[learning.Entry]
) -> tuple[list[tuple[Sourced, str]], str]:
    """The drafts of a signal (each with the entry it quotes) with the producer of each, and
    the signal's producer; `entries` are a transcript delta's (`transcript_entries`, read once
    per signal), empty for other kinds.

    The LLM reads a transcript delta in up to MAX_EXTRACT_CALLS calls; when it stops (the
    budget, the breaker, a failure) or the calls run out, the heuristic reads the entries it
    did not. When no call succeeds, the heuristic decides alone, as without a key."""
    if not configured():  # the default: no key, nothing to prepare for a call
        return [
            (d, PRODUCER_HEURISTIC) for d in _heuristic(signal, entries)[:limit]
        ], PRODUCER_HEURISTIC
    runs = _llm_text(signal, entries)
    drafts: list[tuple[Sourced, str]] = []
    sent = 0
    for run in runs[: extraction.MAX_EXTRACT_CALLS]:
        if len(drafts) >= limit:
            break
        try:
            found = extraction.lessons_from_llm(
                owner=signal.owner,
                run=run,
                limit=min(limit - len(drafts), extraction.MAX_LESSONS_PER_CALL),
                inferred_only=signal.kind == LearningSignal.Kind.ERROR_FIX,
            )
        except LlmUnavailable:
            break
        drafts += [((draft, _entry_of(draft, run.entries)), PRODUCER_LLM) for draft in found]
        sent += 1
    if not sent:
        return [
            (d, PRODUCER_HEURISTIC) for d in _heuristic(signal, entries)[:limit]
        ], PRODUCER_HEURISTIC
    unread = [entry for run in runs[sent:] for entry in run.entries]
    rest = list(learning.entry_drafts(unread))[: max(limit - len(drafts), 0)]
    return drafts + [(d, PRODUCER_HEURISTIC) for d in rest], PRODUCER_LLM
