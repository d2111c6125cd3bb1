"""Per-owner switches of the success-pattern store, and inject's consider provider."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import connection

from memory.services.consider import ConsiderLine
from patterns.models import PatternSettings
from patterns.services.store import pattern_recall

# A pattern joins inject's consider bucket only this close to the prompt, two at most.
INJECT_MIN_SIMILARITY = 0.5
INJECT_MAX = 2
INJECT_PROMPT_CHARS = 2000


def settings_get(owner: Any) -> PatternSettings:
    found = PatternSettings.objects.filter(owner=owner).first()
    return found if found is not None else PatternSettings(owner=owner)


def settings_update(*, owner: Any, feed_inject: bool) -> PatternSettings:
    row, _ = PatternSettings.objects.update_or_create(
        owner=owner, defaults={"feed_inject": bool(feed_inject)}
    )
    return row


def consider_lines(*, owner: Any, prompt: str, now: datetime, limit: int) -> list[ConsiderLine]:
    """inject's consider lines from the owner's patterns, when the owner turned it on.

    Off: one indexed query. On: one embedding and the recall's two queries; read-only.
    """
    # Raw SQL: this runs on every inject, and the ORM's query building cost ~10x the lookup.
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {PatternSettings._meta.db_table} WHERE owner_id = %s AND feed_inject",
            [getattr(owner, "pk", owner)],
        )
        if cursor.fetchone() is None:
            return []
    text = prompt.strip()[:INJECT_PROMPT_CHARS]
    if not text:
        return []
    found = pattern_recall(
        owner=owner,
        task=text,
        limit=min(limit, INJECT_MAX),
        min_similarity=INJECT_MIN_SIMILARITY,
        now=now,
    )
    lines = []
    for item in found:
        pattern = item.pattern
        how = (pattern.design or pattern.code).strip().splitlines()
        hint = f": {how[0].strip()}" if how else ""
        lines.append(
            ConsiderLine(
                id=pattern.key,
                statement=f"Worked before for “{pattern.task[:80]}”{hint}",
                score=round(item.score, 6),
            )
        )
    return lines
