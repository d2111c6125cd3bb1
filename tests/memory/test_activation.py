from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memory.maths import activation
from memory.maths.activation import (
    FeedbackResult,
    apply_feedback,
    band,
    count_active_days,
    decay_rate,
    effective_rs,
    lifecycle_status_for_band,
    storage_strength_after_positive,
    storage_strength_after_reconsolidation,
)

TIGHT = 1e-9


def test_it_decays_at_0_0375_per_day_for_middling_weight_and_no_storage_strength() -> None:
    # 0.05 · (1 - 5/20) · (1 - 0.5·0) = 0.05 · 0.75 · 1
    assert decay_rate(5, 0.0) == pytest.approx(0.0375, abs=TIGHT)


def test_it_decays_at_0_0125_per_day_for_top_weight_and_full_storage_strength() -> None:
    # 0.05 · (1 - 10/20) · (1 - 0.5·1) = 0.05 · 0.5 · 0.5
    assert decay_rate(10, 1.0) == pytest.approx(0.0125, abs=TIGHT)


def test_it_scales_the_decay_rate_with_the_base_setting() -> None:
    # 0.1 · 0.75 · (1 - 0.5·0.2) = 0.1 · 0.75 · 0.9
    assert decay_rate(5, 0.2, base=0.1) == pytest.approx(0.0675, abs=TIGHT)


def test_it_computes_effective_rs_after_ten_active_days() -> None:
    # λ = 0.05·0.75·0.9 = 0.03375; 0.05 + 0.75·exp(-0.3375) = 0.05 + 0.75·0.7135520 = 0.5851640
    assert effective_rs(0.8, 10, 5, 0.2) == pytest.approx(0.5851640, abs=1e-7)


def test_it_computes_effective_rs_with_no_storage_strength() -> None:
    # λ = 0.0375; 0.05 + 0.75·exp(-0.375) = 0.05 + 0.75·0.6872893 = 0.5654670
    assert effective_rs(0.8, 10, 5, 0.0) == pytest.approx(0.5654670, abs=1e-7)


def test_it_gives_the_same_value_when_rate_and_days_trade_off() -> None:
    # λ = 0.0125 over 30 days is λ·d = 0.375, the same as 0.0375 over 10 days.
    assert effective_rs(0.8, 30, 10, 1.0) == pytest.approx(0.5654670, abs=1e-7)


def test_it_returns_the_stored_value_with_no_active_days() -> None:
    assert effective_rs(0.8, 0, 5, 0.0) == pytest.approx(0.8, abs=TIGHT)


def test_it_approaches_the_floor_after_a_long_time() -> None:
    # λ = 0.05·0.95·0.5 = 0.02375; 0.05 + 0.95·exp(-0.02375·365) = 0.0501633
    assert effective_rs(1.0, 365, 1, 1.0) == pytest.approx(0.0501633, abs=1e-7)
    assert effective_rs(1.0, 100_000, 1, 1.0) == pytest.approx(0.05, abs=TIGHT)


def test_it_raises_a_value_below_the_floor_toward_the_floor() -> None:
    # 0.05 + (0 - 0.05)·exp(-0.375) = 0.05 - 0.05·0.6872893 = 0.0156355
    assert effective_rs(0.0, 10, 5, 0.0) == pytest.approx(0.0156355, abs=1e-7)


def test_it_honours_a_custom_floor() -> None:
    # 0.1 + (0.8 - 0.1)·exp(0) = 0.8 at d=0; at large d the floor itself
    assert effective_rs(0.8, 0, 5, 0.0, floor=0.1) == pytest.approx(0.8, abs=TIGHT)
    assert effective_rs(0.8, 10_000, 5, 0.0, floor=0.1) == pytest.approx(0.1, abs=TIGHT)


def test_it_clamps_effective_rs_to_the_unit_interval() -> None:
    assert effective_rs(1.5, 0, 5, 0.0) == 1.0
    assert effective_rs(-0.5, 0, 5, 0.0) == 0.0


def test_it_rejects_negative_active_days() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        effective_rs(0.8, -1, 5, 0.0)


def test_it_counts_distinct_active_dates_after_the_anchor_day_up_to_today() -> None:
    anchor = datetime(2025, 3, 1, 15, 0, tzinfo=UTC)
    now = datetime(2025, 3, 10, 9, 0, tzinfo=UTC)
    days = [
        date(2025, 2, 27),  # before the anchor
        date(2025, 3, 1),  # the anchor's own day
        date(2025, 3, 2),
        date(2025, 3, 2),  # duplicate
        date(2025, 3, 5),
        date(2025, 3, 10),  # today counts
        date(2025, 3, 11),  # after now
    ]

    assert count_active_days(days, anchor, now) == 3.0


def test_it_counts_no_days_for_a_scope_left_alone_for_months() -> None:
    anchor = datetime(2025, 1, 1, tzinfo=UTC)
    now = datetime(2025, 4, 1, tzinfo=UTC)

    assert count_active_days([date(2024, 12, 30), date(2025, 1, 1)], anchor, now) == 0.0


def test_it_reduces_datetimes_in_the_activity_list_to_their_dates() -> None:
    anchor = datetime(2025, 3, 1, tzinfo=UTC)
    now = datetime(2025, 3, 3, tzinfo=UTC)
    days = [datetime(2025, 3, 2, 8, tzinfo=UTC), datetime(2025, 3, 2, 20, tzinfo=UTC)]

    assert count_active_days(days, anchor, now) == 1.0


def test_it_counts_nothing_when_now_precedes_the_anchor() -> None:
    anchor = datetime(2025, 3, 5, tzinfo=UTC)
    now = datetime(2025, 3, 1, tzinfo=UTC)

    assert count_active_days([date(2025, 3, 3)], anchor, now) == 0.0


def test_positive_feedback_adds_0_05_reanchors_and_raises_storage_strength() -> None:
    result = apply_feedback(0.5, "positive")

    assert result.rs == pytest.approx(0.55, abs=TIGHT)
    assert result.reanchor is True
    assert result.storage_strength_delta == 0.05


def test_positive_feedback_caps_at_one() -> None:
    assert apply_feedback(0.97, "positive").rs == 1.0


def test_negative_feedback_subtracts_0_10_and_reanchors_without_storage_strength() -> None:
    result = apply_feedback(0.5, "negative")

    assert result.rs == pytest.approx(0.4, abs=TIGHT)
    assert result.reanchor is True
    assert result.storage_strength_delta == 0.0


def test_negative_feedback_floors_at_zero() -> None:
    assert apply_feedback(0.05, "negative").rs == 0.0


def test_neutral_feedback_changes_nothing() -> None:
    assert apply_feedback(0.42, "neutral") == FeedbackResult(
        rs=0.42, reanchor=False, storage_strength_delta=0.0
    )


def test_it_rejects_an_unknown_feedback_signal() -> None:
    with pytest.raises(ValueError, match="unknown feedback signal"):
        apply_feedback(0.5, "great")  # type: ignore[arg-type]


def test_storage_strength_rises_0_05_per_positive_signal_up_to_one() -> None:
    assert storage_strength_after_positive(0.2) == pytest.approx(0.25, abs=TIGHT)
    assert storage_strength_after_positive(0.98) == 1.0


def test_reconsolidation_doubles_storage_strength_up_to_one() -> None:
    assert storage_strength_after_reconsolidation(0.2) == pytest.approx(0.4, abs=TIGHT)
    assert storage_strength_after_reconsolidation(0.6) == 1.0


def test_reconsolidation_seeds_zero_storage_strength_at_0_3() -> None:
    assert storage_strength_after_reconsolidation(0.0) == 0.3


@pytest.mark.parametrize(
    ("rs_eff", "expected"),
    [
        (1.0, "active"),
        (0.5000001, "active"),
        (0.5, "fading"),
        (0.4, "fading"),
        (0.3, "fading"),
        (0.2999999, "dormant"),
        (0.1, "dormant"),
        (0.0999999, "retire"),
        (0.0, "retire"),
    ],
)
def test_it_puts_effective_rs_in_the_design_bands(rs_eff: float, expected: str) -> None:
    assert band(rs_eff) == expected


@pytest.mark.parametrize(
    ("status", "current_band", "expected"),
    [
        ("active", "active", "active"),
        ("active", "fading", "active"),
        ("active", "dormant", "dormant"),
        ("active", "retire", "dormant"),
        ("dormant", "active", "active"),
        ("dormant", "fading", "active"),
        ("dormant", "dormant", "dormant"),
        ("dormant", "retire", "dormant"),
        ("candidate", "retire", "candidate"),
        ("candidate", "active", "candidate"),
        ("retired", "active", "retired"),
        ("retired", "dormant", "retired"),
    ],
)
def test_it_moves_lifecycle_status_between_active_and_dormant_only(
    status: str, current_band: str, expected: str
) -> None:
    assert lifecycle_status_for_band(status, current_band) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("current_band", ["active", "fading", "dormant", "retire"])
@pytest.mark.parametrize("status", ["candidate", "active", "dormant", "retired"])
def test_the_status_move_is_idempotent(status: str, current_band: str) -> None:
    once = lifecycle_status_for_band(status, current_band)  # type: ignore[arg-type]

    assert lifecycle_status_for_band(once, current_band) == once  # type: ignore[arg-type]


def test_rs_series_steps_at_each_anchor_and_decays_every_future_day() -> None:
    from datetime import timedelta as td

    t0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    anchors = [(t0, 0.7), (t0 + td(days=4), 0.9)]
    active = [date(2026, 3, d) for d in (2, 3, 4, 5, 6)]
    past, future = activation.rs_series(
        anchors,
        active,
        start=t0,
        now=t0 + td(days=6),
        emotional_weight=5.0,
        storage_strength=0.0,
        floor=0.05,
        base=0.05,
        past_points=6,
        future_points=3,
        future_days=3,
    )
    before_step = activation.effective_rs(0.7, 4, 5.0, 0.0, floor=0.05, base=0.05)
    assert (anchors[1][0], pytest.approx(before_step)) in past
    assert (anchors[1][0], 0.9) in past  # the stored value right after the step
    assert past[-1][1] == pytest.approx(
        activation.effective_rs(0.9, 1, 5.0, 0.0, floor=0.05, base=0.05)
    )
    values = [rs for _, rs in future]
    assert values == sorted(values, reverse=True) and values[0] == pytest.approx(past[-1][1])
