"""Agent sessions: start, observations, end (co-access), and automatic outcome attribution."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from memory import scanner, validation
from memory.maths import attribution, coaccess
from memory.models import AgentSession, Association, Engram, Event, Injection, Observation, Outcome
from memory.services.activity import activity_mark
from memory.services.engrams import InvalidInput, engram_learn
from memory.services.events import event_record
from memory.services.jobs import job_enqueue
from memory.services.judge import session_judge
from memory.services.outcomes import outcome_record
from memory.validation import scope as validate_scope

MAX_OBSERVATION_CHARS = 4000
MAIN_BUCKETS = (Injection.Bucket.CONSTRAINT, Injection.Bucket.DIRECTIVE)


def _session_id(value: str | None) -> str:
    if value is None or value == "":
        return "S-" + secrets.token_hex(8)
    if not isinstance(value, str) or len(value) > 200:
        raise InvalidInput("session_id", "must be a string of at most 200 characters")
    return value.strip()


def session_start(
    *,
    owner: Any,
    session_id: str | None = None,
    task: str = "",
    scope: str = "global",
    agent: str = "",
    cwd: str = "",
    now: datetime | None = None,
) -> AgentSession:
    """Start (or resume) a session; the same session_id returns the same session."""
    now = now or timezone.now()
    sid = _session_id(session_id)
    scope = validate_scope(scope)
    task = validation.text("task", task, limit=validation.MAX_TASK_CHARS)
    session, created = AgentSession.objects.get_or_create(
        owner=owner,
        session_id=sid,
        defaults={
            "task": task,
            "scope": scope,
            "agent": validation.text("agent", agent, limit=100),
            "cwd": validation.text("cwd", cwd, limit=500),
            "started_at": now,
        },
    )
    if not created and task and not session.task:
        session.task = task
        session.save(update_fields=["task"])
    activity_mark(owner=owner, scope=scope, when=now)
    return session


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def observation_record(
    *,
    owner: Any,
    tool: str,
    tool_input: Any = None,
    tool_output: Any = None,
    success: bool = True,
    session: AgentSession | None = None,
    now: datetime | None = None,
) -> Observation:
    """Store one tool use with secrets redacted; heavy work (embedding) happens later."""
    tool = validation.text("tool", tool, limit=100, required=True)
    raw_in, raw_out = _as_text(tool_input), _as_text(tool_output)
    clean_in, found_in = scanner.redact_secrets(raw_in[: MAX_OBSERVATION_CHARS * 4])
    clean_out, found_out = scanner.redact_secrets(raw_out[: MAX_OBSERVATION_CHARS * 4])
    return Observation.objects.create(
        owner=owner,
        session=session,
        tool=tool,
        tool_input=clean_in[:MAX_OBSERVATION_CHARS],
        tool_output=clean_out[:MAX_OBSERVATION_CHARS],
        input_digest=_digest(clean_in),
        output_digest=_digest(clean_out),
        success=bool(success),
        redacted=sorted(set(found_in) | set(found_out)),
        created_at=now or timezone.now(),
    )


def coaccess_update(*, owner: Any, session: AgentSession, now: datetime | None = None) -> int:
    """Hebbian update over the engrams injected as directives/constraints; returns edges touched."""
    now = now or timezone.now()
    ids = sorted(
        set(
            Injection.objects.filter(session=session, bucket__in=MAIN_BUCKETS).values_list(
                "engram_id", flat=True
            )
        )
    )
    counted = {int(i) for i in session.coaccess_ids or []}
    if len(ids) < 2 or set(ids) <= counted:
        return 0
    pairs = [
        (a, b)
        for a, b in coaccess.coaccess_pairs([str(i) for i in ids])
        if not (int(a) in counted and int(b) in counted)
    ]
    AgentSession.objects.filter(pk=session.pk).update(coaccess_ids=ids)
    session.coaccess_ids = ids
    # Locked in key order: two sessions ending at once over the same engrams update each edge
    # one after the other (no lost update, no deadlock).
    edges = {
        (a.source_id, a.target_id): a
        for a in Association.objects.select_for_update()
        .filter(source_id__in=ids, target_id__in=ids, type=Association.Type.CO_ACCESSED)
        .order_by("source_id", "target_id")
    }
    counts = dict(
        Association.objects.filter(source_id__in=ids, type=Association.Type.CO_ACCESSED)
        .values("source_id")
        .annotate(n=Count("id"))
        .values_list("source_id", "n")
    )
    touched = 0
    for a_str, b_str in pairs:
        a, b = int(a_str), int(b_str)
        for src, dst in ((a, b), (b, a)):
            edge = edges.get((src, dst))
            strength = coaccess.coaccess_update(edge.strength if edge else None, counts.get(src, 0))
            if strength is None:
                continue
            if edge is None:
                try:
                    with transaction.atomic():  # a savepoint: the insert may lose a race
                        Association.objects.create(
                            owner=owner,
                            source_id=src,
                            target_id=dst,
                            type=Association.Type.CO_ACCESSED,
                            strength=strength,
                            updated_at=now,
                        )
                    counts[src] = counts.get(src, 0) + 1
                    touched += 1
                    continue
                except IntegrityError:
                    # Another session's end created this edge since it was read: strengthen it.
                    edge = Association.objects.select_for_update().get(
                        source_id=src, target_id=dst, type=Association.Type.CO_ACCESSED
                    )
                    strength = coaccess.coaccess_update(edge.strength, counts.get(src, 0))
                    if strength is None:
                        continue
            if edge is not None:
                edge.strength = strength
                edge.updated_at = now
                edge.save(update_fields=["strength", "updated_at"])
            touched += 1
    return touched


def session_end(
    *,
    owner: Any,
    session: AgentSession,
    summary: str = "",
    engram_suggestions: Sequence[Any] = (),
    last_assistant_message: str = "",
    now: datetime | None = None,
) -> dict[str, Any]:
    """End a session once: co-access, suggested lessons, then queue outcome attribution."""
    now = now or timezone.now()
    summary = validation.text("summary", summary, limit=validation.MAX_TEXT_CHARS)
    if not isinstance(engram_suggestions, list | tuple):
        raise InvalidInput("engram_suggestions", "must be a list")
    learned: list[dict[str, Any]] = []
    with transaction.atomic():
        # The conditional UPDATE claims the end, so a repeated Stop hook does nothing twice.
        claimed = AgentSession.objects.filter(pk=session.pk, ended_at__isnull=True).update(
            ended_at=now
        )
        fields: dict[str, Any] = {}
        if summary:
            fields["summary"] = summary
        if last_assistant_message:
            fields["last_assistant_message"] = last_assistant_message[:8000]
        if fields:
            AgentSession.objects.filter(pk=session.pk).update(**fields)
        edges = coaccess_update(owner=owner, session=session, now=now) if claimed else 0
        for suggestion in engram_suggestions:
            item = {"statement": suggestion} if isinstance(suggestion, str) else suggestion
            if not isinstance(item, dict):
                raise InvalidInput("engram_suggestions", "items are strings or objects")
            allowed = {"statement", "type", "polarity", "rationale", "tags", "domain"}
            result = engram_learn(
                owner=owner,
                scope=session.scope,
                source="agent",
                actor=session.agent or "agent",
                **{k: v for k, v in item.items() if k in allowed},
            )
            learned.append({"id": result.engram.engram_id, "outcome": result.outcome})
        if claimed:
            event_record(
                owner=owner,
                event=Event.SESSION_ENDED,
                actor=session.agent,
                data={"session": session.session_id, "coaccess_edges": edges},
                when=now,
            )
            job_enqueue("engram.attribute_session", session.pk)
    session.refresh_from_db()
    return {"session_id": session.session_id, "ended": bool(claimed), "learned": learned}


def outcomes_attribute(*, session_pk: int, now: datetime | None = None) -> int:
    """Give every injection of an ended session an outcome (LLM judge, else heuristic); idempotent.

    The claim (`attributed_at`) and the outcomes commit in one transaction: a crash in between
    leaves the session unclaimed, so the redelivered task attributes everything.
    """
    now = now or timezone.now()
    pending = AgentSession.objects.filter(
        pk=session_pk, ended_at__isnull=False, attributed_at__isnull=True
    )
    session = pending.select_related("owner").first()
    if session is None:
        return 0
    inputs = list(
        Observation.objects.filter(session=session)
        .order_by("created_at")
        .values_list("tool_input", flat=True)
    )
    # What the session was about, for "irrelevant": its prompts (the injections' queries, and
    # those the hooks kept, most of which inject nothing).
    prompts = sorted(
        set(
            Injection.objects.filter(session=session)
            .exclude(query="")
            .values_list("query", flat=True)
        )
        | {p for p in session.prompts or [] if isinstance(p, str)}
    )
    # Every absolute path the session's tools touched holds its working folder's words.
    ambient = attribution.path_words(session.cwd or "")
    # The LLM judge (one call, outside the transaction); {} means the heuristic decides.
    judged = session_judge(
        session=session, engrams=[i.engram for i in _unjudged_injections(session)]
    )
    with transaction.atomic():
        if not pending.update(attributed_at=now):
            return 0  # another worker claimed it first
        count = 0
        for injection in _unjudged_injections(session):
            engram: Engram = injection.engram
            anti = engram.extra.get("anti_pattern", "") if isinstance(engram.extra, dict) else ""
            verdict = judged.get(engram.pk) or attribution.attribute(
                statement=engram.statement,
                polarity=engram.polarity,
                anti_pattern=anti if isinstance(anti, str) else "",
                inputs=inputs,
                trigger_context=engram.trigger_context,
                context=prompts,
                ambient=ambient,
            )
            outcome_record(
                owner=session.owner,
                injection=injection,
                result=verdict.result,
                source=Outcome.Source.AUTO_LLM
                if engram.pk in judged
                else Outcome.Source.AUTO_HEURISTIC,
                evidence=verdict.evidence,
                now=now,
            )
            count += 1
        event_record(
            owner=session.owner,
            event=Event.OUTCOMES_ATTRIBUTED,
            actor="worker",
            data={"session": session.session_id, "outcomes": count},
            when=now,
        )
    return count


def _unjudged_injections(session: AgentSession) -> list[Injection]:
    """The injections that get an automatic outcome: one per engram (its first injection), none
    where an agent or a person already said how it went."""
    injections = (
        Injection.objects.filter(session=session)
        .exclude(bucket=Injection.Bucket.RECALL)
        .select_related("engram")
        .order_by("engram_id", "created_at")
    )
    explicit = set(
        Outcome.objects.filter(
            injection__session=session, source__in=[Outcome.Source.AGENT, Outcome.Source.PERSON]
        ).values_list("injection_id", flat=True)
    )
    chosen: list[Injection] = []
    seen: set[int] = set()
    for injection in injections:
        if injection.engram_id not in seen and injection.pk not in explicit:
            chosen.append(injection)
        seen.add(injection.engram_id)
    return chosen
