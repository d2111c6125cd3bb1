"""The consolidation run (DESIGN "Dialectic consolidation"): observations in → clusters → theses →
antitheses → syntheses (with the Q gate and the output type) → review. Each stage is its own
module, idempotent and committed in batches; `consolidate` runs every stage once and says what
each made.

LLM steps (synthesis wording, imperative/procedural classification, the second-level output
refinement) go through `llm_run` and fall back to deterministic code that is good on its own.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dialectic.services.antitheses import antitheses_find
from dialectic.services.cluster import clusters_assign
from dialectic.services.embed import observations_embed
from dialectic.services.output import CLASSIFY_TASK, REFINE_TASK, output_decide
from dialectic.services.synthesis import (
    SYNTHESIS_TASK,
    StageCounts,
    syntheses_make,
    synthesis_fallback,
)
from dialectic.services.theses import theses_refresh
from memory.models import ReviewItem

__all__ = [
    "CLASSIFY_TASK",
    "REFINE_TASK",
    "SYNTHESIS_TASK",
    "StageCounts",
    "antitheses_find",
    "clusters_assign",
    "consolidate",
    "observations_embed",
    "output_decide",
    "review_open",
    "syntheses_make",
    "synthesis_fallback",
    "theses_refresh",
]


def consolidate(*, owner: Any | None = None, now: datetime | None = None) -> StageCounts:
    """Run every stage once, in order; each is idempotent, so this is too."""
    counts = StageCounts()
    skipped: list[str] = []
    counts.embedded = observations_embed(owner=owner, skipped=skipped)
    counts.skipped = len(skipped)
    counts.details += skipped
    counts.clustered, counts.clusters_created = clusters_assign(owner=owner)
    counts.theses = theses_refresh(owner=owner, now=now)
    counts.antitheses = antitheses_find(owner=owner)
    counts.syntheses = syntheses_make(owner=owner, now=now, counts=counts)
    return counts


def review_open(owner: Any) -> int:
    return ReviewItem.objects.filter(
        owner=owner, kind=ReviewItem.Kind.SYNTHESIS, state=ReviewItem.State.PENDING
    ).count()
