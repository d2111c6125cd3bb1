"""Session learning: capture signals from prompts, transcripts and error → fix pairs, extract
lessons (LLM with a schema, or the heuristic extractor) and write them through the one write
path, with supersession of older variants and the noise caps of DESIGN "Session learning".

Only `prompt_capture` and `transcript_attach` run on a hook's request path (a classifier and a
redacted insert); reading transcripts, extraction and the LLM run in Celery tasks.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memory import scanner
from memory.errors import DomainError, InvalidInput, NotFound
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
from memory.services import extraction
from memory.services.engrams import engram_learn
from memory.services.events import event_record
from memory.services.jobs import job_enqueue
from memory.services.llm import PRODUCER_HEURISTIC, PRODUCER_LLM, LlmUnavailable, configured
from memory.services.review import kind_register
from memory.services.review_queue import text_answered

MAX_SIGNAL_CHARS = 8000
# One Stop's transcript delta: bounded so a huge session is taken in several passes.
MAX_DELTA_BYTES = 1024 * 1024
MAX_ATTACHED_LINES = 5000
ACTOR = "learning"
TIERS_OF_USER = extraction.TIERS_OF_USER  # tier A and B: the user's own words
# Draft results that count against the per-session cap (a repeat adds no new lesson).
COUNTED = ("created", "merge_proposed", "contradiction_flagged", "superseded", "review")
LIVE_REVIEW = (ReviewItem.State.PENDING, ReviewItem.State.DEFERRED)

# The LLM side of extraction lives in `extraction`; these names stay importable from here.
EXTRACT_TASK = extraction.EXTRACT_TASK
EXTRACT_SCHEMA = extraction.EXTRACT_SCHEMA


def _digest(text: str) -> str:
    return hashlib.sha256(textnorm.normalise(text).encode("utf-8", "replace")).hexdigest()


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
    *, owner: Any, session: AgentSession | None, scope: str, prompt: str, now: datetime
) -> LearningSignal | None:
    """UserPromptSubmit: store the prompt (redacted) as a signal when the classifier fires.

    The classifier is regular expressions only (< 1 ms); a prompt seen before in the session
    is not stored twice. Extraction is queued for after the commit.
    """
    verdict = learning.classify(prompt)
    if not verdict.is_signal:
        return None
    text, found = scanner.redact_secrets(prompt[:MAX_SIGNAL_CHARS])
    digest = _digest(text)
    if (
        session is not None
        and LearningSignal.objects.filter(session=session, digest=digest).exists()
    ):
        return None
    signal = LearningSignal.objects.create(
        owner=owner,
        session=session,
        kind=LearningSignal.Kind.PROMPT,
        label=verdict.kind,
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


def _attached_delta(
    session: AgentSession, offset: int, lines: list[Any], now: datetime
) -> LearningSignal | None:
    current = int(
        AgentSession.objects.filter(pk=session.pk).values_list("transcript_offset", flat=True)[0]
    )
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
    """Read the transcript from the session's offset when this server can (local file)."""
    path = session.transcript_path
    if not path or not os.path.isabs(path) or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as handle:
            handle.seek(session.transcript_offset)
            data = handle.read(MAX_DELTA_BYTES)
    except OSError:
        return None
    lines, used = learning.split_complete(data)
    if not used:
        return None
    start = session.transcript_offset
    return _delta_signal(session=session, lines=lines, start=start, end=start + used, now=now)


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
    """Error → fix: a failed tool call followed by a successful similar one becomes a tier-C
    signal (once per pair: the pair's digest is remembered on the signal)."""
    calls = [
        learning.Call(tool=o.tool, tool_input=o.tool_input, success=o.success, output=o.tool_output)
        for o in Observation.objects.filter(session=session).order_by("created_at", "pk")
    ]
    made = 0
    for fix in learning.error_fixes(calls):
        digest = _digest(f"{fix.tool}\n{fix.failed}\n{fix.fixed}")
        if LearningSignal.objects.filter(session=session, digest=digest).exists():
            continue
        LearningSignal.objects.create(
            owner=session.owner,
            session=session,
            kind=LearningSignal.Kind.ERROR_FIX,
            label="error_fix",
            text=fix.statement,
            digest=digest,
            scope=session.scope,
            created_at=now,
        )
        made += 1
    return made


# --- extraction ------------------------------------------------------------------------------


def _heuristic(signal: LearningSignal) -> list[learning.LessonDraft]:
    if signal.kind == LearningSignal.Kind.PROMPT:
        return learning.extract(signal.text)
    if signal.kind == LearningSignal.Kind.ERROR_FIX:
        statement = signal.text
        return [
            learning.LessonDraft(
                statement=statement,
                polarity="do",
                tier=learning.TIER_INFERRED,
                type="procedural",
                anti_pattern=learning.anti_pattern_of(statement),
                tags=learning.tags_of(statement),
                rationale=statement,
            )
        ]
    return _heuristic_entries(_transcript_entries(signal))


def _heuristic_entries(entries: Sequence[learning.Entry]) -> list[learning.LessonDraft]:
    drafts: list[learning.LessonDraft] = []
    for entry in entries:
        if entry.kind == "user":
            drafts.extend(learning.extract(entry.text))
    return drafts


def _transcript_entries(signal: LearningSignal) -> list[learning.Entry]:
    """A transcript delta's entries without the prompts UserPromptSubmit already captured as
    signals of the session (they are extracted from their own signal, never twice)."""
    captured = set(
        LearningSignal.objects.filter(
            session=signal.session_id, kind=LearningSignal.Kind.PROMPT
        ).values_list("digest", flat=True)
    )
    return [
        entry
        for entry in learning.parse_lines(signal.text.splitlines())
        if entry.kind != "user" or _digest(entry.text[:MAX_SIGNAL_CHARS]) not in captured
    ]


def _llm_text(signal: LearningSignal) -> list[extraction.Run]:
    """What the LLM reads of a signal, call by call: a prompt in one call, all of it the user's
    words; an error → fix pair in one call with no user's words; a transcript delta (without
    the prompts already captured) in runs of whole entries, only those holding a user entry."""
    if signal.kind == LearningSignal.Kind.PROMPT:
        return [extraction.Run(text=signal.text, users=(signal.text,))]
    if signal.kind != LearningSignal.Kind.TRANSCRIPT:
        return [extraction.Run(text=signal.text)]
    return extraction.transcript_runs(_transcript_entries(signal))


def _extract(
    signal: LearningSignal, limit: int
) -> tuple[list[tuple[learning.LessonDraft, str]], str]:
    """The drafts of a signal with the producer of each, and the signal's producer.

    The LLM reads a transcript delta in up to MAX_EXTRACT_CALLS calls; when it stops (the
    budget, the breaker, a failure) or the calls run out, the heuristic reads the entries it
    did not. When no call succeeds, the heuristic decides alone, as without a key."""
    if not configured():  # the default: no key, nothing to prepare for a call
        return [(d, PRODUCER_HEURISTIC) for d in _heuristic(signal)[:limit]], PRODUCER_HEURISTIC
    runs = _llm_text(signal)
    drafts: list[tuple[learning.LessonDraft, str]] = []
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
        drafts += [(draft, PRODUCER_LLM) for draft in found]
        sent += 1
    if not sent:
        return [(d, PRODUCER_HEURISTIC) for d in _heuristic(signal)[:limit]], PRODUCER_HEURISTIC
    unread = [entry for run in runs[sent:] for entry in run.entries]
    rest = _heuristic_entries(unread)[: max(limit - len(drafts), 0)]
    return drafts + [(d, PRODUCER_HEURISTIC) for d in rest], PRODUCER_LLM


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
    limit = (
        learning.MAX_DRAFTS_PER_PROMPT
        if signal.kind == LearningSignal.Kind.PROMPT
        else learning.MAX_DRAFTS_PER_SESSION
    )
    drafts, producer = _extract(signal, limit)
    with transaction.atomic():
        claimed = LearningSignal.objects.filter(
            pk=signal.pk, state=LearningSignal.State.PENDING
        ).update(state=LearningSignal.State.DONE, producer=producer, processed_at=now)
        if not claimed:
            return 0
        forced = review_all(signal.owner)
        for draft, made_by in drafts:
            draft_write(signal=signal, draft=draft, producer=made_by, forced=forced, now=now)
    return len(drafts)


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
) -> LearningDraft:
    """One draft through the write path (scan, recurrence, merge, contradiction), then the
    learning rules: tier A/B active with source `user`, C a candidate; review forced by the
    owner's setting or past 20 drafts in the session; a user draft supersedes its variants."""
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
    if result.outcome != "recurrence":
        extra = dict(engram.extra or {})
        if draft.anti_pattern:
            extra["anti_pattern"] = draft.anti_pattern[:300]
        extra["learning"] = {
            "tier": tier,
            "signal": signal.pk,
            "session": signal.session.session_id if signal.session else "",
            "producer": producer,
        }
        Engram.objects.filter(pk=engram.pk).update(extra=extra)
        engram.extra = extra
        if forced and engram.status == Engram.Status.ACTIVE:
            _to_review(engram, now)
            row.result = "review"
        elif user_words and not forced:
            olds = _variants_of(engram, result.related)
            for old in olds:
                _supersede(old=old, new=engram, now=now)
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


MAX_VARIANT_CANDIDATES = 500


def _variants_of(engram: Engram, related: Sequence[Mapping[str, Any]]) -> list[Engram]:
    """The live engrams of the same scope that `engram` restates with another value or the
    opposite direction. DESIGN: the same variant key (checked lexically over the scope's most
    recent engrams: the same naming slot, the same role filled by another tool, the same words
    the other way round — rephrasing tolerated), or cosine ≥ 0.8 with another value or the
    opposite direction (over the write path's neighbours). Every one of them is an older
    version of the rule: two paraphrases of the old rule are both replaced."""
    by_id = {str(r["id"]): float(r["cosine"]) for r in related}
    key = textnorm.variant_key(engram.statement)
    norm = textnorm.normalise(engram.statement)
    candidates = (
        Engram.objects.for_owner(engram.owner)
        .filter(scope=engram.scope, superseded_by__isnull=True)
        .exclude(pk=engram.pk)
        .exclude(status=Engram.Status.RETIRED)
        .only("id", "engram_id", "statement", "polarity", "status", "owner_id", "scope")
        .order_by("-created_at")[:MAX_VARIANT_CANDIDATES]
    )
    found: list[tuple[float, Engram]] = []
    for other in candidates:
        cosine = by_id.get(other.engram_id, 0.0)
        if textnorm.normalise(other.statement) == norm:
            continue
        lexical = (
            key is not None and key == textnorm.variant_key(other.statement)
        ) or learning.is_variant(engram.statement, other.statement)
        update = lexical or learning.is_update(
            engram.statement,
            other.statement,
            cosine=cosine,
            new_polarity=engram.polarity,
            old_polarity=other.polarity,
        )
        if update:
            found.append((cosine, other))
    found.sort(key=lambda pair: -pair[0])
    return [other for _, other in found]


def _supersede(*, old: Engram, new: Engram, now: datetime) -> None:
    """The new version is active; the old one is retired with `superseded_by`, and a review item
    lets a person restore it. Open merge or contradiction items between the two are closed."""
    if new.status != Engram.Status.ACTIVE:
        new.activate(now=now)
    old.superseded_by = new
    old.status = Engram.Status.RETIRED
    old.retired_at = now
    old.updated_at = now
    old.save(update_fields=["superseded_by", "status", "retired_at", "updated_at"])
    ReviewItem.objects.filter(
        Q(engram=new, other=old) | Q(engram=old, other=new),
        kind__in=[ReviewItem.Kind.MERGE, ReviewItem.Kind.CONTRADICTION],
        state__in=LIVE_REVIEW,
    ).update(state=ReviewItem.State.DONE, decision="superseded", decided_at=now)
    ReviewItem.objects.create(
        owner=old.owner,
        kind=ReviewItem.Kind.SUPERSEDED,
        engram=old,
        other=new,
        reason=f"{new.engram_id} replaced {old.engram_id}; restore the old version if it still holds",
        created_at=now,
    )
    event_record(
        owner=old.owner,
        event=Event.ENGRAM_SUPERSEDED,
        engram=old,
        actor=ACTOR,
        data={"by": new.engram_id},
        when=now,
    )


def superseded_apply(
    *,
    owner: Any,
    item: ReviewItem,
    action: str,
    actor: str,
    edits: Mapping[str, Any],
    now: datetime,
) -> Mapping[str, Any] | None:
    """Review of a supersession: `keep` the new version, or `restore` the old one (the newer is
    retired in its place)."""
    old, new = item.engram, item.other
    if action != "restore" or old is None:
        return {"kept": new.engram_id if new else ""}
    engram_restore(owner=owner, engram=old, actor=actor, now=now)
    if new is not None and new.status != Engram.Status.RETIRED:
        new.retire(now=now)
        event_record(
            owner=owner,
            event=Event.ENGRAM_RETIRED,
            engram=new,
            actor=actor,
            data={"reason": f"{old.engram_id} restored"},
            when=now,
        )
    return {"restored": old.engram_id}


def review_kinds_register() -> None:
    """Called from MemoryConfig.ready(): every process knows how to decide a superseded item."""
    kind_register(
        ReviewItem.Kind.SUPERSEDED, actions=("defer", "keep", "restore"), apply=superseded_apply
    )


def engram_restore(*, owner: Any, engram: Engram, actor: str, now: datetime) -> Engram:
    """Bring a superseded (or undone) engram back: active, no longer superseded."""
    engram.superseded_by = None
    engram.save(update_fields=["superseded_by"])
    engram.activate(now=now)
    event_record(owner=owner, event=Event.ENGRAM_RESTORED, engram=engram, actor=actor, when=now)
    return engram


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


def signals_for(
    *, owner: Any, session: AgentSession | None = None, limit: int = 50
) -> list[LearningSignal]:
    qs = LearningSignal.objects.filter(owner=owner)
    if session is not None:
        qs = qs.filter(session=session)
    return list(qs.select_related("session").order_by("-created_at", "-pk")[:limit])


def drafts_for(
    *, owner: Any, session: AgentSession | None = None, limit: int = 50
) -> list[LearningDraft]:
    qs = LearningDraft.objects.filter(owner=owner)
    if session is not None:
        qs = qs.filter(session=session)
    return list(
        qs.select_related("engram", "supersedes", "session").order_by("-created_at", "-pk")[:limit]
    )
