"""Feedback and outcomes on engrams: a signal from a person or an agent, an outcome of a session."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memory.errors import InvalidInput
from memory.maths import activation
from memory.models import (
    Engram,
    Event,
    Injection,
    Outcome,
)
from memory.services.activity import reanchor
from memory.services.events import event_record
from memory.strength import effective_strength

FEEDBACK_SIGNALS = ("positive", "negative", "neutral")
OUTCOME_SIGNALS = tuple(Outcome.Result.values)
# Explicit negative feedback on a surfaced engram most often means "not useful here".
FEEDBACK_TO_OUTCOME = {"positive": "followed", "negative": "irrelevant"}


# --- feedback and outcomes ----------------------------------------------------------------


def feedback_record(
    *,
    owner: Any,
    engram: Engram,
    signal: str,
    session: Any = None,
    actor: str = "agent",
    source: str = "agent",
    now: datetime | None = None,
) -> Engram:
    """Apply one feedback signal (positive, negative, neutral, or an explicit outcome name)."""
    if signal not in FEEDBACK_SIGNALS and signal not in OUTCOME_SIGNALS:
        raise InvalidInput(
            "signal", f"must be one of {', '.join(FEEDBACK_SIGNALS + OUTCOME_SIGNALS)}"
        )
    now = now or timezone.now()
    with transaction.atomic():
        engram = Engram.objects.select_for_update().get(pk=engram.pk)
        if signal in FEEDBACK_SIGNALS:
            rs_eff = effective_strength(engram, now=now)
            result = activation.apply_feedback(rs_eff, signal)  # type: ignore[arg-type]
            if signal == "positive":
                engram.feedback_positive += 1
            elif signal == "negative":
                engram.feedback_negative += 1
            else:
                engram.feedback_neutral += 1
            if result.reanchor:
                reanchor(engram, result.rs, now=now)
            if result.storage_strength_delta:
                engram.storage_strength = activation.storage_strength_after_positive(
                    engram.storage_strength, step=result.storage_strength_delta
                )
            engram.updated_at = now
            engram.save()
            event_record(
                owner=owner,
                event=Event.FEEDBACK_RECEIVED,
                engram=engram,
                actor=actor,
                data={"signal": signal, "rs": round(engram.retrieval_strength, 6)},
                when=now,
            )
        outcome_name = signal if signal in OUTCOME_SIGNALS else FEEDBACK_TO_OUTCOME.get(signal)
        if session is not None and outcome_name:
            explicit = Outcome.Source.PERSON if source == "person" else Outcome.Source.AGENT
            for injection in Injection.objects.filter(session=session, engram=engram):
                outcome_record(
                    owner=owner,
                    injection=injection,
                    result=outcome_name,
                    source=explicit,
                    evidence=f"explicit {signal} from {actor}",
                    now=now,
                )
            engram.refresh_from_db()
    return engram


_COUNTER: dict[str, str] = {
    "followed": "followed",
    "contradicted": "contradicted",
    "ignored": "ignored",
    "irrelevant": "irrelevant",
}


def outcome_record(
    *,
    owner: Any,
    injection: Injection,
    result: str,
    source: str,
    evidence: str = "",
    now: datetime | None = None,
) -> Outcome | None:
    """Set the outcome of one injection; an automatic result never overrides an explicit one."""
    if result not in _COUNTER:
        raise InvalidInput("result", f"must be one of {', '.join(OUTCOME_SIGNALS)}")
    now = now or timezone.now()
    explicit = source in {Outcome.Source.AGENT, Outcome.Source.PERSON}
    with transaction.atomic():
        current = Outcome.objects.select_for_update().filter(injection=injection).first()
        if current is not None:
            if current.is_explicit and not explicit:
                return None
            if current.result == result and current.source == source:
                return current
        updates: dict[str, Any] = {_COUNTER[result]: F(_COUNTER[result]) + 1}
        if current is not None and current.result != result:
            old = _COUNTER[current.result]
            updates[old] = F(old) - 1
        if current is not None and current.result == result:
            updates.pop(_COUNTER[result])
        newly_followed = result == Outcome.Result.FOLLOWED and (
            current is None or current.result != result
        )
        if newly_followed:
            updates["hits"] = F("hits") + 1
            updates["last_hit_at"] = now
        elif result in {Outcome.Result.CONTRADICTED, Outcome.Result.IGNORED} and current is None:
            updates["misses"] = F("misses") + 1
        Engram.objects.filter(pk=injection.engram_id).update(**updates)
        if newly_followed:
            engram = Engram.objects.get(pk=injection.engram_id)
            engram.storage_strength = activation.storage_strength_after_positive(
                engram.storage_strength
            )
            engram.save(update_fields=["storage_strength"])
        if current is None:
            current = Outcome.objects.create(
                owner=owner,
                injection=injection,
                engram_id=injection.engram_id,
                result=result,
                source=source,
                evidence=evidence[:2000],
                created_at=now,
            )
        else:
            current.result = result
            current.source = source
            current.evidence = evidence[:2000]
            current.created_at = now
            current.save()
    return current
