from __future__ import annotations

import pytest

from memory.maths import textnorm
from memory.maths.textnorm import (
    content_hash,
    estimate_tokens,
    has_opposition,
    normalise,
    polarity_opposes,
)

HELLO_WORLD_SHA256 = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Always   run TESTS.  ", "always run tests"),
        ("Don\u2019t use print()!", "dont use print"),
        ("don't", "dont"),
        ("\uff26\uff35\uff2c\uff2c width", "full width"),  # NFKC folds full-width letters
        ("Stra\u00dfe", "strasse"),  # casefold, not just lower
        ("foo-bar/baz", "foo bar baz"),
        ("caf\u00e9 \u2014 na\u00efve", "caf\u00e9 na\u00efve"),
        ("\u00bfQu\u00e9?", "qu\u00e9"),
        ("\u00abquoted\u00bb", "quoted"),
        ("A\u00a0B\tC\nD", "a b c d"),
        ("a+b=c $5", "a+b=c $5"),  # symbols are not punctuation
        ("", ""),
        ("...", ""),
    ],
)
def test_it_normalises_case_punctuation_and_spacing(text: str, expected: str) -> None:
    assert normalise(text) == expected


def test_it_is_idempotent() -> None:
    text = "  Don\u2019t   use \uff26\uff35\uff2c\uff2c-width print()!  "

    assert normalise(normalise(text)) == normalise(text)


def test_it_hashes_the_normalised_text_with_sha256() -> None:
    assert content_hash("hello world") == HELLO_WORLD_SHA256
    assert content_hash("Hello,   World!") == HELLO_WORLD_SHA256


def test_texts_that_differ_in_words_hash_differently() -> None:
    assert content_hash("always run tests") != content_hash("never run tests")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Always run migrations in a transaction", "Never run migrations in a transaction"),
        ("Do commit lock files", "Don't commit lock files"),
        ("Do commit lock files", "Do not commit lock files"),
        ("Do commit lock files", "Dont commit lock files"),
        ("Do commit lock files", "Don\u2019t commit lock files"),
        ("Use raw SQL for reports", "Avoid raw SQL for reports"),
        ("You must pin dependencies", "You must not pin dependencies"),
        ("You must pin dependencies", "You mustn't pin dependencies"),
        ("You must pin dependencies", "You must never pin dependencies"),
        ("Enable WAL mode on SQLite", "Disable WAL mode on SQLite"),
        ("Prefer pathlib over os.path", "Avoid pathlib"),
        ("ALWAYS squash merge", "never squash merge."),
    ],
)
def test_it_detects_opposition_pairs_in_either_order(a: str, b: str) -> None:
    assert has_opposition(a, b)
    assert has_opposition(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Always run migrations", "Always run migrations in CI"),
        ("Never use eval", "Never use exec"),
        ("Don't commit secrets", "Do not commit secrets"),
        ("You must not pin dependencies", "Must not pin dev dependencies"),
        ("Run the linter before pushing", "Run the tests before pushing"),
        ("Always do X, never do Y", "Always do X, never do Y"),
        ("Disabled tests hide regressions", "Disabled tests are tracked in an issue"),
        ("the domain model", "a random thought"),  # "do" only as a whole word
        ("Use musty old caches", "mustard is yellow"),  # "must" only as a whole word
    ],
)
def test_it_finds_no_opposition_without_opposite_sides(a: str, b: str) -> None:
    assert not has_opposition(a, b)
    assert not has_opposition(b, a)


def test_must_not_is_not_read_as_must() -> None:
    assert has_opposition("Must validate input", "Must not validate input twice")
    assert not has_opposition("Must not log tokens", "Must not log passwords")


@pytest.mark.parametrize(
    ("p1", "p2", "expected"),
    [
        ("do", "dont", True),
        ("dont", "do", True),
        ("do", "do", False),
        ("dont", "dont", False),
        (None, "do", False),
        ("dont", None, False),
        (None, None, False),
    ],
)
def test_it_opposes_do_and_dont_polarity_only(
    p1: str | None, p2: str | None, expected: bool
) -> None:
    assert polarity_opposes(p1, p2) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100), ("x" * 401, 101)],
)
def test_it_estimates_tokens_as_characters_over_four_rounded_up(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("always start attribute names with 'q_'", "Always start attribute names with 'j_'."),
        ("never use a linter", "always use a linter"),
        ("don't push to main", "Never push to main"),
        ("Deploy the API on port 8080", "Deploy the API on port 9090"),
        ("Use Skype for video calls", "Use Zoom for video calls"),
        ('Name the config file "settings.toml"', 'Name the config file "engram.toml"'),
        # A determiner before the value goes with the value.
        ("always use snake_case for class names", "always use all UPPERCASE for class names"),
    ],
)
def test_variants_of_one_rule_share_a_key(older: str, newer: str) -> None:
    key = textnorm.variant_key(older)
    assert key is not None
    assert textnorm.variant_key(newer) == key


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("always start attribute names with 'q_'", "always start variable names with 'q_'"),
        ("Deploy the API on port 8080", "Deploy the worker on port 8080"),
        ("Use ruff to lint the code", "Use ruff to format the code"),
    ],
)
def test_different_rules_have_different_keys(one: str, other: str) -> None:
    assert textnorm.variant_key(one) != textnorm.variant_key(other)


@pytest.mark.parametrize(
    "statement",
    ["Run tests", "Use 'x'", "Keep functions short and focused", "", "   "],
)
def test_statements_without_a_value_or_direction_or_with_too_few_words_have_no_key(
    statement: str,
) -> None:
    assert textnorm.variant_key(statement) is None
