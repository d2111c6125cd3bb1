from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exchange.fitness import (
    DUPLICATE_COSINE,
    MIN_FITNESS,
    SOURCE_CAP_SHARE,
    TRIAL_DAYS,
    fitness,
    source_cap_allows,
    trial_outcome,
)


def score(**overrides: float) -> float:
    inputs = {
        "adoption": 0.0,
        "diversity": 0.0,
        "rs_avg": 0.0,
        "age_days": 0.0,
        "contradiction_rate": 1.0,
    }
    inputs.update(overrides)
    return fitness(**inputs)


def test_constants_match_the_design() -> None:
    assert (MIN_FITNESS, TRIAL_DAYS, SOURCE_CAP_SHARE, DUPLICATE_COSINE) == (0.3, 30, 0.20, 0.9)


def test_everything_at_zero_scores_zero() -> None:
    assert score() == 0.0


def test_everything_saturated_scores_exactly_one() -> None:
    assert score(adoption=7, diversity=9, rs_avg=1, age_days=365, contradiction_rate=0) == 1.0


def test_reach_saturates_at_adoption_times_diversity_63() -> None:
    # log2(1 + 7·9) / 6 = log2(64) / 6 = 1 -> 0.4
    assert score(adoption=7, diversity=9) == pytest.approx(0.4)
    assert score(adoption=700, diversity=9) == pytest.approx(0.4)


def test_reach_grows_logarithmically() -> None:
    # log2(1 + 1·1) / 6 = 1/6 -> 0.4 / 6
    assert score(adoption=1, diversity=1) == pytest.approx(0.4 / 6)
    # log2(1 + 3·1) / 6 = 2/6 -> 0.4 / 3
    assert score(adoption=3, diversity=1) == pytest.approx(0.4 / 3)
    # log2(1 + 15·1) / 6 = 4/6
    assert score(adoption=5, diversity=3) == pytest.approx(0.4 * 4 / 6)


def test_reach_needs_both_adoption_and_diversity() -> None:
    assert score(adoption=100, diversity=0) == 0.0
    assert score(adoption=0, diversity=100) == 0.0


def test_retrieval_strength_weighs_three_tenths() -> None:
    assert score(rs_avg=1) == pytest.approx(0.3)
    assert score(rs_avg=0.5) == pytest.approx(0.15)


def test_age_saturates_at_one_year() -> None:
    assert score(age_days=365) == pytest.approx(0.2)
    assert score(age_days=3650) == pytest.approx(0.2)
    # ln(1 + 18.130495168) ≈ ln(19.130495168) = ln(366) / 2
    assert score(age_days=math.sqrt(366) - 1) == pytest.approx(0.1)


def test_contradiction_rate_weighs_one_tenth() -> None:
    assert score(contradiction_rate=0) == pytest.approx(0.1)
    assert score(contradiction_rate=0.25) == pytest.approx(0.075)


def test_a_mixed_profile_matches_the_hand_computed_value() -> None:
    # 0.4·(2/6) + 0.3·0.8 + 0.2·1 + 0.1·0.5 = 0.1333… + 0.24 + 0.2 + 0.05
    value = score(adoption=3, diversity=1, rs_avg=0.8, age_days=365, contradiction_rate=0.5)

    assert value == pytest.approx(0.62333333333)


def test_a_new_lightly_adopted_item_falls_below_the_import_threshold() -> None:
    # 0.4/6 + 0.3·0.5 + 0 + 0.1·0.8 = 0.29667
    value = score(adoption=1, diversity=1, rs_avg=0.5, age_days=0, contradiction_rate=0.2)

    assert value == pytest.approx(0.2966666667)
    assert value < MIN_FITNESS


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"age_days": -10}, 0.0),
        ({"rs_avg": -1}, 0.0),
        ({"rs_avg": 5}, 0.3),
        ({"contradiction_rate": -2}, 0.1),
        ({"contradiction_rate": 7}, 0.0),
        ({"adoption": -5, "diversity": -5}, 0.0),
        ({"adoption": math.inf, "diversity": 0}, 0.0),
        ({"adoption": math.inf, "diversity": 1}, 0.4),
        ({"rs_avg": math.nan}, 0.0),
        ({"age_days": math.nan}, 0.0),
    ],
)
def test_out_of_range_inputs_are_clamped(overrides: dict[str, float], expected: float) -> None:
    assert score(**overrides) == pytest.approx(expected)


finite_or_not = st.floats(allow_nan=True, allow_infinity=True)


@given(
    adoption=finite_or_not,
    diversity=finite_or_not,
    rs_avg=finite_or_not,
    age_days=finite_or_not,
    contradiction_rate=finite_or_not,
)
def test_fitness_is_always_within_the_unit_interval(
    adoption: float, diversity: float, rs_avg: float, age_days: float, contradiction_rate: float
) -> None:
    value = fitness(
        adoption=adoption,
        diversity=diversity,
        rs_avg=rs_avg,
        age_days=age_days,
        contradiction_rate=contradiction_rate,
    )

    assert 0.0 <= value <= 1.0


@pytest.mark.parametrize(
    ("from_key", "active", "allowed"),
    [
        (0, 0, True),
        (0, 10, True),
        (1, 5, True),
        (2, 10, True),
        (2, 9, False),
        (20, 100, True),
        (21, 100, False),
        (1, 1, False),
        (1, 0, False),
    ],
)
def test_the_source_cap_allows_at_most_one_fifth(from_key: int, active: int, allowed: bool) -> None:
    assert source_cap_allows(from_key, active) is allowed


def test_the_source_cap_refuses_negative_counts() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        source_cap_allows(-1, 10)


@pytest.mark.parametrize(
    ("followed", "positive", "contradicted", "negative", "outcome"),
    [
        (1, 0, 0, 0, "promote"),
        (0, 1, 0, 0, "promote"),
        (1, 1, 1, 1, "promote"),
        (2, 0, 1, 1, "promote"),
        (1, 0, 2, 0, "retire"),
        (0, 1, 0, 2, "retire"),
        (0, 0, 0, 0, "retire"),
        (0, 0, 1, 0, "retire"),
    ],
)
def test_a_trial_promotes_only_reinforced_items_with_net_non_negative_signal(
    followed: int, positive: int, contradicted: int, negative: int, outcome: str
) -> None:
    assert trial_outcome(followed, positive, contradicted, negative) == outcome


def test_a_trial_refuses_negative_counts() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        trial_outcome(1, 0, -1, 0)


def test_the_pure_exchange_modules_do_not_import_django() -> None:
    code = (
        "import sys\n"
        "import exchange.canonical, exchange.crypto, exchange.fitness, exchange.packet\n"
        "assert not [m for m in sys.modules if m == 'django' or m.startswith('django.')]\n"
    )

    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )

    assert result.returncode == 0, result.stderr
