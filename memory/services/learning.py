"""Session learning: capture signals from prompts, transcripts and error → fix pairs, extract
lessons (LLM with a schema, or the heuristic extractor) and write them through the one write
path, with supersession of older variants and the noise caps of DESIGN "Session learning".

Only `prompt_capture` and `transcript_attach` run on a hook's request path (a classifier and a
redacted insert); reading transcripts, extraction and the LLM run in Celery tasks.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Count, Window
from django.utils import timezone

from memory import scanner
from memory.errors import DomainError, InvalidInput, NotFound
from memory.maths import delivery as delivery_maths
from memory.maths import learning, textnorm
from memory.models import (
    AgentSession,
    Engram,
    Event,
    LearningDraft,
    LearningSignal,
    Observation,
    OwnerSettings,
    ReviewItem,
)
from memory.services import extraction, localfiles, supersession
from memory.services.drafting import (
    MAX_SIGNAL_CHARS,
    agent_prompts_record,
    agent_written,
    extract,
    person_quoted,
    transcript_entries,
)
from memory.services.engrams import engram_learn
from memory.services.events import event_record
from memory.services.jobs import job_enqueue
from memory.services.llm import PRODUCER_HEURISTIC
from memory.services.review_queue import text_answered
from memory.services.supersession import engram_restore
from memory.services.supersession import review_kinds_register as review_kinds_register

# One Stop's transcript delta: bounded so a huge session is taken in several passes.
MAX_DELTA_BYTES = 1024 * 1024
MAX_ATTACHED_LINES = 5000
ACTOR = "learning"
TIERS_OF_USER = extraction.TIERS_OF_USER  # tier A and B: the user's own words
# Draft results that count against the per-session cap (a repeat adds no new lesson).
COUNTED = ("created", "merge_proposed", "contradiction_flagged", "superseded", "review")
LIVE_REVIEW = (ReviewItem.State.PENDING, ReviewItem.State.DEFERRED)
FORGET = "forget"  # the label of a prompt that asks to retire one of the person's rules

# The LLM side of extraction lives in `extraction`; these names stay importable from here.
EXTRACT_TASK = extraction.EXTRACT_TASK
EXTRACT_SCHEMA = extraction.EXTRACT_SCHEMA


def _storable(text: str) -> str:
    """Text a database column takes: no NUL (PostgreSQL refuses it), no lone surrogate (a JSON
    escape like "\\ud800" decodes to one, and UTF-8 cannot encode it)."""
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def review_all(owner: Any) -> bool:
    return bool(
        OwnerSettings.objects.filter(owner=owner)
        .values_list("learning_review_all", flat=True)
        .first()
    )


def settings_update(*, owner: Any, review_all: bool) -> OwnerSettings:
    """Set whether every captured lesson waits in review (the user's own words included)."""
    if not isinstance(review_all, bool):
        raise InvalidInput("review_all", "must be true or false")
    obj = OwnerSettings.for_owner(owner)
    if obj.learning_review_all != review_all:
        obj.learning_review_all = review_all
        obj.save(update_fields=["learning_review_all"])
    return obj


# --- capture (request path) ------------------------------------------------------------------


def prompt_capture(
    *,
    owner: Any,
    session: AgentSession | None,
    scope: str,
    prompt: str,
    now: datetime,
    origin: Any = None,
) -> LearningSignal | None:
    """UserPromptSubmit: store the prompt (redacted) as a signal when the classifier fires.

    The classifier is regular expressions only (< 1 ms); a prompt seen before in the session
    is not stored twice. Extraction is queued for after the commit. Only the person's words
    are read: a prompt that a program sent (`origin`, the hook's `source`, other than `user`),
    a slash command or a compaction summary is none; reminders and hook output are cut out.
    """
    if origin not in (None, "", "user"):
        return None
    prompt = learning.user_words(prompt[: MAX_SIGNAL_CHARS * 4])
    if learning.forget_request(prompt) is not None:
        label = FORGET  # "forget that rule": retires the rule it names
    else:
        verdict = learning.classify(prompt)
        if not verdict.is_signal:
            return None
        label = verdict.kind
    if agent_written(owner, [prompt]):
        return None  # a session the agent started with its own prompt (a spawned task)
    text, found = scanner.redact_secrets(prompt[:MAX_SIGNAL_CHARS])
    digest = textnorm.content_hash(text)
    if (
        session is not None
        and LearningSignal.objects.filter(session=session, digest=digest).exists()
    ):
        return None
    signal = LearningSignal.objects.create(
        owner=owner,
        session=session,
        kind=LearningSignal.Kind.PROMPT,
        label=label,
        text=text,
        digest=digest,
        redacted=sorted(set(found)),
        scope=session.scope if session else scope,
        created_at=now,
    )
    job_enqueue("engram.learning_extract", signal.pk)
    return signal


def _delta_signal(
    *, session: AgentSession, lines: Sequence[bytes], start: int, end: int, now: datetime
) -> LearningSignal | None:
    """Store the transcript lines between byte offsets start and end and move the session's
    offset there; None (and nothing stored) when another capture already moved it."""
    with transaction.atomic():
        moved = AgentSession.objects.filter(pk=session.pk, transcript_offset=start).update(
            transcript_offset=end
        )
        if not moved:
            return None
        session.transcript_offset = end
        raw = _storable(b"\n".join(lines).decode("utf-8", errors="replace"))
        if not raw.strip():
            return None
        text, found = scanner.redact_secrets(raw)
        return LearningSignal.objects.create(
            owner=session.owner,
            session=session,
            kind=LearningSignal.Kind.TRANSCRIPT,
            text=text,
            digest=hashlib.sha256(text.encode()).hexdigest(),
            redacted=sorted(set(found)),
            scope=session.scope,
            offset_start=start,
            offset_end=end,
            created_at=now,
        )


def transcript_attach(
    *, session: AgentSession, attached: Any, transcript_path: Any, now: datetime
) -> LearningSignal | None:
    """Stop / PreCompact / SessionEnd: remember the transcript's path and store the lines that
    `engram-hook` attached (`{"offset": byte offset of the first line, "lines": [...]}`) past
    the session's offset; then queue the capture task. A replayed Stop stores nothing twice."""
    path_ok = isinstance(transcript_path, str) and 0 < len(transcript_path) <= 1000
    if path_ok and session.transcript_path != transcript_path:
        AgentSession.objects.filter(pk=session.pk).update(transcript_path=transcript_path)
        session.transcript_path = str(transcript_path)
    signal = None
    if isinstance(attached, Mapping):
        offset, lines = attached.get("offset"), attached.get("lines")
        if isinstance(offset, int) and offset >= 0 and isinstance(lines, list):
            signal = _attached_delta(session, offset, lines[:MAX_ATTACHED_LINES], now)
    job_enqueue("engram.learning_capture", session.pk)
    return signal


def _rewind(session: AgentSession) -> None:
    """A transcript rewritten shorter than the offset: read it again from its start. Entries
    already learned from are skipped by their uuid (`drafting.transcript_entries`), so nothing is
    learned twice and nothing of the new file is lost."""
    AgentSession.objects.filter(pk=session.pk, transcript_offset=session.transcript_offset).update(
        transcript_offset=0
    )
    session.transcript_offset = 0


def _attached_delta(
    session: AgentSession, offset: int, lines: list[Any], now: datetime
) -> LearningSignal | None:
    current = int(
        AgentSession.objects.filter(pk=session.pk).values_list("transcript_offset", flat=True)[0]
    )
    size = sum(len(line.encode("utf-8", "replace")) + 1 for line in lines if isinstance(line, str))
    if offset == 0 and 0 < size < current:
        session.transcript_offset = current
        _rewind(session)  # engram-hook found the file shorter than its offset and sent it whole
        current = 0
    position = offset
    keep: list[bytes] = []
    start = None
    for line in lines:
        if not isinstance(line, str):
            return None
        data = line.rstrip("\n").encode("utf-8", "replace")
        end = position + len(data) + 1
        if end > current:
            if position < current:
                return None  # lines that do not fall on the stored offset: a different file
            if start is None:
                start = position
            keep.append(data)
        position = end
    if start is None or start != current:
        return None
    return _delta_signal(session=session, lines=keep, start=start, end=position, now=now)


# --- capture (task) --------------------------------------------------------------------------


def _read_delta(session: AgentSession, now: datetime) -> LearningSignal | None:
    """Read the transcript from the session's offset when this server may and can: a regular
    file under ENGRAM_TRANSCRIPT_DIRS, within the size cap. Lines that are not JSON objects are
    skipped (their bytes are passed, never stored); a refusal is noted on the session."""
    path = session.transcript_path
    if not path:
        return None
    try:
        real = localfiles.allowed_path(path, localfiles.transcript_dirs(), "ENGRAM_TRANSCRIPT_DIRS")
        size = localfiles.transcript_size(path)
        if size is not None and session.transcript_offset > size:
            _rewind(session)  # rewritten shorter: read it again from its start
        data = localfiles.read_regular(
            real,
            offset=session.transcript_offset,
            limit=MAX_DELTA_BYTES,
            max_size=localfiles.max_transcript_bytes(),
        )
    except localfiles.ReadRefused as refused:
        localfiles.refusal_record(
            session=session, what=localfiles.TRANSCRIPT, reason=refused.reason, now=now
        )
        return None
    lines, used = learning.split_complete(data)
    if not used:
        return None
    kept = [line for line in lines if _is_json_object(line)]
    if len(kept) < len([line for line in lines if line.strip()]):
        localfiles.refusal_record(
            session=session,
            what=localfiles.TRANSCRIPT,
            reason="lines that are not JSON objects were skipped",
            now=now,
        )
    start = session.transcript_offset
    return _delta_signal(session=session, lines=kept, start=start, end=start + used, now=now)


def _is_json_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError, deep nesting
        return False


def session_capture(*, session_pk: int, now: datetime | None = None) -> dict[str, int]:
    """Task: read the transcript delta (when readable), pair errors with fixes, and extract
    every pending signal of the session. Idempotent: offsets and signal states make a second
    run find nothing new."""
    now = now or timezone.now()
    session = AgentSession.objects.select_related("owner").filter(pk=session_pk).first()
    if session is None:
        return {"signals": 0, "drafts": 0}
    _read_delta(session, now)
    fixes_capture(session=session, now=now)
    pending = list(
        LearningSignal.objects.filter(session=session, state=LearningSignal.State.PENDING)
        .order_by("created_at", "pk")
        .values_list("pk", flat=True)
    )
    drafts = sum(signal_extract(signal_pk=pk, now=now) for pk in pending)
    return {"signals": len(pending), "drafts": drafts}


def fixes_capture(*, session: AgentSession, now: datetime) -> int:
    """Error → fix: a tool error followed by a successful similar call becomes a tier-C signal
    holding one general lesson per recurring error. The error's key is the signal's digest:
    once per session, and a later session meeting the same error words the lesson as it was
    first worded, so the write path counts it as a recurrence instead of a new candidate."""
    calls = [
        learning.Call(tool=o.tool, tool_input=o.tool_input, success=o.success, output=o.tool_output)
        for o in Observation.objects.filter(session=session).order_by("created_at", "pk")
    ]
    made = 0
    for fix in learning.error_fixes(calls):
        digest = hashlib.sha256(fix.key.encode("utf-8", "replace")).hexdigest()
        if LearningSignal.objects.filter(session=session, digest=digest).exists():
            continue
        first = (
            LearningSignal.objects.filter(
                owner=session.owner,
                scope=session.scope,
                kind=LearningSignal.Kind.ERROR_FIX,
                digest=digest,
            )
            .order_by("pk")
            .values_list("text", flat=True)
            .first()
        )
        LearningSignal.objects.create(
            owner=session.owner,
            session=session,
            kind=LearningSignal.Kind.ERROR_FIX,
            label="error_fix",
            text=first or fix.statement,
            digest=digest,
            fix={"tool": fix.tool, "failed": fix.failed_shape, "fixed": fix.fixed_shape},
            scope=session.scope,
            created_at=now,
        )
        made += 1
    return made


def error_fix_of(signal: LearningSignal) -> dict[str, str]:
    """The shapes an error → fix signal stored (tool, failed, fixed), or {} (another kind of
    signal, or one captured before they were stored)."""
    data = signal.fix if signal.kind == LearningSignal.Kind.ERROR_FIX else None
    if not isinstance(data, dict) or not isinstance(data.get("failed"), str):
        return {}
    if not data["failed"].strip():
        return {}
    return {name: str(data.get(name) or "") for name in ("tool", "failed", "fixed")}


def signal_extract(*, signal_pk: int, now: datetime | None = None) -> int:
    """Task: turn one pending signal into drafts and write them; returns the drafts written.

    The claim (state → done) and the drafts commit together, so a crash leaves the signal
    pending for the redelivered task, and a second run finds it done.
    """
    now = now or timezone.now()
    signal = (
        LearningSignal.objects.select_related("owner", "session")
        .filter(pk=signal_pk, state=LearningSignal.State.PENDING)
        .first()
    )
    if signal is None:
        return 0
    if signal.label == FORGET and signal.kind == LearningSignal.Kind.PROMPT:
        with transaction.atomic():
            if _claim(signal, PRODUCER_HEURISTIC, now):
                supersession.rule_forget(signal=signal, now=now)
        return 0
    limit = (
        learning.MAX_DRAFTS_PER_PROMPT
        if signal.kind == LearningSignal.Kind.PROMPT
        else learning.MAX_DRAFTS_PER_SESSION
    )
    entries = transcript_entries(signal) if signal.kind == LearningSignal.Kind.TRANSCRIPT else []
    drafts, producer = extract(signal, limit, entries)
    # Never a lesson holding a credential-like token (the LLM may repeat "API_KEY=XXXX…", which
    # the scanner leaves as a placeholder): it would be injected into every session's brief.
    drafts = [
        item
        for item in drafts
        if not learning.holds_credential(f"{item[0][0].statement} {item[0][0].anti_pattern}")
    ]
    with transaction.atomic():
        if not _claim(signal, producer, now):
            return 0
        forced = review_all(signal.owner)
        for (draft, entry), made_by in drafts:
            draft_write(
                signal=signal, draft=draft, producer=made_by, forced=forced, now=now, entry=entry
            )
        if signal.kind == LearningSignal.Kind.TRANSCRIPT:
            drafted = {entry.uuid for (_, entry), _ in drafts if entry is not None and entry.uuid}
            # The agent's prompts in this delta, for the sessions they start (an import's,
            # whose tool calls reached no PreToolUse), recorded with the drafts.
            agent_prompts_record(
                owner=signal.owner,
                tool_inputs=[e.tool_input for e in entries if e.kind == "tool_use"],
                now=now,
            )
            for entry in entries:
                if entry.uuid in drafted or entry.kind != "user":
                    continue  # an entry learned from now is no request to forget
                if learning.forget_request(entry.text) is not None:
                    supersession.rule_forget(signal=signal, now=now, entry=entry)
    return len(drafts)


def _claim(signal: LearningSignal, producer: str, now: datetime) -> bool:
    """Mark a pending signal done (in the caller's transaction); False if another run did."""
    return bool(
        LearningSignal.objects.filter(pk=signal.pk, state=LearningSignal.State.PENDING).update(
            state=LearningSignal.State.DONE, producer=producer, processed_at=now
        )
    )


def _session_count(session_id: int | None) -> int:
    if session_id is None:
        return 0
    return LearningDraft.objects.filter(session_id=session_id, result__in=COUNTED).count()


def draft_write(
    *,
    signal: LearningSignal,
    draft: learning.LessonDraft,
    producer: str,
    forced: bool,
    now: datetime,
    entry: learning.Entry | None = None,
) -> LearningDraft:
    """One draft through the write path (scan, recurrence, merge, contradiction), then the
    learning rules: tier A/B active with source `user`, C a candidate; review forced by the
    owner's setting or past 20 drafts in the session; a user draft supersedes its variants.
    The draft keeps where its quote was said: the prompt (its signal) or the transcript
    `entry` (uuid and line)."""
    owner = signal.owner
    tier = draft.tier if draft.tier in LearningDraft.Tier.values else learning.TIER_INFERRED
    user_words = tier in TIERS_OF_USER
    row = LearningDraft(
        owner=owner,
        signal=signal,
        session_id=signal.session_id,
        statement=draft.statement[:4000],
        tier=tier,
        polarity=draft.polarity or "",
        anti_pattern=draft.anti_pattern[:300],
        quote=draft.rationale[: learning.MAX_QUOTE_CHARS],
        entry_uuid=entry.uuid if entry else "",
        entry_line=max(entry.line, 0) if entry else 0,
        producer=producer,
        created_at=now,
    )
    forced = forced or _session_count(signal.session_id) >= learning.MAX_DRAFTS_PER_SESSION
    answered = text_answered(owner=owner, statement=draft.statement)
    if answered:  # a person answered this text "one-off" or "wrong" in review
        row.result, row.error = "rejected", f"answered_{answered}: not captured again"
        row.save()
        return row
    try:
        with transaction.atomic():
            result = engram_learn(
                owner=owner,
                actor=ACTOR,
                now=now,
                statement=draft.statement,
                scope=signal.scope,
                type=draft.type if draft.type in Engram.Type.values else "behavioral",
                polarity=draft.polarity if draft.polarity in ("do", "dont") else None,
                rationale=row.quote,
                tags=list(draft.tags),
                trigger_context=draft.trigger_context,
                source="user" if user_words else "agent",
            )
    except DomainError as exc:
        row.result, row.error = "rejected", f"{exc.code}: {exc}"[:300]
        row.save()
        return row
    engram = result.engram
    row.engram = engram
    row.result = result.outcome
    if result.outcome in ("recurrence", "merge_proposed") and not forced:
        promoted = _promote_on_recurrence(row, result, user_words=_said_by_user(signal, entry))
        if promoted is not None:
            engram = row.engram = promoted
            row.result = "recurrence"
    fix = error_fix_of(signal)
    if (
        row.result == "recurrence"
        and fix
        and not (engram.extra or {}).get(delivery_maths.ERROR_FIX_KEY)
    ):
        # A lesson captured before the shapes were stored learns them when it recurs.
        extra = {**(engram.extra or {}), delivery_maths.ERROR_FIX_KEY: fix}
        Engram.objects.filter(pk=engram.pk).update(extra=extra)
        engram.extra = extra
    if row.result != "recurrence":
        extra = dict(engram.extra or {})
        if draft.anti_pattern:
            extra["anti_pattern"] = draft.anti_pattern[:300]
        if fix:
            extra[delivery_maths.ERROR_FIX_KEY] = fix
        extra["learning"] = {
            "tier": tier,
            "signal": signal.pk,
            "origin": signal.kind,
            "session": signal.session.session_id if signal.session else "",
            "producer": producer,
            "quote": row.quote,
            "entry": row.entry_uuid,
            "line": row.entry_line,
        }
        Engram.objects.filter(pk=engram.pk).update(extra=extra)
        engram.extra = extra
        if forced and engram.status == Engram.Status.ACTIVE:
            _to_review(engram, now)
            row.result = "review"
        elif user_words and not forced:
            olds, maybe = supersession.variants_of(engram, result.related)
            for old in olds:
                supersession.supersede(old=old, new=engram, now=now)
            for old in maybe:
                supersession.ask_replaces(old=old, new=engram, now=now)
            if olds:
                row.supersedes, row.result = olds[0], "superseded"
    row.save()
    if row.result != "recurrence":
        event_record(
            owner=owner,
            event=Event.LESSON_CAPTURED,
            engram=engram,
            actor=ACTOR,
            data={
                "tier": tier,
                "result": row.result,
                "producer": producer,
                "session": row.session.session_id if row.session else "",
            },
            when=now,
        )
    return row


def _said_by_user(signal: LearningSignal, entry: learning.Entry | None) -> bool:
    """The draft quotes the person: a prompt, or a user entry of a transcript."""
    if signal.kind == LearningSignal.Kind.PROMPT:
        return True
    return signal.kind == LearningSignal.Kind.TRANSCRIPT and entry is not None


def _promote_on_recurrence(row: LearningDraft, result: Any, *, user_words: bool) -> Engram | None:
    """DESIGN v3: a candidate the person states again in another session of the same scope
    becomes active (event `engram_promoted`, reason recurrence); so does one they now state as
    an explicit rule (tier A/B). The same statement (content hash) or a near-duplicate (the
    write path's merge proposal, cosine ≥ 0.92) counts; the near-duplicate copy is retired in
    favour of the rule it repeats. Returns the promoted engram, or None."""
    if not user_words:
        return None
    engram = result.engram
    if result.outcome == "merge_proposed":
        target_id = next((r["id"] for r in result.related if r["relation"] == "merge"), None)
        target = (
            Engram.objects.for_owner(row.owner)
            .filter(engram_id=target_id, status=Engram.Status.CANDIDATE)
            .first()
        )
        if target is None:
            return None
        duplicate, engram = engram, target
    else:
        duplicate = None
    if engram.status != Engram.Status.CANDIDATE:
        return None
    earlier = LearningDraft.objects.filter(engram=engram).exclude(session_id=row.session_id)
    earlier_by_user = earlier.filter(person_quoted())
    if row.tier not in TIERS_OF_USER and not earlier_by_user.exists():
        return None
    now = row.created_at
    if duplicate is not None:
        duplicate.retire(now=now)
        ReviewItem.objects.filter(engram=duplicate, state__in=LIVE_REVIEW).update(
            state=ReviewItem.State.DONE, decision="recurrence", decided_at=now
        )
    engram.activate(now=now)
    Engram.objects.filter(pk=engram.pk).update(source="user")
    engram.source = "user"
    ReviewItem.objects.filter(
        engram=engram, kind=ReviewItem.Kind.CANDIDATE, state__in=LIVE_REVIEW
    ).update(state=ReviewItem.State.DONE, decision="promoted", decided_at=now)
    event_record(
        owner=row.owner,
        event=Event.ENGRAM_PROMOTED,
        engram=engram,
        actor=ACTOR,
        data={"reason": "recurrence", "session": row.session.session_id if row.session else ""},
        when=now,
    )
    return engram


def _to_review(engram: Engram, now: datetime) -> None:
    Engram.objects.filter(pk=engram.pk).update(status=Engram.Status.CANDIDATE, updated_at=now)
    engram.status = Engram.Status.CANDIDATE
    if not ReviewItem.objects.filter(
        engram=engram, kind=ReviewItem.Kind.CANDIDATE, state__in=LIVE_REVIEW
    ).exists():
        ReviewItem.objects.create(
            owner=engram.owner,
            kind=ReviewItem.Kind.CANDIDATE,
            engram=engram,
            reason="Captured from a session; waiting for review",
            created_at=now,
        )


def lesson_undo(*, owner: Any, engram_id: str, actor: str = "person") -> Engram:
    """Undo a captured lesson in one step: retire it (event `lesson_undone`) and bring back the
    version it superseded, if any."""
    engram = Engram.objects.for_owner(owner).filter(engram_id=engram_id).first()
    if engram is None:
        raise NotFound(f"Engram {engram_id}")
    now = timezone.now()
    with transaction.atomic():
        drafts = LearningDraft.objects.filter(owner=owner, engram=engram, undone_at__isnull=True)
        previous = engram.retire(now=now)
        restored = []
        for old in Engram.objects.filter(superseded_by=engram):
            engram_restore(owner=owner, engram=old, actor=actor, now=now)
            restored.append(old.engram_id)
        ReviewItem.objects.filter(
            other=engram, kind=ReviewItem.Kind.SUPERSEDED, state__in=LIVE_REVIEW
        ).update(state=ReviewItem.State.DONE, decision="undone", decided_at=now)
        drafts.update(undone_at=now)
        event_record(
            owner=owner,
            event=Event.LESSON_UNDONE,
            engram=engram,
            actor=actor,
            data={"from": previous or engram.status, "restored": restored},
            when=now,
        )
    return engram


# --- reads -----------------------------------------------------------------------------------


def _day_start(now: datetime | None) -> datetime:
    return (now or timezone.now()).replace(hour=0, minute=0, second=0, microsecond=0)


def captured_today(*, owner: Any, now: datetime | None = None) -> int:
    """Lessons captured since 00:00 (new, superseding or waiting in review): one query."""
    return LearningDraft.objects.filter(
        owner=owner, created_at__gte=_day_start(now), result__in=COUNTED
    ).count()


def signals_today(*, owner: Any, now: datetime | None = None) -> int:
    return LearningSignal.objects.filter(owner=owner, created_at__gte=_day_start(now)).count()


def drafts_for(
    *, owner: Any, session: AgentSession | None = None, limit: int = 50
) -> list[LearningDraft]:
    qs = LearningDraft.objects.filter(owner=owner)
    if session is not None:
        qs = qs.filter(session=session)
    return list(
        qs.select_related("engram", "supersedes", "session").order_by("-created_at", "-pk")[:limit]
    )


def provenance_context(engram: Engram) -> dict[str, Any]:
    """The engram page's "where it came from": the first captured draft that made it (its quote,
    prompt or transcript entry, session) and how many later drafts stated it again. One query."""
    first = (
        LearningDraft.objects.filter(engram=engram)
        .select_related("signal", "session")
        .annotate(drafts_total=Window(Count("pk")))
        .order_by("created_at", "pk")
        .first()
    )
    if first is None:
        return {"provenance": None, "restatements": 0}
    uuid = first.entry_uuid
    said = (
        "Your reason for refusing a tool call"
        if uuid.endswith(learning.REFUSAL_UUID)
        else "A message you typed while the agent worked"
        if uuid.startswith(learning.QUEUED_UUID)
        else "Your message"
    )
    return {
        "provenance": first,
        "said": said,
        "restatements": int(getattr(first, "drafts_total", 1)) - 1,
    }
