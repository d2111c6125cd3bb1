"""A pattern promoted to an engram: a procedural lesson that waits in review like any other."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from memory.errors import Conflict
from memory.services.engrams import engram_learn
from patterns.models import SuccessPattern
from patterns.services.store import pattern_get

MAX_STATEMENT = 600


def lesson_of(pattern: SuccessPattern) -> tuple[str, str]:
    """The statement and rationale an engram takes from a pattern."""
    how = (pattern.design or pattern.code or pattern.output).strip().splitlines()
    first = how[0].strip() if how else ""
    statement = f"For tasks like “{pattern.task[:300]}”: {first}" if first else pattern.task
    rationale = f"Promoted from success pattern {pattern.key} (score {pattern.score:.1f})."
    return statement[:MAX_STATEMENT], rationale


def pattern_promote(*, owner: Any, key: str, actor: str = "agent") -> SuccessPattern:
    """Learn the pattern as a procedural engram; it is a candidate in the review queue unless the
    owner auto-approves. A pattern is promoted once (409 the second time)."""
    with transaction.atomic():
        found = pattern_get(owner=owner, key=key, live=True)
        pattern = SuccessPattern.objects.select_for_update().get(pk=found.pk)
        if pattern.engram_id:
            raise Conflict(
                f"Pattern {key} was already promoted to {pattern.engram_id}.",
                code="already_promoted",
            )
        statement, rationale = lesson_of(pattern)
        result = engram_learn(
            owner=owner,
            actor=actor,
            statement=statement,
            rationale=rationale,
            type="procedural",
            scope=pattern.scope,
            source="patterns",
            tags=["success-pattern"],
        )
        pattern.engram_id = result.engram.engram_id
        pattern.save(update_fields=["engram_id"])
    return pattern
