from __future__ import annotations

import datetime as dt

import pytest

from patterns.maths import (
    Stage,
    aged_score,
    cluster_joins,
    cluster_surfaces,
    cluster_weight,
    feedback_words,
    hardcoding_signals,
    is_retired,
    jaccard,
    judges_combine,
    pipeline_validate,
    quality_multiplier,
    recall_score,
    recency_factor,
    reused_score,
    rubric_score,
)

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_the_multiplier_is_075_with_no_evaluation() -> None:
    assert quality_multiplier([]) == 0.75


def test_the_multiplier_reads_the_median_of_the_last_five() -> None:
    # The first two (0, 0) fall out of the window; median of 10, 8, 6, 4, 2 is 6.
    assert quality_multiplier([0, 0, 10, 8, 6, 4, 2]) == pytest.approx(0.5 + 0.5 * 6 / 10)
    assert quality_multiplier([10]) == 1.0
    assert quality_multiplier([0]) == 0.5
    assert quality_multiplier([7, 8]) == pytest.approx(0.5 + 0.5 * 7.5 / 10)


def test_recency_halves_every_thirty_days() -> None:
    assert recency_factor(0) == 1.0
    assert recency_factor(30) == pytest.approx(0.5)
    assert recency_factor(60) == pytest.approx(0.25)
    assert recency_factor(-5) == 1.0


def test_recall_score_combines_similarity_quality_and_recency() -> None:
    assert recall_score(similarity=0.8, multiplier=0.9, age_days=30) == pytest.approx(0.72)
    assert recall_score(
        similarity=0.8, multiplier=0.9, age_days=30, eval_weighted=False
    ) == pytest.approx(0.8)
    assert recall_score(
        similarity=0.8, multiplier=1.0, age_days=30, recency_weight=1.0
    ) == pytest.approx(0.4)
    assert recall_score(
        similarity=0.8, multiplier=1.0, age_days=30, recency_weight=0.5
    ) == pytest.approx(0.8 * 0.75)


def test_aging_is_098_per_week_from_the_anchor() -> None:
    assert aged_score(8.0, T0, T0 + dt.timedelta(weeks=1)) == pytest.approx(8 * 0.98)
    assert aged_score(8.0, T0, T0 + dt.timedelta(weeks=10)) == pytest.approx(8 * 0.98**10)


def test_thirty_aging_runs_equal_one() -> None:
    now = T0 + dt.timedelta(weeks=30)
    once = aged_score(8.0, T0, now)
    # Each run recomputes from the anchor, whatever the intermediate results were.
    for day in range(30):
        aged_score(8.0, T0, T0 + dt.timedelta(weeks=day))
    assert aged_score(8.0, T0, now) == once == pytest.approx(8 * 0.98**30)


def test_a_pattern_retires_below_01() -> None:
    assert is_retired(0.099)
    assert not is_retired(0.1)
    # 1.0 · 0.98^weeks < 0.1 first at week 114.
    assert not is_retired(aged_score(1.0, T0, T0 + dt.timedelta(weeks=113)))
    assert is_retired(aged_score(1.0, T0, T0 + dt.timedelta(weeks=114)))


def test_reuse_adds_01_capped_at_10() -> None:
    assert reused_score(5.0) == pytest.approx(5.1)
    assert reused_score(9.95) == 10.0
    assert reused_score(10.0) == 10.0


def test_judges_median_spread_and_the_worst() -> None:
    verdict = judges_combine([7, 9, 6.5])
    assert verdict.median == 7
    assert verdict.spread == pytest.approx(2.5)
    assert verdict.flagged
    assert verdict.worst == 2
    calm = judges_combine([7, 8, 8.5])
    assert calm.spread == 1.5
    assert not calm.flagged  # flagged only above 1.5
    with pytest.raises(ValueError, match="no judge"):
        judges_combine([])


def test_feedback_clusters_above_jaccard_04() -> None:
    a = feedback_words("missing error handling for the network timeout")
    b = feedback_words("no error handling for network timeout")
    assert a == {"missing", "error", "handling", "network", "timeout"}
    assert jaccard(a, b) == pytest.approx(4 / 5)
    assert cluster_joins(a, b)
    assert not cluster_joins({"a1", "b1"}, {"a1", "c1", "d1", "e1", "f1"})  # 1/6
    # Exactly 0.4 is not above it.
    assert jaccard({"w1", "w2"}, {"w1", "w2", "w3", "w4", "w5"}) == 0.4
    assert not cluster_joins({"w1", "w2"}, {"w1", "w2", "w3", "w4", "w5"})


def test_clusters_surface_at_two_and_decay_ten_percent_a_week() -> None:
    assert not cluster_surfaces(1, T0, T0)
    assert cluster_surfaces(2, T0, T0 + dt.timedelta(days=6))
    assert cluster_weight(2, T0, T0 + dt.timedelta(weeks=1)) == pytest.approx(1.8)
    assert not cluster_surfaces(2, T0, T0 + dt.timedelta(weeks=1))
    assert cluster_weight(3, T0, T0 + dt.timedelta(weeks=3)) == pytest.approx(3 * 0.9**3)
    assert cluster_surfaces(3, T0, T0 + dt.timedelta(weeks=3))
    assert not cluster_surfaces(3, T0, T0 + dt.timedelta(weeks=4))


def test_a_valid_pipeline_has_no_errors() -> None:
    stages = [
        Stage("parse", ("raw",), ("ast",)),
        Stage("check", ("ast",), ("report",)),
        Stage("render", ("ast", "report"), ("html",)),
    ]
    assert pipeline_validate(stages, given={"raw"}) == []


def test_a_missing_input_names_the_stage_and_the_field() -> None:
    errors = pipeline_validate([Stage("parse", ("raw",), ("ast",))], given=())
    assert [(e.stage, e.field) for e in errors] == [("parse", "raw")]
    assert "neither given nor produced" in errors[0].message


def test_an_input_made_later_is_out_of_order() -> None:
    stages = [Stage("render", ("ast",), ("html",)), Stage("parse", ("raw",), ("ast",))]
    errors = pipeline_validate(stages, given={"raw"})
    assert [(e.stage, e.field) for e in errors] == [("render", "ast")]
    assert "later stage 'parse'" in errors[0].message


def test_a_cycle_is_reported_for_every_stage_on_it() -> None:
    stages = [Stage("a", ("y",), ("x",)), Stage("b", ("x",), ("y",))]
    errors = pipeline_validate(stages)
    assert [(e.stage, e.field) for e in errors] == [("a", "y")]
    assert "cycle" in errors[0].message
    three = [Stage("a", ("z",), ("x",)), Stage("b", ("x",), ("y",)), Stage("c", ("y",), ("z",))]
    assert [(e.stage, e.field) for e in pipeline_validate(three)] == [("a", "z")]
    assert "cycle: a → b → c" in pipeline_validate(three)[0].message


def test_a_stage_that_needs_its_own_output_is_refused() -> None:
    errors = pipeline_validate([Stage("loop", ("x",), ("x",))])
    assert [(e.stage, e.field) for e in errors] == [("loop", "x")]


def test_duplicate_stage_names_are_refused() -> None:
    stages = [Stage("a", (), ("x",)), Stage("a", ("x",), ("y",))]
    assert [(e.stage, e.field) for e in pipeline_validate(stages)] == [("a", "name")]


HARDCODED = """
def solve(n):
    if n == 1:
        return 1
    if n == 2:
        return 4
    if n == 3:
        return 9
    return 0
"""

HONEST = '''
def square(n):
    """Square a number."""
    return n * n


def test_square():
    assert square(3) == 9
'''


def test_hardcoding_is_detected_from_literal_branches_and_expected_outputs() -> None:
    assert hardcoding_signals(HARDCODED) == [
        "3 branches map a literal input straight to a literal output"
    ]
    assert hardcoding_signals('def f():\n    return "42 apples"\n', ["42 apples"]) == [
        "the expected output '42 apples' is returned as a literal"
    ]
    assert hardcoding_signals(HONEST, ["9"]) == []


def test_the_rubric_scores_what_it_can_check() -> None:
    honest = rubric_score(HONEST)
    assert honest.score == 10.0
    assert honest.hardcoding == ()
    cheat = rubric_score(HARDCODED)
    # non-empty 2 + structured 2; no comment, tests void, hard-coded.
    assert cheat.score == 4.0
    assert "hard-codes" in cheat.feedback
    empty = rubric_score("   ")
    assert empty.score == 0.0
    assert "there is no code" in empty.feedback
