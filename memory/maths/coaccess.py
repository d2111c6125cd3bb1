"""Co-access (Hebbian) association maths and semantic association strength.

Pure Python (no Django). Strengths are in [0, 0.95]; days are elapsed days as real numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

NEW_EDGE_STRENGTH = 0.3
REINFORCE_STEP = 0.05
STRENGTH_CAP = 0.95
MAX_COACCESS_EDGES = 5
DECAY_FLOOR = 0.02
DECAY_RATE = 0.01  # per day
SEMANTIC_OFFSET = 0.5


def coaccess_pairs(engram_ids: Sequence[str]) -> list[tuple[str, str]]:
    """Unordered unique pairs of distinct ids, each as (smaller, larger), sorted.

    Duplicated ids (one engram injected twice) count once; the order is deterministic so callers
    lock and update edges in the same order every time.
    """
    return list(combinations(sorted(set(engram_ids)), 2))


def reinforce_edge(
    strength: float, *, step: float = REINFORCE_STEP, cap: float = STRENGTH_CAP
) -> float:
    """Existing co-access edge after one more shared session: +0.05, capped at 0.95."""
    return min(cap, strength + step)


def coaccess_update(
    existing_strength: float | None,
    source_edge_count: int,
    *,
    new_strength: float = NEW_EDGE_STRENGTH,
    max_edges: int = MAX_COACCESS_EDGES,
    step: float = REINFORCE_STEP,
    cap: float = STRENGTH_CAP,
) -> float | None:
    """New strength for one pair: reinforce an existing edge, else 0.3 if the source has < 5 edges.

    Returns None when no edge exists and the source already has the maximum number of edges.
    """
    if existing_strength is not None:
        return reinforce_edge(existing_strength, step=step, cap=cap)
    if source_edge_count < max_edges:
        return new_strength
    return None


def decayed_coaccess_strength(
    strength: float,
    days: float,
    *,
    floor: float = DECAY_FLOOR,
    rate: float = DECAY_RATE,
) -> float:
    """Read-time strength 0.02 + (s - 0.02)·exp(-0.01·d), d in days since the edge was updated."""
    if days < 0:
        raise ValueError("days must be non-negative")
    return floor + (strength - floor) * math.exp(-rate * days)


def semantic_association_strength(
    cosine: float, *, offset: float = SEMANTIC_OFFSET, cap: float = STRENGTH_CAP
) -> float:
    """Semantic edge strength min(0.95, cosine - 0.5), never below 0; used for cosine 0.75-0.92."""
    return max(0.0, min(cap, cosine - offset))
