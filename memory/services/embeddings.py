"""Vectors from an older embedding model: find them and embed their statements again.

Every engram stores the id of the model that embedded it (`Engram.embedding_model`). After the
model changes, old vectors still sit close to the new ones (the integer graph and the float
graph of the same weights agree to cosine ~0.99), so search keeps working while they are
moved: the hourly `engram.reembed_stale` job moves a bounded number per run and
`manage.py engram_reembed` moves all of them at once, with a progress bar.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet

from memory.models import Engram
from memory.services.engrams import embedding_model_id

DEFAULT_BATCH = 64
# One hourly run re-embeds at most this many (about ten seconds of CPU at ~500 statements/s).
PERIODIC_LIMIT = 5000


def stale(owner: Any = None) -> QuerySet[Engram]:
    """Engrams without a vector or with one from another model than the running one."""
    queryset = Engram.objects.filter(
        ~Q(embedding_model=embedding_model_id()) | Q(embedding__isnull=True)
    )
    if owner is not None:
        queryset = queryset.filter(owner=owner)
    return queryset


def reembed(
    queryset: QuerySet[Engram],
    *,
    batch: int = DEFAULT_BATCH,
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Embed the statements of `queryset` again, `batch` rows per transaction; returns the count.

    Rows go in primary-key order (keyset pagination: a re-embedded row may leave the queryset).
    Embedding runs outside the transaction; a row whose statement changed meanwhile is left for
    the next run rather than given the vector of its old text.
    """
    from lib.embedder import get_embedder

    model_id = embedding_model_id()
    embedder = get_embedder()
    done, last_pk = 0, 0
    while limit is None or done < limit:
        size = batch if limit is None else min(batch, limit - done)
        rows = list(
            queryset.filter(pk__gt=last_pk).order_by("pk").values_list("pk", "statement")[:size]
        )
        if not rows:
            break
        vectors = embedder.embed([statement for _, statement in rows])
        wanted = {
            pk: (statement, vector) for (pk, statement), vector in zip(rows, vectors, strict=True)
        }
        with transaction.atomic():
            current = Engram.objects.select_for_update().filter(pk__in=wanted).only("statement")
            changed = []
            for engram in current:
                statement, vector = wanted[engram.pk]
                if engram.statement == statement:
                    engram.embedding = vector
                    engram.embedding_model = model_id
                    changed.append(engram)
            Engram.objects.bulk_update(changed, ["embedding", "embedding_model"])
        last_pk = rows[-1][0]
        done += len(changed)
        if progress is not None:
            progress(len(rows))
    return done
