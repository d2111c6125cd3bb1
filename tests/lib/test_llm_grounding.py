"""A quote the model gives counts only when the text it read holds it."""

from __future__ import annotations

import pytest

from lib.llm import find_quote

USER = "ok thanks.\nNo, don't use  npm here.\nAlways   use pnpm in this repo!"


@pytest.mark.parametrize(
    ("quote", "found"),
    [
        ("Always use pnpm in this repo", "Always   use pnpm in this repo"),
        ("always use PNPM in this repo.", "Always   use pnpm in this repo"),
        ("\u201cNo, don\u2019t use npm here.\u201d", "No, don't use  npm here"),
        ("don't use npm here. Always use", "don't use  npm here.\nAlways   use"),
        (
            "No, don't use npm ... in this repo",
            "No, don't use  npm here.\nAlways   use pnpm in this repo",
        ),
    ],
)
def test_a_quote_is_found_whitespace_case_and_quote_marks_aside(quote: str, found: str) -> None:
    assert find_quote(quote, ["unrelated text", USER]) == found


@pytest.mark.parametrize(
    "quote",
    [
        "Always use yarn in this repo",  # a paraphrase is not a quote
        "use pnpm",  # fewer than eight letters: found anywhere, it proves nothing
        "pnpm",
        "",
        "in this repo ... No, don't",  # the pieces out of order
    ],
)
def test_a_quote_not_in_the_text_or_too_short_is_not_found(quote: str) -> None:
    assert find_quote(quote, [USER]) is None


def test_a_quote_spanning_two_sources_is_not_found() -> None:
    assert find_quote("here. Always use pnpm", ["No, use npm here.", "Always use pnpm."]) is None


def test_regex_characters_in_a_quote_are_literal() -> None:
    assert find_quote("run (make test) first", ["please run (make test) first"]) == (
        "run (make test) first"
    )
    assert find_quote("run .* first", ["run anything first"]) is None
