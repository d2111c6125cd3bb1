"""Token estimates, the split of a prompt's character budget among its parts, packing lines."""

from __future__ import annotations

from lib.llm import sizing


def test_tokens_are_estimated_at_three_characters_each_rounded_up() -> None:
    assert sizing.estimate_tokens("") == 0
    assert sizing.estimate_tokens("abc") == 1
    assert sizing.estimate_tokens("abcd") == 2
    assert sizing.estimate_tokens("x" * 3000) == 1000


def test_a_requests_input_counts_system_prompt_tool_and_the_tool_use_overhead() -> None:
    tool = {"name": "t"}  # '{"name": "t"}' is 13 characters: 5 tokens
    assert sizing.input_tokens(system="abcdef", prompt="x" * 30, tool=tool) == 2 + 10 + 5 + 350


def test_the_output_cap_fits_every_item_at_its_longest() -> None:
    assert sizing.output_tokens(chars=300, items=4, base_chars=60) == 420
    assert sizing.output_tokens(chars=300, items=0, base_chars=60) == 20


def test_a_part_that_wants_little_leaves_the_rest_to_the_others() -> None:
    wants = {"a": 100, "b": 10_000, "c": 10_000}
    weights = {"a": 1.0, "b": 1.0, "c": 2.0}
    # a's share of 1,000 would be 250: it takes 100; b and c split 900 as 1:2.
    assert sizing.share(1000, wants, weights) == {"a": 100, "b": 300, "c": 600}


def test_parts_that_all_fit_get_what_they_want() -> None:
    wants = {"a": 100, "b": 200}
    assert sizing.share(1000, wants, {"a": 1.0, "b": 1.0}) == {"a": 100, "b": 200}


def test_the_split_never_exceeds_the_total_and_skips_empty_parts() -> None:
    wants = {"a": 0, "b": 5000, "c": 5000}
    got = sizing.share(999, wants, {"a": 5.0, "b": 1.0, "c": 1.0})
    assert got == {"a": 0, "b": 499, "c": 499}
    assert sizing.share(-5, wants, {"a": 1.0, "b": 1.0, "c": 1.0}) == {"a": 0, "b": 0, "c": 0}


def test_a_second_round_shares_what_a_satisfied_part_left() -> None:
    wants = {"a": 300, "b": 350, "c": 5000}
    # Round 1 offers 333 each: a takes 300. Round 2 offers b and c 350 each of 700: b takes 350.
    # c gets the remaining 350.
    assert sizing.share(1000, wants, {"a": 1.0, "b": 1.0, "c": 1.0}) == {
        "a": 300,
        "b": 350,
        "c": 350,
    }


def test_lines_are_packed_into_runs_that_fit() -> None:
    assert sizing.pack([4, 4, 4, 10, 1], 9) == [(0, 2), (2, 3), (3, 4), (4, 5)]
    assert sizing.pack([3, 3, 3], 11) == [(0, 3)]
    assert sizing.pack([], 10) == []
    assert sizing.pack([20], 10) == [(0, 1)]
