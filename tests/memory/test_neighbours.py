"""The one dense nearest-neighbour helper: best first, ties by id, any k."""

from __future__ import annotations

import numpy as np

from memory.maths import neighbours


def test_top_k_orders_best_first_and_breaks_ties_by_the_smaller_id() -> None:
    scores = np.array([0.2, 0.9, 0.5, 0.9, -0.1])
    ids = np.array([50, 40, 30, 20, 10])

    assert neighbours.top_k(scores, ids, 3) == [(20, 0.9), (40, 0.9), (30, 0.5)]


def test_top_k_with_k_at_or_beyond_the_rows_returns_every_row_and_none_for_zero() -> None:
    scores = np.array([0.1, 0.3])
    ids = np.array([7, 8])

    assert neighbours.top_k(scores, ids, 5) == [(8, 0.3), (7, 0.1)]
    assert neighbours.top_k(scores, ids, 0) == []
    assert neighbours.top_k(np.array([]), np.array([], dtype=np.int64), 3) == []


def test_top_k_agrees_with_a_full_sort_on_random_scores() -> None:
    rng = np.random.default_rng(3)
    scores = rng.random(500)
    ids = rng.permutation(500)

    expected = sorted(zip(ids.tolist(), scores.tolist(), strict=True), key=lambda p: (-p[1], p[0]))
    assert neighbours.top_k(scores, ids, 17) == expected[:17]


def test_nearest_row_finds_the_closest_unit_row_and_says_so_when_there_is_none() -> None:
    matrix = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)

    best, similarity = neighbours.nearest_row(matrix, np.array([0.0, 1.0], dtype=np.float32))

    assert best == 1
    assert similarity == 1.0
    assert neighbours.nearest_row(np.zeros((0, 2), dtype=np.float32), np.ones(2)) == (-1, -1.0)
