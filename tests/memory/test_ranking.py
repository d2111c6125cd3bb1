from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory.maths import ranking
from memory.maths.ranking import (
    HEADER_TOKENS,
    MAX_FUSED,
    RENDER_HEADER,
    RENDER_MAX_CHARS,
    Candidate,
    Picked,
    Selection,
    estimate_tokens,
    f_emo,
    f_fb,
    injection_score,
    relevance,
    render,
    rrf,
    select,
    spread,
    with_related,
)


def make_candidate(engram_id: str, **overrides: Any) -> Candidate:
    fields: dict[str, Any] = {
        "id": engram_id,
        "statement": f"statement of {engram_id}",
        "fused": MAX_FUSED,
        "rs_eff": 1.0,
        "lexical_hit": True,
    }
    fields.update(overrides)
    return Candidate(**fields)


def ranked(count: int, **overrides: Any) -> list[Candidate]:
    # Scores fall with the index: rs_eff 1.0, 0.98, 0.96, ...
    return [
        make_candidate(f"ENG-{i:03d}", rs_eff=1.0 - 0.02 * i, **overrides) for i in range(count)
    ]


def ids(items: tuple[Picked, ...]) -> list[str]:
    return [item.id for item in items]


# --- RRF -------------------------------------------------------------------------------------


def test_rrf_sums_reciprocal_ranks_with_k_60() -> None:
    fused = rrf([["a", "b"], ["b", "c", "a"]])

    assert [item for item, _ in fused] == ["b", "a", "c"]
    assert dict(fused) == {
        "b": pytest.approx(1 / 62 + 1 / 61),
        "a": pytest.approx(1 / 61 + 1 / 63),
        "c": pytest.approx(1 / 62),
    }


def test_rrf_scores_do_not_depend_on_leg_order() -> None:
    fused = dict(rrf([["a", "b", "c"], ["c", "b", "a"]]))

    assert fused["a"] == fused["c"]


def test_rrf_breaks_ties_by_id_without_a_tiebreak() -> None:
    assert [item for item, _ in rrf([["b", "a"], ["a", "b"]])] == ["a", "b"]


def test_rrf_breaks_ties_by_the_given_key_higher_first() -> None:
    fused = rrf([["a", "b"], ["b", "a"]], tiebreak={"a": 1.0, "b": 2.0})

    assert [item for item, _ in fused] == ["b", "a"]


def test_rrf_puts_ids_missing_from_the_tiebreak_last_among_equals() -> None:
    fused = rrf([["a", "b"], ["b", "a"]], tiebreak={"b": -5.0})

    assert [item for item, _ in fused] == ["b", "a"]


def test_rrf_counts_a_repeated_id_once_per_leg_at_its_best_rank() -> None:
    assert rrf([["a", "a", "b"]]) == [("a", pytest.approx(1 / 61)), ("b", pytest.approx(1 / 63))]


# --- relevance ---------------------------------------------------------------------------------


def test_relevance_is_one_when_both_legs_rank_first() -> None:
    assert relevance(2 / 61, lexical_hit=True, dense_cosine=0.7) == pytest.approx(1.0)


def test_relevance_of_a_lexical_hit_ranked_first_by_one_leg_is_half() -> None:
    assert relevance(1 / 61, lexical_hit=True) == pytest.approx(0.5)


def test_relevance_of_a_dense_only_hit_ramps_with_its_cosine() -> None:
    assert relevance(1 / 61, lexical_hit=False, dense_cosine=0.4) == pytest.approx(0.25)
    assert relevance(1 / 61, lexical_hit=False, dense_cosine=0.8) == pytest.approx(0.5)


def test_a_dense_only_hit_below_the_cosine_floor_is_irrelevant() -> None:
    assert relevance(2 / 61, lexical_hit=False, dense_cosine=0.29) == 0.0


def test_relevance_without_raw_signals_is_rank_only() -> None:
    assert relevance(1 / 62) == pytest.approx(61 / 124)


def test_relevance_never_exceeds_one() -> None:
    assert relevance(1.0, lexical_hit=True) == 1.0


# --- injection score ---------------------------------------------------------------------------


def test_injection_score_multiplies_all_factors() -> None:
    score = injection_score(0.8, 0.6, 2, 7, True)

    assert score == pytest.approx(0.8 * 0.8 * 1.1 * 1.08 * 1.1)
    assert score == pytest.approx(0.836352)


def test_injection_score_without_consolidation_has_no_bonus() -> None:
    assert injection_score(1.0, 1.0, 0, 5, False) == 1.0


def test_feedback_factor_caps_positive_at_1_3_and_negative_at_0_5() -> None:
    assert f_fb(10) == pytest.approx(1.3)
    assert f_fb(-10) == 0.5
    assert f_fb(2) == pytest.approx(1.1)
    assert f_fb(-3) == pytest.approx(0.7)
    assert f_fb(0) == 1.0


def test_emotional_factor_is_one_at_weight_five() -> None:
    assert f_emo(5) == 1.0
    assert f_emo(7) == pytest.approx(1.08)
    assert f_emo(1) == pytest.approx(0.84)
    assert f_emo(10) == pytest.approx(1.2)


# --- select ------------------------------------------------------------------------------------


def test_dont_polarity_goes_to_constraints_and_the_rest_to_directives() -> None:
    selection = select(
        [
            make_candidate("ENG-1", polarity="dont"),
            make_candidate("ENG-2", polarity="do"),
            make_candidate("ENG-3", polarity=None),
        ]
    )

    assert ids(selection.constraints) == ["ENG-1"]
    assert ids(selection.directives) == ["ENG-2", "ENG-3"]


def test_main_buckets_hold_at_most_ten_and_the_next_best_go_to_consider() -> None:
    selection = select(ranked(17))

    assert ids(selection.directives) == [f"ENG-{i:03d}" for i in range(10)]
    assert ids(selection.consider) == [f"ENG-{i:03d}" for i in range(10, 15)]


def test_constraints_and_directives_share_the_limit_of_ten() -> None:
    candidates = ranked(6, polarity="dont") + [
        make_candidate(f"ENG-D{i}", rs_eff=0.5) for i in range(6)
    ]

    selection = select(candidates)

    assert len(selection.constraints) == 6
    assert ids(selection.directives) == ["ENG-D0", "ENG-D1", "ENG-D2", "ENG-D3"]


def test_selected_items_carry_their_score_and_rank() -> None:
    selection = select([make_candidate("ENG-1", rs_eff=0.6, feedback_net=2)])

    assert selection.directives[0].score == pytest.approx(0.8 * 1.1)
    assert selection.directives[0].rank == 1
    assert selection.directives[0].bucket == "directives"


def test_fading_engrams_only_ever_go_to_consider() -> None:
    selection = select(
        [make_candidate("ENG-FADE", band="fading", rs_eff=0.4), make_candidate("ENG-ACT")]
    )

    assert ids(selection.directives) == ["ENG-ACT"]
    assert ids(selection.consider) == ["ENG-FADE"]


def test_a_consider_only_candidate_never_fills_a_main_bucket() -> None:
    selection = select(
        [
            make_candidate("ENG-TRIAL", consider_only=True, polarity="dont"),
            make_candidate("ENG-ACT", rs_eff=0.6),
        ]
    )

    assert ids(selection.constraints) == []
    assert ids(selection.directives) == ["ENG-ACT"]
    assert ids(selection.consider) == ["ENG-TRIAL"]


def test_dormant_and_retiring_engrams_are_never_selected() -> None:
    selection = select(
        [
            make_candidate("ENG-DORM", band="dormant"),
            make_candidate("ENG-RET", band="retire"),
        ]
    )

    assert selection.is_empty


def test_consider_holds_at_most_five() -> None:
    selection = select(ranked(8, band="fading"))

    assert ids(selection.consider) == [f"ENG-{i:03d}" for i in range(5)]


def test_consider_stays_within_its_token_budget() -> None:
    long = "x" * 1000  # clipped to 120 characters, 36 tokens a line with this id length
    candidates = [
        make_candidate(f"ENG-2025-0101-00{i}", band="fading", statement=long, rs_eff=1 - i / 10)
        for i in range(5)
    ]

    selection = select(candidates, consider_tokens=100)

    assert ids(selection.consider) == ["ENG-2025-0101-000", "ENG-2025-0101-001"]
    assert sum(item.tokens for item in selection.consider) == 72


def test_five_full_consider_lines_fit_the_default_200_tokens() -> None:
    long = "x" * 1000
    candidates = [
        make_candidate(f"ENG-2025-0101-00{i}", band="fading", statement=long) for i in range(6)
    ]

    selection = select(candidates)

    assert len(selection.consider) == 5
    assert sum(item.tokens for item in selection.consider) == 180


def test_a_near_duplicate_of_a_selected_engram_is_skipped() -> None:
    selection = select(
        [
            make_candidate("ENG-A", embedding=(1.0, 0.0)),
            make_candidate("ENG-B", embedding=(0.95, 0.05), rs_eff=0.9),
            make_candidate("ENG-C", embedding=(0.6, 0.8), rs_eff=0.8),
        ]
    )

    assert ids(selection.directives) == ["ENG-A", "ENG-C"]


def test_a_cosine_exactly_at_the_diversity_threshold_is_skipped() -> None:
    selection = select(
        [
            make_candidate("ENG-A", embedding=(1.0, 0.0)),
            make_candidate("ENG-B", embedding=(3.0, 4.0), rs_eff=0.9),  # cosine 0.6
        ],
        diversity=0.6,
    )

    assert ids(selection.directives) == ["ENG-A"]


def test_the_total_budget_caps_lines_and_headers() -> None:
    long = "y" * 1000  # clipped to 400 characters: 106 tokens a line
    candidates = [make_candidate(f"ENG-2025-0101-00{i}", statement=long) for i in range(10)]

    selection = select(candidates, budget_tokens=500)

    assert len(selection.directives) == 4
    assert selection.consider == ()
    assert selection.tokens_used == HEADER_TOKENS + 4 * 106
    assert estimate_tokens(render(selection)) <= 500


def test_nothing_relevant_selects_nothing_and_renders_nothing() -> None:
    candidates = [
        make_candidate("ENG-1", lexical_hit=False, dense_cosine=0.21),
        make_candidate("ENG-2", lexical_hit=False, dense_cosine=0.05, fused=1 / 61),
    ]

    selection = select(candidates)

    assert selection.is_empty
    assert render(selection) == ""


def test_a_weak_dense_only_match_falls_under_the_relevance_floor() -> None:
    weak = make_candidate("ENG-1", lexical_hit=False, dense_cosine=0.31, fused=1 / 80)

    assert select([weak]).is_empty


def test_escalated_engrams_sort_first_within_their_bucket() -> None:
    selection = select(
        [
            make_candidate("ENG-TOP"),
            make_candidate("ENG-EMPH", rs_eff=0.3, escalation="emphasised"),
            make_candidate("ENG-REM", rs_eff=0.2, escalation="reminder"),
        ]
    )

    assert ids(selection.directives) == ["ENG-REM", "ENG-EMPH", "ENG-TOP"]


# --- spreading activation ------------------------------------------------------------------------


def test_spread_scales_strength_by_the_source_score_and_keeps_the_best_per_target() -> None:
    result = spread(
        [("a", 0.8), ("b", 0.4)],
        {"a": [("x", 0.5), ("y", 0.35)], "b": [("x", 0.9), ("z", 0.6), ("a", 0.9)]},
        set(),
        token_of={"x": 10, "y": 10, "z": 10, "a": 10},
    )

    assert result == [("x", pytest.approx(0.5)), ("y", 0.35), ("z", pytest.approx(0.3))]


def test_spread_returns_at_most_three() -> None:
    targets = [(f"t{i}", 0.9 - i / 10) for i in range(5)]

    result = spread([("a", 1.0)], {"a": targets}, set(), token_of={t: 1 for t, _ in targets})

    assert [target for target, _ in result] == ["t0", "t1", "t2"]


def test_spread_stays_within_480_tokens() -> None:
    result = spread(
        [("a", 1.0)],
        {"a": [("x", 0.9), ("y", 0.8), ("z", 0.7)]},
        set(),
        token_of={"x": 300, "y": 200, "z": 150},
    )

    assert [target for target, _ in result] == ["x", "z"]


def test_spread_skips_excluded_selected_and_unknown_targets() -> None:
    result = spread(
        [("a", 1.0), ("b", 0.5)],
        {"a": [("b", 0.9), ("gone", 0.9), ("skip", 0.9), ("ok", 0.2)]},
        {"skip"},
        token_of={"b": 1, "skip": 1, "ok": 1},
    )

    assert result == [("ok", 0.2)]


def test_spread_from_nothing_is_empty() -> None:
    assert spread([], {}, set(), token_of={}) == []


def test_related_lines_fit_the_remaining_budget() -> None:
    long = "z" * 1000  # 106 tokens a line
    selection = select([make_candidate("ENG-2025-0101-001", statement=long)], budget_tokens=250)

    grown = with_related(
        selection,
        [("ENG-2025-0101-002", long, 0.5), ("ENG-2025-0101-003", "short", 0.4)],
    )

    assert ids(grown.related) == ["ENG-2025-0101-003"]
    assert grown.tokens_used <= 250


# --- render --------------------------------------------------------------------------------------


def test_render_lists_each_engram_with_its_id_under_its_section() -> None:
    selection = with_related(
        select(
            [
                make_candidate("ENG-1", statement="Never force-push to main", polarity="dont"),
                make_candidate("ENG-2", statement="Run the linter before committing", rs_eff=0.9),
                make_candidate("ENG-3", statement="Pin tool versions", band="fading"),
                make_candidate("ENG-4", statement="Old habit", band="dormant"),
            ]
        ),
        [("ENG-5", "Squash fixups\nbefore review", 0.3)],
    )

    assert render(selection) == (
        RENDER_HEADER + "\n### Constraints\n"
        "- [ENG-1] Never force-push to main\n"
        "\n### Directives\n"
        "- [ENG-2] Run the linter before committing\n"
        "\n### Consider\n"
        "- [ENG-3] Pin tool versions\n"
        "\n### Related\n"
        "- [ENG-5] Squash fixups before review\n"
    )


def test_escalated_engrams_render_first_as_important() -> None:
    text = render(
        select(
            [
                make_candidate("ENG-1", statement="Plain"),
                make_candidate("ENG-2", statement="Loud", rs_eff=0.1, escalation="reminder"),
            ]
        )
    )

    assert "### Directives\n- **IMPORTANT:** [ENG-2] Loud\n- [ENG-1] Plain\n" in text


def test_render_stays_under_10000_characters_with_ten_huge_statements() -> None:
    huge = "word " * 20_000
    candidates = [make_candidate(f"ENG-2025-0101-{i:03d}", statement=huge) for i in range(10)]

    text = render(select(candidates, budget_tokens=1_000_000))

    assert len(text) < RENDER_MAX_CHARS
    assert text.count("\n- [ENG-") == 10
    assert "…" in text


def test_render_hard_caps_a_hand_built_oversized_selection() -> None:
    huge = "x" * 50_000
    items = tuple(
        Picked(id=f"ENG-{i}", statement=huge, score=1.0, bucket="directives", rank=i, tokens=1)
        for i in range(40)
    )

    text = render(Selection(directives=items))

    assert len(text) < RENDER_MAX_CHARS
    assert text.endswith("…\n")


def test_ranking_module_imports_no_django() -> None:
    code = (
        "import sys, memory.maths.ranking; print(any(m.startswith('django') for m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )

    assert result.stdout.strip() == "False"


def test_newest_variant_takes_the_best_place_and_older_ones_are_halved() -> None:
    key = "<d> start attribute names with <v>"
    ranked = [
        ranking.Variant("OLD", "project:a", key, recency=100.0, score=0.9),
        ranking.Variant("OTHER", "project:a", "something else <v>", recency=50.0, score=0.8),
        ranking.Variant("NEW", "project:a", key, recency=300.0, score=0.5),
        ranking.Variant("ELSEWHERE", "project:b", key, recency=400.0, score=0.4),
        ranking.Variant("MID", "project:a", key, recency=200.0, score=0.3),
        ranking.Variant("NOKEY", "project:a", None, recency=500.0, score=0.2),
    ]
    assert ranking.newest_variant_first(ranked) == [
        ("NEW", 0.9),  # the group's best place and score
        ("OTHER", 0.8),
        ("ELSEWHERE", 0.4),  # another scope: not in the group
        ("MID", 0.25),  # the next place's score (0.5), halved
        ("NOKEY", 0.2),
        ("OLD", 0.15),  # the last place's score (0.3), halved
    ]


def test_variants_tied_on_score_still_put_the_newest_first() -> None:
    ranked = [
        ranking.Variant("OLD", "global", "k <v>", recency=1.0, score=0.0),
        ranking.Variant("NEW", "global", "k <v>", recency=2.0, score=0.0),
        ranking.Variant("X", "global", None, recency=3.0, score=0.0),
    ]
    assert ranking.newest_variant_first(ranked) == [("NEW", 0.0), ("OLD", 0.0), ("X", 0.0)]


def test_a_newest_variant_already_ahead_keeps_its_place_and_the_older_is_halved() -> None:
    ranked = [
        ranking.Variant("NEW", "global", "k <v>", recency=2.0, score=0.9),
        ranking.Variant("OLD", "global", "k <v>", recency=1.0, score=0.4),
    ]
    assert ranking.newest_variant_first(ranked) == [("NEW", 0.9), ("OLD", 0.2)]
    assert ranking.newest_variant_first(ranked, older_factor=1.0) == [("NEW", 0.9), ("OLD", 0.4)]


def test_a_contradicted_older_rule_is_demoted_like_an_older_variant() -> None:
    ranked = [
        ranking.Variant("OLD", "global", "use tabs", recency=1.0, score=0.9),
        ranking.Variant("X", "global", None, recency=3.0, score=0.6),
        ranking.Variant("NEW", "global", "spaces not tabs", recency=2.0, score=0.5),
        ranking.Variant("AWAY", "project:p", "tabs here", recency=5.0, score=0.4),
    ]
    # No contradiction known: different variant keys keep their own places.
    assert ranking.newest_variant_first(ranked) == [
        ("OLD", 0.9),
        ("X", 0.6),
        ("NEW", 0.5),
        ("AWAY", 0.4),
    ]
    # Either direction of the pair; the newer one takes the best place, the older is halved.
    # A pair across scopes, or with an id not among the candidates, changes nothing.
    pairs = [("OLD", "NEW"), ("AWAY", "OLD"), ("NEW", "GONE")]
    assert ranking.newest_variant_first(ranked, contradicted=pairs) == [
        ("NEW", 0.9),
        ("X", 0.6),
        ("AWAY", 0.4),
        ("OLD", 0.25),
    ]


def test_prior_tiebreak_passes_small_gaps_and_caps_large_ones() -> None:
    from memory.maths.ranking import PRIOR_SPAN, prior_tiebreak

    assert prior_tiebreak(0.85, 0.85) == 1.0
    # A gap of 0.01 costs almost 0.01: near-equals keep the prior's order.
    assert prior_tiebreak(0.84, 0.85) == pytest.approx(1 - 0.0085, abs=5e-4)
    assert prior_tiebreak(0.84, 0.85) > prior_tiebreak(0.83, 0.85)
    # A decayed engram (RS_eff 0.26 against 0.7) loses at most PRIOR_SPAN of its relevance.
    far = prior_tiebreak(0.5 + 0.5 * 0.26, 0.5 + 0.5 * 0.7)
    assert 1 - PRIOR_SPAN <= far < 1 - 0.9 * PRIOR_SPAN
    assert prior_tiebreak(0.1, 2.0) == pytest.approx(1 - PRIOR_SPAN)


def test_ranked_score_puts_relevance_first() -> None:
    from memory.maths.ranking import RECENT_BONUS, activation_prior, ranked_score

    strong = activation_prior(0.7, 0, 5, False)
    weak = activation_prior(0.26, 0, 5, False)
    # 10 % more relevant beats a much stronger prior; at equal relevance the prior decides.
    assert ranked_score(0.55, weak, strong) > ranked_score(0.5, strong, strong)
    assert ranked_score(0.5, strong, strong) > ranked_score(0.5, weak, strong)
    assert ranked_score(0.5, strong, strong, recent=True) == pytest.approx(0.5 * (1 + RECENT_BONUS))
    assert ranked_score(0.0, strong, strong, recent=True) == 0.0
    assert activation_prior(0.6, 2, 7, True) == pytest.approx(injection_score(1.0, 0.6, 2, 7, True))
