"""Dense nearest neighbours over vectors already in memory (pure, numpy only).

The one implementation of "the k best by cosine" that the engram index (`memory.search`),
success patterns (`patterns.services.store`) and the dialectic's clustering use: scores are
dot products of unit vectors, ties go to the smaller id so results never depend on row order.
"""

from __future__ import annotations

import numpy as np


def top_k(scores: np.ndarray, ids: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The `k` best `(id, score)` pairs, best first; equal scores by ascending id.

    `scores[i]` belongs to `ids[i]`. Linear in the number of scores (a partial sort picks the
    k candidates, only those are sorted).
    """
    n = len(scores)
    k = min(k, n)
    if k <= 0:
        return []
    scores = np.asarray(scores)
    ids = np.asarray(ids)
    top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
    order = top[np.lexsort((ids[top], -scores[top]))]
    return [(int(ids[i]), float(scores[i])) for i in order]


def nearest_row(matrix: np.ndarray, vector: np.ndarray) -> tuple[int, float]:
    """The row of `matrix` (unit rows) nearest `vector` and its cosine; (-1, -1.0) when empty."""
    if len(matrix) == 0:
        return -1, -1.0
    sims = matrix @ vector
    best = int(np.argmax(sims))
    return best, float(sims[best])
