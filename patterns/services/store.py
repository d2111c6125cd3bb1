"""The pattern store: learn (with duplicates), recall (eval-weighted), reuse, refine, aging.

Survival and ranking stay apart: `pattern_mark_reused` and `patterns_age` only move the
success score; `pattern_refine` only appends to the eval store that recall ranks by.
"""

from __future__ import annotations

import secrets
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.db.models.expressions import RawSQL
from django.utils import timezone

from memory import validation
from memory.errors import Conflict, InvalidInput, NotFound
from memory.maths import neighbours
from patterns import maths
from patterns.models import EvalRecord, SuccessPattern

ON_DUPLICATE = ("replace_with_better", "keep_both", "skip")
MAX_CODE_CHARS = 100_000
MAX_LIMIT = 50
# Recall takes the nearest this many by exact cosine over the owner's live vectors (a pattern
# store is small per owner), then reads only their eval store: three queries in all.
RERANK_POOL = 200
MAX_CONTRACT_NAMES = 30


def new_key(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(6)}"


# --- validation -----------------------------------------------------------------------------


def clean_task(value: Any, name: str = "task") -> str:
    return validation.text(name, value, limit=validation.MAX_TASK_CHARS, required=True)


def clean_score(value: Any, name: str = "eval_score") -> float:
    """A 0-10 score: a number, not a boolean, not NaN."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise InvalidInput(name, "must be a number from 0 to 10")
    if not 0.0 <= float(value) <= maths.SCORE_MAX:
        raise InvalidInput(name, "must be from 0 to 10")
    return float(value)


def clean_limit(value: Any, *, maximum: int = MAX_LIMIT) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput("limit", f"must be a whole number from 1 to {maximum}")
    if not 1 <= value <= maximum:
        raise InvalidInput("limit", f"must be from 1 to {maximum}")
    return value


def clean_names(name: str, value: Any) -> list[str]:
    names = validation.str_list(name, value)
    if len(names) > MAX_CONTRACT_NAMES:
        raise InvalidInput(name, f"at most {MAX_CONTRACT_NAMES} names")
    return names


def embed(text: str) -> np.ndarray:
    from lib.embedder import get_embedder

    vector = np.asarray(get_embedder().embed_one(text), dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def pattern_get(*, owner: Any, key: str, live: bool = False) -> SuccessPattern:
    """The owner's pattern `key` (404 for anyone else's, whatever exists)."""
    rows = SuccessPattern.objects.for_owner(owner).filter(key=str(key or "")[:20])
    if live:
        rows = rows.live()
    pattern = rows.first()
    if pattern is None:
        raise NotFound(f"Pattern {key}")
    return pattern


# --- learn ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LearnResult:
    pattern: SuccessPattern
    outcome: str  # created | replaced | kept_existing | skipped
    duplicate_of: str = ""
    similarity: float | None = None

    @property
    def wrote(self) -> bool:
        return self.outcome in ("created", "replaced")


def nearest(rows: Any, vector: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """(pk, cosine) of the `limit` rows of the queryset `rows` nearest `vector`, exact.

    PostgreSQL computes the distances in SQL (pgvector `<=>`: parsing every vector in Python
    costs ~0.15 ms each); on SQLite numpy reads the float32 blobs as one matrix.
    """
    rows = rows.filter(embedding__isnull=False)
    if connection.vendor == "postgresql":
        literal = "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"
        table = SuccessPattern._meta.db_table
        found = (
            rows.annotate(distance=RawSQL(f'"{table}"."embedding" <=> %s::vector', [literal]))
            .order_by("distance", "pk")
            .values_list("pk", "distance")[:limit]
        )
        return [(int(pk), 1.0 - float(distance)) for pk, distance in found]
    # Raw rows: one buffer for all blobs instead of an array per row through the field.
    sql, params = rows.values_list("pk", "embedding").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    if not fetched:
        return []
    pks = np.fromiter((int(pk) for pk, _ in fetched), dtype=np.int64, count=len(fetched))
    matrix = np.frombuffer(b"".join(bytes(blob) for _, blob in fetched), dtype=np.float32)
    sims = matrix.reshape(len(fetched), -1) @ np.asarray(vector, dtype=np.float32)
    return neighbours.top_k(sims, pks, limit)


def _nearest(owner: Any, scope: str, vector: np.ndarray) -> tuple[SuccessPattern | None, float]:
    found = nearest(SuccessPattern.objects.for_owner(owner).live().filter(scope=scope), vector, 1)
    if not found:
        return None, 0.0
    return SuccessPattern.objects.get(pk=found[0][0]), found[0][1]


def pattern_learn(
    *,
    owner: Any,
    task: Any,
    eval_score: Any,
    design: Any = "",
    code: Any = "",
    output: Any = "",
    inputs: Any = None,
    outputs: Any = None,
    scope: Any = "global",
    on_duplicate: Any = "replace_with_better",
    now: datetime | None = None,
    vector: np.ndarray | None = None,
) -> LearnResult:
    """Store a successful run; a task at cosine >= 0.92 to a live one follows `on_duplicate`.

    replace_with_better (default): the existing pattern (same key) takes the new content when
    the new score beats its current aged score, else it is kept; keep_both: a new pattern;
    skip: the existing one is returned untouched. Replacing detaches the old evaluations (they
    judged other code) so the ranking describes the content the key now holds.
    """
    task = clean_task(task)
    design = validation.text("design", design, limit=validation.MAX_LONG_TEXT_CHARS)
    code = validation.text("code", code, limit=MAX_CODE_CHARS)
    output = validation.text("output", output, limit=validation.MAX_LONG_TEXT_CHARS)
    score = clean_score(eval_score)
    scope = validation.scope(scope)
    on_duplicate = validation.choice("on_duplicate", on_duplicate, ON_DUPLICATE)
    inputs = clean_names("inputs", inputs)
    outputs = clean_names("outputs", outputs)
    validation.check_text(task, design, output, injections=False)
    validation.check_text(code, injections=False)
    now = now or timezone.now()
    vector = embed(task) if vector is None else vector
    content = {
        "task": task,
        "design": design,
        "code": code,
        "output": output,
        "inputs": inputs,
        "outputs": outputs,
    }
    with transaction.atomic():
        existing, similarity = _nearest(owner, scope, vector)
        if existing is not None and similarity >= maths.DUPLICATE_COSINE:
            if on_duplicate == "skip":
                return LearnResult(existing, "skipped", existing.key, similarity)
            if on_duplicate == "replace_with_better":
                existing = SuccessPattern.objects.select_for_update().get(pk=existing.pk)
                if score <= existing.current_score(now):
                    return LearnResult(existing, "kept_existing", existing.key, similarity)
                for name, value in content.items():
                    setattr(existing, name, value)
                existing.embedding = vector
                existing.success_score = score
                existing.score = score
                existing.score_anchor = now
                existing.updated_at = now
                existing.save()
                EvalRecord.objects.filter(pattern=existing).update(
                    pattern=None, note=f"judged the version {existing.key} replaced"
                )
                _learned_score(existing, score, now)
                return LearnResult(existing, "replaced", existing.key, similarity)
        pattern = SuccessPattern.objects.create(
            owner=owner,
            key=new_key("pat"),
            scope=scope,
            success_score=score,
            score=score,
            score_anchor=now,
            embedding=vector,
            created_at=now,
            updated_at=now,
            **content,
        )
        _learned_score(pattern, score, now)
    duplicate = (
        existing.key if existing is not None and similarity >= maths.DUPLICATE_COSINE else ""
    )
    return LearnResult(pattern, "created", duplicate, similarity if duplicate else None)


def _learned_score(pattern: SuccessPattern, score: float, now: datetime) -> EvalRecord:
    """The score a run was learned with, as the first observation of its eval store (the
    caller's judgement, like a refine), so eval-weighted recall ranks by it."""
    return EvalRecord.objects.create(
        owner_id=pattern.owner_id,
        key=new_key("ev"),
        pattern=pattern,
        task=pattern.task,
        source=EvalRecord.Source.EXTERNAL,
        state=EvalRecord.State.DONE,
        score=score,
        note="the score it was learned with",
        created_at=now,
        finished_at=now,
    )


# --- recall ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recalled:
    pattern: SuccessPattern
    similarity: float
    quality_multiplier: float
    recency: float
    score: float
    eval_scores: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Evals:
    """A pattern's finished evaluation scores and their sources, oldest first."""

    scores: list[float] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    @property
    def multiplier(self) -> float:
        return maths.quality_multiplier(self.scores, self.sources)


def evaluations_of(pattern_ids: Iterable[int]) -> dict[int, Evals]:
    """Each pattern's finished evaluations (scores and sources), oldest first (one query)."""
    found: dict[int, Evals] = defaultdict(Evals)
    rows = (
        EvalRecord.objects.filter(
            pattern_id__in=list(pattern_ids), state=EvalRecord.State.DONE, score__isnull=False
        )
        .order_by("created_at", "id")
        .values_list("pattern_id", "score", "source")
    )
    for pattern_id, score, source in rows:
        if pattern_id is not None and score is not None:
            found[pattern_id].scores.append(float(score))
            found[pattern_id].sources.append(source)
    return found


def pattern_recall(
    *,
    owner: Any,
    task: Any,
    limit: Any = 5,
    eval_weighted: bool = True,
    recency_weight: Any = 0.0,
    scope: str | None = None,
    mark_used: bool = False,
    min_similarity: float = 0.0,
    now: datetime | None = None,
    vector: np.ndarray | None = None,
) -> list[Recalled]:
    """The owner's live patterns nearest `task`, ranked by similarity x quality x recency.

    Read-only unless `mark_used`: then the top result counts as reused (survival only).
    """
    task = clean_task(task)
    limit = clean_limit(limit)
    if (
        isinstance(recency_weight, bool)
        or not isinstance(recency_weight, int | float)
        or not 0.0 <= float(recency_weight) <= 1.0
    ):
        raise InvalidInput("recency_weight", "must be a number from 0 to 1")
    now = now or timezone.now()
    vector = embed(task) if vector is None else vector
    rows = SuccessPattern.objects.for_owner(owner).live().filter(embedding__isnull=False)
    if scope:
        rows = rows.filter(scope=validation.scope(scope))
    pool = {pk: sim for pk, sim in nearest(rows, vector, RERANK_POOL) if sim >= min_similarity}
    if not pool:
        return []
    patterns = SuccessPattern.objects.defer("embedding").in_bulk(list(pool))
    evaluations = evaluations_of(pool)
    results: list[Recalled] = []
    for pk, similarity in pool.items():
        pattern = patterns[pk]
        evals = evaluations.get(pk, Evals())
        multiplier = evals.multiplier
        age_days = max(0.0, (now - pattern.updated_at).total_seconds() / 86400.0)
        results.append(
            Recalled(
                pattern=pattern,
                similarity=similarity,
                quality_multiplier=multiplier,
                recency=maths.recency_factor(age_days),
                score=maths.recall_score(
                    similarity=similarity,
                    multiplier=multiplier,
                    age_days=age_days,
                    eval_weighted=eval_weighted,
                    recency_weight=float(recency_weight),
                ),
                eval_scores=evals.scores[-maths.MULTIPLIER_WINDOW :],
            )
        )
    results.sort(key=lambda r: (-r.score, -r.similarity, r.pattern.key))
    results = results[:limit]
    if mark_used and results:
        pattern_mark_reused(owner=owner, key=results[0].pattern.key, now=now)
    return results


# --- survival -------------------------------------------------------------------------------


def pattern_mark_reused(*, owner: Any, key: str, now: datetime | None = None) -> SuccessPattern:
    """+0.1 to the current (aged) success score, capped at 10, re-anchored now; ranking unchanged."""
    now = now or timezone.now()
    with transaction.atomic():
        found = pattern_get(owner=owner, key=key)
        pattern = SuccessPattern.objects.select_for_update().get(pk=found.pk)
        if pattern.status == SuccessPattern.Status.RETIRED:
            raise Conflict(
                f"Pattern {key} is retired; learn it again to use it.", code="pattern_retired"
            )
        new_score = maths.reused_score(pattern.current_score(now))
        pattern.success_score = new_score
        pattern.score = new_score
        pattern.score_anchor = now
        pattern.reuse_count += 1
        pattern.last_used_at = now
        pattern.save(
            update_fields=["success_score", "score", "score_anchor", "reuse_count", "last_used_at"]
        )
    return pattern


@dataclass(frozen=True)
class AgingResult:
    aged: int
    retired: int


def patterns_age(*, now: datetime | None = None, owner: Any | None = None) -> AgingResult:
    """Recompute every live pattern's score from its anchor; retire those below 0.1.

    Idempotent: the score is always score0 x 0.98^weeks from the anchor, never the last
    result aged again, so thirty runs leave what one run leaves.
    """
    now = now or timezone.now()
    rows = SuccessPattern.objects.live()
    if owner is not None:
        rows = rows.filter(owner=owner)
    aged = retired = 0
    for pk, score0, anchor, stored in rows.values_list(
        "pk", "success_score", "score_anchor", "score"
    ).iterator():
        current = maths.aged_score(score0, anchor, now)
        if maths.is_retired(current):
            updated = SuccessPattern.objects.filter(
                pk=pk, status=SuccessPattern.Status.ACTIVE
            ).update(status=SuccessPattern.Status.RETIRED, score=current, retired_at=now)
            retired += updated
        elif abs(current - stored) > 1e-9:
            aged += SuccessPattern.objects.filter(pk=pk, score_anchor=anchor).update(score=current)
    return AgingResult(aged=aged, retired=retired)


# --- ranking --------------------------------------------------------------------------------


def pattern_refine(
    *,
    owner: Any,
    key: str,
    eval_score: Any,
    note: Any = "",
    now: datetime | None = None,
) -> EvalRecord:
    """Append an external score (a CI pass rate, a user's rating) to the pattern's eval store."""
    score = clean_score(eval_score)
    note = validation.text("note", note, limit=300)
    pattern = pattern_get(owner=owner, key=key)
    now = now or timezone.now()
    return EvalRecord.objects.create(
        owner=owner,
        key=new_key("ev"),
        pattern=pattern,
        task=pattern.task,
        source=EvalRecord.Source.EXTERNAL,
        state=EvalRecord.State.DONE,
        score=score,
        note=note,
        created_at=now,
        finished_at=now,
    )


def quality_of(pattern: SuccessPattern) -> tuple[float, list[float]]:
    """The pattern's multiplier and the scores it reads (last five, oldest first)."""
    evals = evaluations_of([pattern.pk]).get(pattern.pk, Evals())
    return evals.multiplier, evals.scores[-maths.MULTIPLIER_WINDOW :]


def recent_patterns(patterns: Sequence[SuccessPattern]) -> dict[int, Evals]:
    return evaluations_of([p.pk for p in patterns])
