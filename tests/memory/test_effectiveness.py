from __future__ import annotations

import pytest

from memory.maths.effectiveness import (
    LEVELS,
    Classification,
    EngramCounts,
    classify,
    effectiveness,
    maintenance_action,
    median,
    next_level,
    previous_level,
    should_deescalate,
    should_escalate_further,
)

TIGHT = 1e-9

# Surfaced counts 20, 15, 3, 4, 8 → sorted 3, 4, 8, 15, 20 → the owner's median is 8.
OWNER = [
    EngramCounts("A", surfaced=20, followed=8, contradicted=1, ignored=1, irrelevant=0),
    EngramCounts("B", surfaced=15, followed=2, contradicted=3, ignored=3, irrelevant=2),
    EngramCounts("C", surfaced=3, followed=4, contradicted=1, ignored=0, irrelevant=0),
    EngramCounts("D", surfaced=4, followed=1, contradicted=2, ignored=2, irrelevant=1),
    EngramCounts("E", surfaced=8, followed=1, contradicted=0, ignored=1, irrelevant=1),
]


def _classification(**overrides: object) -> Classification:
    fields: dict[str, object] = {
        "quadrant": "working",
        "effectiveness": 0.8,
        "often": True,
        "flagged": False,
        "irrelevant_share": 0.0,
        "outcomes": 10,
    }
    fields.update(overrides)
    return Classification(**fields)  # type: ignore[arg-type]


def test_effectiveness_is_followed_over_all_outcomes() -> None:
    # 3 / (3 + 1 + 0 + 0)
    assert effectiveness(3, 1, 0, 0) == pytest.approx(0.75, abs=TIGHT)
    # 2 / (2 + 3 + 3 + 2)
    assert effectiveness(2, 3, 3, 2) == pytest.approx(0.2, abs=TIGHT)


def test_effectiveness_is_none_without_outcomes() -> None:
    assert effectiveness(0, 0, 0, 0) is None


def test_median_of_an_odd_count_is_the_middle_value() -> None:
    assert median([20, 15, 3, 4, 8]) == 8.0


def test_median_of_an_even_count_is_the_mean_of_the_middle_two() -> None:
    assert median([10, 2, 6, 4]) == 5.0


def test_median_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        median([])


def test_it_classifies_an_owners_engrams_into_quadrants() -> None:
    result = classify(OWNER)

    assert {key: value.quadrant for key, value in result.items()} == {
        "A": "working",  # 20 > 8, 8/10 = 0.8
        "B": "leech",  # 15 > 8, 2/10 = 0.2
        "C": "hidden_gem",  # 3 ≤ 8, 4/5 = 0.8
        "D": "noise",  # 4 ≤ 8, 1/6 ≈ 0.167
        "E": "insufficient",  # 3 outcomes
    }


def test_it_reports_the_figures_behind_each_quadrant() -> None:
    result = classify(OWNER)

    assert result["B"] == Classification(
        quadrant="leech",
        effectiveness=pytest.approx(0.2, abs=TIGHT),  # type: ignore[arg-type]
        often=True,
        flagged=True,
        irrelevant_share=pytest.approx(0.2, abs=TIGHT),  # type: ignore[arg-type]
        outcomes=10,
    )
    assert result["D"].effectiveness == pytest.approx(1 / 6, abs=TIGHT)
    assert result["D"].irrelevant_share == pytest.approx(1 / 6, abs=TIGHT)


def test_surfaced_exactly_at_the_median_is_not_often() -> None:
    result = classify(OWNER)

    assert result["E"].often is False
    assert result["B"].often is True


def test_insufficient_engrams_still_count_toward_the_owners_median() -> None:
    candidate = EngramCounts("F", surfaced=9, followed=5, contradicted=0, ignored=0, irrelevant=0)
    without_e = [c for c in OWNER if c.id != "E"]

    # With E (insufficient, surfaced 8): 3, 4, 8, 9, 15, 20 → median 8.5, so 9 is often.
    assert classify([*OWNER, candidate])["F"].often is True
    # Had E been left out: 3, 4, 9, 15, 20 → median 9, so 9 would not be often.
    assert classify([*without_e, candidate])["F"].often is False


def test_under_five_outcomes_is_insufficient_and_never_flagged() -> None:
    counts = [EngramCounts("X", surfaced=50, followed=0, contradicted=4, ignored=0, irrelevant=0)]

    result = classify(counts)["X"]

    assert result.quadrant == "insufficient"
    assert result.effectiveness == 0.0
    assert result.flagged is False


def test_exactly_five_outcomes_is_enough() -> None:
    counts = [EngramCounts("X", surfaced=1, followed=5, contradicted=0, ignored=0, irrelevant=0)]

    assert classify(counts)["X"].quadrant == "hidden_gem"


def test_no_outcomes_is_insufficient_with_no_effectiveness() -> None:
    counts = [EngramCounts("X", surfaced=3, followed=0, contradicted=0, ignored=0, irrelevant=0)]

    result = classify(counts)["X"]

    assert result.quadrant == "insufficient"
    assert result.effectiveness is None
    assert result.irrelevant_share is None


def test_effectiveness_of_exactly_a_half_is_high() -> None:
    counts = [
        EngramCounts("often", surfaced=10, followed=5, contradicted=5, ignored=0, irrelevant=0),
        EngramCounts("rare", surfaced=0, followed=0, contradicted=0, ignored=0, irrelevant=0),
    ]

    assert classify(counts)["often"].quadrant == "working"


def test_it_flags_below_0_4_but_not_at_0_4() -> None:
    counts = [
        EngramCounts("at", surfaced=1, followed=2, contradicted=3, ignored=0, irrelevant=0),
        EngramCounts("below", surfaced=1, followed=3, contradicted=5, ignored=0, irrelevant=0),
    ]

    result = classify(counts)

    assert result["at"].effectiveness == pytest.approx(0.4, abs=TIGHT)
    assert result["at"].flagged is False
    assert result["below"].effectiveness == pytest.approx(0.375, abs=TIGHT)
    assert result["below"].flagged is True


def test_it_honours_custom_thresholds() -> None:
    counts = [EngramCounts("X", surfaced=1, followed=2, contradicted=1, ignored=0, irrelevant=0)]

    result = classify(counts, min_outcomes=3, high=0.7, flag_below=0.7)["X"]

    assert result.quadrant == "noise"  # 2/3 < 0.7
    assert result.flagged is True


def test_an_owner_with_no_engrams_has_no_classifications() -> None:
    assert classify([]) == {}


def test_a_stale_working_engram_gets_a_staleness_review() -> None:
    assert maintenance_action(_classification(), updated_days_ago=90) == "staleness_review"


def test_a_recently_updated_working_engram_needs_nothing() -> None:
    assert maintenance_action(_classification(), updated_days_ago=89.9) is None


@pytest.mark.parametrize(
    ("quadrant", "expected"),
    [
        ("leech", "rewrite_or_escalate"),
        ("hidden_gem", "broaden"),
        ("noise", "retire"),
        ("insufficient", None),
    ],
)
def test_each_quadrant_gets_its_proposal(quadrant: str, expected: str | None) -> None:
    classification = _classification(quadrant=quadrant, irrelevant_share=0.2)

    assert maintenance_action(classification, updated_days_ago=400) == expected


def test_mostly_irrelevant_outcomes_ask_to_refine_keywords_before_retiring() -> None:
    # 4 irrelevant of 5 outcomes = 0.8 > 0.6
    noise = classify(
        [
            EngramCounts("N", surfaced=1, followed=1, contradicted=0, ignored=0, irrelevant=4),
            EngramCounts("M", surfaced=9, followed=0, contradicted=0, ignored=0, irrelevant=0),
        ]
    )["N"]

    assert noise.quadrant == "noise"
    assert maintenance_action(noise, updated_days_ago=0) == "refine_keywords"


def test_mostly_irrelevant_outcomes_ask_to_refine_keywords_before_rewriting_a_leech() -> None:
    leech = _classification(quadrant="leech", effectiveness=0.2, irrelevant_share=0.7)

    assert maintenance_action(leech, updated_days_ago=0) == "refine_keywords"


def test_an_irrelevant_share_of_exactly_0_6_is_not_enough_to_refine() -> None:
    noise = _classification(quadrant="noise", effectiveness=0.2, irrelevant_share=0.6)

    assert maintenance_action(noise, updated_days_ago=0) == "retire"


def test_refining_keywords_needs_five_outcomes() -> None:
    few = _classification(quadrant="insufficient", irrelevant_share=1.0, outcomes=4)

    assert maintenance_action(few, updated_days_ago=0) is None


def test_the_escalation_ladder_has_three_levels_in_order() -> None:
    assert LEVELS == ("advisory", "emphasised", "reminder")


def test_it_escalates_one_level_at_a_time_and_stops_at_reminder() -> None:
    assert next_level("advisory") == "emphasised"
    assert next_level("emphasised") == "reminder"
    assert next_level("reminder") is None


def test_it_de_escalates_one_level_at_a_time_and_stops_at_advisory() -> None:
    assert previous_level("reminder") == "emphasised"
    assert previous_level("emphasised") == "advisory"
    assert previous_level("advisory") is None


def test_it_de_escalates_after_three_windows_at_or_above_the_old_effectiveness() -> None:
    assert should_deescalate([0.2, 0.5, 0.4, 0.45], pre_escalation=0.4) is True


def test_it_does_not_de_escalate_when_one_of_the_last_three_windows_is_below() -> None:
    assert should_deescalate([0.5, 0.5, 0.39, 0.5, 0.5], pre_escalation=0.4) is False


def test_it_does_not_de_escalate_with_fewer_than_three_windows() -> None:
    assert should_deescalate([0.9, 0.9], pre_escalation=0.4) is False


def test_the_next_rung_needs_three_windows_all_below_the_value_before_escalating() -> None:
    assert should_escalate_further([0.1, 0.2, 0.1], 0.25)
    assert not should_escalate_further([0.1, 0.25, 0.1], 0.25)  # one at it
    assert not should_escalate_further([0.1, 0.1], 0.25)  # two windows only
    assert should_escalate_further([0.9, 0.1, 0.1, 0.1], 0.25)  # the last three
