from __future__ import annotations

import pytest

from memory.maths.coaccess import (
    MAX_COACCESS_EDGES,
    NEW_EDGE_STRENGTH,
    STRENGTH_CAP,
    coaccess_pairs,
    coaccess_update,
    decayed_coaccess_strength,
    reinforce_edge,
    semantic_association_strength,
)

TIGHT = 1e-9


def test_the_constants_match_the_design() -> None:
    assert NEW_EDGE_STRENGTH == 0.3
    assert MAX_COACCESS_EDGES == 5
    assert STRENGTH_CAP == 0.95


def test_it_pairs_every_two_distinct_engrams_once_in_sorted_order() -> None:
    pairs = coaccess_pairs(["ENG-3", "ENG-1", "ENG-2"])

    assert pairs == [("ENG-1", "ENG-2"), ("ENG-1", "ENG-3"), ("ENG-2", "ENG-3")]


def test_it_gives_the_same_pairs_whatever_the_input_order() -> None:
    assert coaccess_pairs(["b", "c", "a"]) == coaccess_pairs(["c", "a", "b"])


def test_it_ignores_an_engram_injected_twice() -> None:
    assert coaccess_pairs(["a", "b", "a"]) == [("a", "b")]


def test_it_makes_no_pairs_from_fewer_than_two_engrams() -> None:
    assert coaccess_pairs([]) == []
    assert coaccess_pairs(["a"]) == []
    assert coaccess_pairs(["a", "a"]) == []


def test_it_makes_n_choose_2_pairs() -> None:
    # 5 engrams → 5·4/2 = 10 pairs
    assert len(coaccess_pairs(["a", "b", "c", "d", "e"])) == 10


def test_reinforcing_adds_0_05() -> None:
    assert reinforce_edge(0.3) == pytest.approx(0.35, abs=TIGHT)


def test_reinforcing_caps_at_0_95() -> None:
    assert reinforce_edge(0.93) == 0.95
    assert reinforce_edge(0.95) == 0.95


def test_it_reinforces_an_existing_edge_even_when_the_source_is_full() -> None:
    assert coaccess_update(0.5, 5) == pytest.approx(0.55, abs=TIGHT)


def test_it_creates_a_new_edge_at_0_3_while_the_source_has_fewer_than_five() -> None:
    assert coaccess_update(None, 4) == 0.3


def test_it_creates_no_edge_when_the_source_already_has_five() -> None:
    assert coaccess_update(None, 5) is None


def test_decay_leaves_strength_unchanged_at_zero_days() -> None:
    assert decayed_coaccess_strength(0.7, 0) == pytest.approx(0.7, abs=TIGHT)


def test_decay_follows_the_design_formula() -> None:
    # 0.02 + (0.3 - 0.02)·exp(-0.01·10) = 0.02 + 0.28·0.9048374 = 0.2733545
    assert decayed_coaccess_strength(0.3, 10) == pytest.approx(0.2733545, abs=1e-7)
    # 0.02 + (0.95 - 0.02)·exp(-1) = 0.02 + 0.93·0.3678794 = 0.3621279
    assert decayed_coaccess_strength(0.95, 100) == pytest.approx(0.3621279, abs=1e-7)


def test_decay_approaches_0_02_after_a_long_time() -> None:
    assert decayed_coaccess_strength(0.95, 2000) == pytest.approx(0.02, abs=1e-8)


def test_decay_rejects_negative_days() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        decayed_coaccess_strength(0.5, -1)


def test_semantic_strength_is_cosine_minus_a_half() -> None:
    assert semantic_association_strength(0.75) == pytest.approx(0.25, abs=TIGHT)
    assert semantic_association_strength(0.92) == pytest.approx(0.42, abs=TIGHT)


def test_semantic_strength_is_capped_at_0_95() -> None:
    assert semantic_association_strength(1.5) == 0.95


def test_semantic_strength_is_never_negative() -> None:
    assert semantic_association_strength(0.3) == 0.0
