"""The per-key allowance behind the single-source cap (pure)."""

from __future__ import annotations

import pytest

from exchange.fitness import SOURCE_CAP_MIN_ITEMS, source_cap_allowance, source_cap_allows


@pytest.mark.parametrize(
    ("active", "allowance"),
    [(0, 5), (1, 5), (24, 5), (25, 5), (29, 5), (30, 6), (40, 8), (100, 20), (1001, 200)],
)
def test_a_key_may_place_a_fifth_of_the_active_store_but_at_least_five(
    active: int, allowance: int
) -> None:
    assert SOURCE_CAP_MIN_ITEMS == 5
    assert source_cap_allowance(active) == allowance


def test_above_the_floor_the_allowance_agrees_with_the_share_rule() -> None:
    for active in range(25, 400):
        allowed = source_cap_allowance(active)
        assert source_cap_allows(allowed, active)
        assert not source_cap_allows(allowed + 1, active)


def test_the_allowance_refuses_negative_counts() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        source_cap_allowance(-1)
