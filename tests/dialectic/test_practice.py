"""The practice a cluster's members share, and the check that a statement names one."""

from __future__ import annotations

import pytest

from dialectic import practice
from dialectic.practice import Member


def test_the_common_command_keeps_the_shared_words_and_frequent_flags() -> None:
    runs = [
        "uv run pytest tests/*.py -q",
        "uv run pytest tests/ -q -x",
        "uv run pytest -q",
        "uv run ruff check .",
    ]
    assert practice.common_command(runs) == "uv run pytest -q <path>"


def test_files_named_by_most_runs_and_the_command_chained_after_join_the_practice() -> None:
    runs = [
        "git add src/*.py && git commit -m <text>",
        "git add .changeset/*.md && git commit -m <text> && git push",
        "git add *.md && git commit -m <text>",
        "git add -A",
    ]
    assert practice.common_command(runs) == "git add <path> && git commit"


def test_a_practice_says_the_step_most_runs_follow() -> None:
    members = [
        Member("Bash", "Bash `make docs`", previous="Edit .md file in docs"),
        Member("Bash", "Bash `make docs`", previous="Edit .md file in docs"),
        Member("Bash", "Bash `make docs`", previous="Read .md file in docs"),
    ]
    found = practice.practice_of(members)
    assert found.sentence() == "Run `make docs` after editing .md files in docs."
    assert found.publishable


def test_a_command_that_only_looks_is_no_practice_on_its_own() -> None:
    members = [Member("Bash", "Bash `git log --oneline -<n>`")] * 4
    found = practice.practice_of(members)
    assert found.command == "git log --oneline -<n>"
    assert not found.publishable
    assert practice.only_looks("git status && ls src/")
    assert not practice.only_looks("git add -A && git commit -m <text>")


def test_mostly_failing_runs_are_said_as_a_failure() -> None:
    members = [Member("Bash", "Bash `pytest -x` failed")] * 2 + [Member("Bash", "Bash `pytest -x`")]
    assert practice.practice_of(members).sentence().startswith("When `pytest -x` fails")


@pytest.mark.parametrize(
    ("statement", "names"),
    [
        ("Run `uv run pytest -q`.", True),
        ("Prefer a broad survey before going deep on Read .py files in src/api/.", True),
        ("Stage files by name with `git add <path>` before `git commit`.", True),
        ("Prefer the usual order of work for running: Bash then Bash then Bash.", False),
        ("Prefer `Read then Edit`.", False),
        ("Survey broadly before editing.", False),
    ],
)
def test_a_statement_names_a_practice_only_with_a_command_or_file_pattern(
    statement: str, names: bool
) -> None:
    assert practice.names_practice(statement) is names


def test_a_run_of_one_tool_is_said_once_with_its_count() -> None:
    assert practice.steps_text(["Glob", "Grep", "Read", "Read", "Read"]) == (
        "Glob → Grep → Read (3 times)"
    )
