"""Small typed builders for the dashboard tests: engrams with counters, review items, sessions.

Vectors are fixed unit vectors unless a test needs real similarity, so building hundreds of rows
stays fast; text search still works through the lexical leg.
"""

from __future__ import annotations

import itertools
from datetime import datetime
from typing import Any

import numpy as np
from django.utils import timezone

from memory.models import (
    EMBEDDING_DIM,
    AgentSession,
    Engram,
    Episode,
    Injection,
    Outcome,
    ReviewItem,
)
from tests.memory.helpers import make_engram, make_session

_serial = itertools.count(1)


def unit_vector(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vector = rng.standard_normal(EMBEDDING_DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def engram(owner: Any, statement: str | None = None, **overrides: Any) -> Engram:
    """An active global engram with a cheap random embedding unless `real=True`."""
    n = next(_serial)
    real = overrides.pop("real", False)
    if not real:
        overrides.setdefault("embedding", unit_vector(n))
    overrides.setdefault("engram_id", f"ENG-2026-0101-{n:04d}")
    return make_engram(owner, statement=statement or f"Dashboard lesson number {n}", **overrides)


def with_outcomes(
    target: Engram,
    *,
    surfaced: int,
    followed: int = 0,
    contradicted: int = 0,
    ignored: int = 0,
    irrelevant: int = 0,
) -> Engram:
    """Set an engram's effectiveness counters directly (the quadrant inputs)."""
    Engram.objects.filter(pk=target.pk).update(
        surfaced=surfaced,
        injections=surfaced,
        followed=followed,
        contradicted=contradicted,
        ignored=ignored,
        irrelevant=irrelevant,
    )
    target.refresh_from_db()
    return target


def candidate(owner: Any, statement: str | None = None, **overrides: Any) -> ReviewItem:
    overrides.setdefault("status", Engram.Status.CANDIDATE)
    row = engram(owner, statement, **overrides)
    return ReviewItem.objects.create(
        owner=owner, kind=ReviewItem.Kind.CANDIDATE, engram=row, reason="New lesson from agent"
    )


def pair(
    owner: Any,
    kind: str,
    new_statement: str,
    old_statement: str,
    *,
    new_status: str = Engram.Status.CANDIDATE,
) -> ReviewItem:
    """A contradiction or merge item: `engram` is the new write, `other` the existing engram."""
    old = engram(owner, old_statement)
    new = engram(owner, new_statement, status=new_status)
    return ReviewItem.objects.create(
        owner=owner, kind=kind, engram=new, other=old, payload={"cosine": 0.93}
    )


def fading(owner: Any, statement: str | None = None) -> ReviewItem:
    row = engram(owner, statement, status=Engram.Status.DORMANT, retrieval_strength=0.06)
    return ReviewItem.objects.create(
        owner=owner, kind=ReviewItem.Kind.FADING, engram=row, payload={"rs_eff": 0.06}
    )


def session_with(
    owner: Any,
    outcomes: list[tuple[Engram, str | None]],
    *,
    started_at: datetime | None = None,
    **overrides: Any,
) -> AgentSession:
    """A session in which each engram was injected once, with the given outcome (or none)."""
    session = make_session(owner, started_at=started_at or timezone.now(), **overrides)
    for rank, (target, result) in enumerate(outcomes, start=1):
        injection = Injection.objects.create(
            owner=owner,
            session=session,
            engram=target,
            bucket=Injection.Bucket.DIRECTIVE,
            rank=rank,
            score=0.5,
            tokens=12,
        )
        if result:
            Outcome.objects.create(
                owner=owner,
                injection=injection,
                engram=target,
                result=result,
                source=Outcome.Source.AUTO_HEURISTIC,
                evidence="matched a tool input",
            )
    return session


def episode(owner: Any, summary: str, **overrides: Any) -> Episode:
    n = next(_serial)
    overrides.setdefault("timestamp", timezone.now())
    return Episode.objects.create(
        owner=owner, episode_id=f"EP-2026-0101-{n:04d}", summary=summary, **overrides
    )
