"""The dialectic formulas with DESIGN's numbers ("Dialectic consolidation" and "delivery")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from dialectic import maths

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_an_observation_joins_a_cluster_only_above_cosine_075() -> None:
    assert maths.joins_cluster(0.76)
    assert not maths.joins_cluster(0.75)
    assert not maths.joins_cluster(0.5)


def test_cohesion_is_the_mean_pairwise_cosine_and_the_running_sum_gives_the_same() -> None:
    vectors = [unit(1, 0, 0), unit(1, 1, 0), unit(0, 1, 0)]
    # pairs: cos45 = .7071, 0, cos45 = .7071 -> mean .4714
    assert maths.cohesion_of(vectors) == pytest.approx((0.70710678 * 2) / 3, abs=1e-6)
    total = np.sum(vectors, axis=0)
    assert maths.cohesion_from_sum(total, 3) == pytest.approx(maths.cohesion_of(vectors), abs=1e-6)
    assert maths.cohesion_of([unit(1, 0)]) == 1.0


@pytest.mark.parametrize(
    ("n", "cohesion", "is_thesis"),
    [(3, 0.7, True), (2, 0.99, False), (3, 0.69, False), (12, 0.95, True)],
)
def test_a_thesis_needs_3_observations_and_cohesion_07(
    n: int, cohesion: float, is_thesis: bool
) -> None:
    assert maths.is_thesis(n, cohesion) is is_thesis


@pytest.mark.parametrize(
    ("n", "cohesion", "conf"), [(3, 0.8, 0.24), (5, 0.9, 0.45), (10, 0.8, 0.8), (25, 0.8, 0.8)]
)
def test_thesis_confidence_is_min_1_n_over_10_times_cohesion(
    n: int, cohesion: float, conf: float
) -> None:
    assert maths.thesis_confidence(n, cohesion) == pytest.approx(conf)


def test_the_expected_sequence_is_the_most_common_one() -> None:
    seqs = [["Glob", "Read"], ["Grep", "Read"], ["Grep", "Read"], ["Read"]]
    assert maths.expected_sequence(seqs) == ("Grep", "Read")
    assert maths.expected_sequence([]) == ()


def test_divergence_is_one_minus_normalised_levenshtein_similarity() -> None:
    expected = ["Glob", "Grep", "Read", "Read", "Read"]
    assert maths.divergence(expected, expected) == 0.0
    # one substitution in five: similarity 0.8, D 0.2 (not a contradiction)
    assert maths.divergence(["Glob", "Grep", "Read", "Read", "Edit"], expected) == pytest.approx(
        0.2
    )
    # Bash, Read, Edit, Bash, Read: four edits of five -> D 0.8
    assert maths.divergence(["Bash", "Read", "Edit", "Bash", "Read"], expected) == pytest.approx(
        0.8
    )


@pytest.mark.parametrize(
    ("similarity", "d", "contradicts"),
    [(0.51, 0.31, True), (0.5, 0.9, False), (0.9, 0.3, False), (0.6, 0.8, True)],
)
def test_a_contradiction_needs_cosine_above_05_and_d_above_03(
    similarity: float, d: float, contradicts: bool
) -> None:
    assert maths.contradicts(similarity, d) is contradicts


def test_antithesis_weights_halve_every_14_days() -> None:
    assert maths.recency_weight(NOW, NOW) == 1.0
    assert maths.recency_weight(NOW - timedelta(days=14), NOW) == pytest.approx(0.5)
    assert maths.recency_weight(NOW - timedelta(days=28), NOW) == pytest.approx(0.25)


def test_the_antithesis_weight_is_the_recency_weighted_share_of_the_evidence() -> None:
    fresh = [NOW] * 2
    old_support = [NOW - timedelta(days=14)] * 4  # weigh 0.5 each: 2.0
    assert maths.antithesis_weight(fresh, old_support, NOW) == pytest.approx(0.5)
    assert maths.antithesis_weight([], [NOW], NOW) == 0.0


def test_synthesis_triggers_at_04_times_conf() -> None:
    assert maths.synthesis_triggered(0.32, 0.8)
    assert not maths.synthesis_triggered(0.319, 0.8)


def test_q_is_coverage_times_consistency_times_parsimony_and_accepts_above_06() -> None:
    # 4 antitheses, 3 inside C; 10 supporting, 1 inside C; one feature (no extra condition)
    quality = maths.quality(
        antitheses_matched=3, antitheses=4, supporting_matched=1, supporting=10, conditions=0
    )
    assert quality.coverage == pytest.approx((3 + 9) / 14)
    assert quality.consistency == pytest.approx(3 / 4)
    assert quality.parsimony == 1.0
    assert quality.q == pytest.approx(12 / 14 * 0.75)
    assert quality.accepted  # 0.643 > 0.6
    two = maths.quality(
        antitheses_matched=4, antitheses=4, supporting_matched=0, supporting=10, conditions=1
    )
    assert two.parsimony == 0.5
    assert two.q == pytest.approx(0.5)
    assert not two.accepted


def test_parsimony_is_one_over_one_plus_conditions() -> None:
    assert [maths.parsimony(c) for c in (0, 1, 3)] == [1.0, 0.5, 0.25]


def test_complexity_weights_length_tools_conditional_and_procedural() -> None:
    assert maths.complexity(length=1, tools=1, conditional=True, procedural=True) == 1.0
    assert maths.complexity(length=0.5, tools=0.5, conditional=False, procedural=True) == (
        pytest.approx(0.5)
    )
    assert maths.length_score(250) == 0.5
    assert maths.tools_score(3) == 0.75


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"confidence": 0.49}, "none"),
        ({"exemplars": 1}, "none"),
        ({"imperative": True, "procedural": False}, "rule"),
        ({"procedural": True, "diversity": 3, "k": 0.51}, "skill"),
        ({"imperative": True, "procedural": True, "diversity": 3, "k": 0.5}, "rule_with_skill"),
        ({"procedural": True, "diversity": 2, "k": 0.9}, "rule"),
        ({}, "rule"),
    ],
)
def test_the_output_type_follows_designs_order(kwargs: dict[str, object], expected: str) -> None:
    args: dict[str, object] = {
        "confidence": 0.8,
        "exemplars": 5,
        "imperative": False,
        "procedural": False,
        "diversity": 1,
        "k": 0.2,
        **kwargs,
    }
    assert maths.output_type(**args).output_type == expected  # type: ignore[arg-type]


def test_only_the_default_rule_asks_for_the_second_level_refinement() -> None:
    unclear = maths.output_type(
        confidence=0.8, exemplars=5, imperative=False, procedural=False, diversity=1, k=0.1
    )
    clear = maths.output_type(
        confidence=0.8, exemplars=5, imperative=True, procedural=False, diversity=1, k=0.1
    )
    assert unclear.needs_refinement
    assert not clear.needs_refinement


def test_the_regex_fallback_reads_imperative_and_procedural_text() -> None:
    assert maths.is_imperative("Always run the tests before committing.")
    assert maths.is_imperative("Prefer a broad survey before editing any of them.")
    assert not maths.is_imperative("The agent reads files.")
    assert maths.is_procedural("Workflow: 1. Read 2. Edit 3. Bash")
    assert maths.is_procedural("First read the file, then edit it.")
    assert not maths.is_procedural("Prefer small commits.")


def test_intelligence_points_are_placed_at_d_over_d_plus_i_above_06() -> None:
    assert maths.is_deterministic_step(0.7, 0.3)
    assert not maths.is_deterministic_step(0.6, 0.4)  # exactly 0.6 is not above
    assert not maths.is_deterministic_step(*maths.step_scores("Edit"))
    assert maths.is_deterministic_step(*maths.step_scores("Read"))
    assert maths.deterministic_share(0, 0) == 0.5


def test_distinguishing_features_are_common_in_antitheses_and_rare_in_support() -> None:
    pytest_run = ("command", "pytest")
    read = ("tool", "Read")
    against = [frozenset({pytest_run, read})] * 3 + [frozenset({read})]
    support = [frozenset({read})] * 8 + [frozenset({read, pytest_run})]
    found = maths.distinguishing_features(against, support)
    assert [(f.kind, f.value) for f in found] == [pytest_run]
    assert found[0].in_antitheses == 0.75
    assert found[0].in_supporting == pytest.approx(1 / 9)
