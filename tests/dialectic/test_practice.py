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
    assert found.sentence() == "Build the docs with `make docs` after editing .md files in docs."
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


@pytest.mark.parametrize(
    ("command", "sentence"),
    [
        ("bun run test", "Run tests with `bun run test`."),
        ("npx biome lint packages/*.ts", "Lint with `npx biome lint packages/*.ts`."),
        ("uv run ruff format <path>", "Format with `uv run ruff format <path>`."),
        ("prettier --check <path>", "Check formatting with `prettier --check <path>`."),
        ("npx tsc --noEmit", "Type-check with `npx tsc --noEmit`."),
        ("go build ./...", "Build with `go build ./...`."),
        (
            "source .venv/bin/activate && pytest specs/",
            "Run tests with `source .venv/bin/activate && pytest specs/`.",
        ),
    ],
)
def test_a_command_with_a_role_is_said_with_its_role(command: str, sentence: str) -> None:
    found = practice.practice_of([Member("Bash", f"Bash `{command}`")] * 3)
    assert found.sentence() == sentence
    assert found.publishable


@pytest.mark.parametrize(
    "command",
    [
        "git stash",
        "gh pr diff <n> --name-only",
        "git rebase <path>",
        "gh run view <n> --log-failed",
    ],
)
def test_a_command_with_no_role_and_no_occasion_is_not_proposed(command: str) -> None:
    found = practice.practice_of([Member("Bash", f"Bash `{command}`")] * 3)
    assert found.occasion == ""
    assert not found.publishable


def test_a_precondition_chained_before_a_command_is_its_occasion() -> None:
    found = practice.practice_of([Member("Bash", "Bash `git add <path> && git commit`")] * 3)
    assert found.occasion == "precondition"
    assert found.sentence() == "Run `git add <path>` before `git commit`."
    assert found.publishable


@pytest.mark.parametrize("command", ["git add && git commit", "git pull && git push"])
def test_one_programs_bare_steps_in_their_usual_order_are_no_practice(command: str) -> None:
    found = practice.practice_of([Member("Bash", f"Bash `{command}`")] * 3)
    assert found.occasion == ""
    assert not found.publishable
    chained = practice.practice_of([Member("Bash", "Bash `git fetch --prune && git rebase`")] * 3)
    assert chained.occasion == "precondition"


def test_the_command_run_when_another_failed_is_a_fix() -> None:
    members = [
        Member("Bash", "Bash `git pull --rebase`", previous="Bash `git push` failed"),
        Member("Bash", "Bash `git pull --rebase`", previous="Bash `git push` failed"),
        Member("Bash", "Bash `git pull --rebase`", previous="Bash `git push`"),
    ]
    found = practice.practice_of(members)
    assert found.occasion == "fix"
    assert found.sentence() == "When `git push` fails, run `git pull --rebase`."
    assert found.publishable


@pytest.mark.parametrize(
    ("command", "swallowed"),
    [
        ("ssh -i ~/ <arg> <text>", True),
        ("go doc github.com/ <arg>", True),
        ("gh issue view <n> --repo owner/ --json <v>", True),
        ("bun run --filter @scope/ <arg>", True),
        ("pnpm --filter <v> <arg>", True),
        ("cargo <arg>", True),
        ("mise run <arg>", True),
        ("uv run pytest -q <path>", False),
        ("pytest <path>", False),
        ("go test cmd/ -count=<v> -v", False),
        ("docker compose -f infra/*.yml <arg>", False),
        ("bun test <arg> --timeout <n>", False),
    ],
)
def test_a_command_whose_placeholders_swallowed_its_meaning_is_told(
    command: str, swallowed: bool
) -> None:
    assert practice.swallowed(command) is swallowed


def test_a_role_command_cut_by_its_placeholders_is_not_proposed() -> None:
    found = practice.practice_of([Member("Bash", "Bash `npx --package @biomejs/ <arg> src/`")] * 3)
    assert not found.publishable


def test_a_project_command_is_found_in_a_statement() -> None:
    assert practice.project_command("Run tests with `bun run test`.") == "bun run test"
    assert practice.project_command("Run `git push -u <v> <arg>`.") == ""


def test_the_command_chained_after_keeps_its_subcommand() -> None:
    runs = ["mise run fmt && mise run lint"] * 3
    assert practice.common_command(runs) == "mise run fmt && mise run lint"


def test_a_command_naming_the_projects_files_is_the_projects() -> None:
    assert practice.project_command("Run `git add cmd/*.go` before `git commit`.") == (
        "git add cmd/*.go"
    )
    assert practice.project_command("Run `git add <path>` before `git commit`.") == ""


@pytest.mark.parametrize(
    ("one", "other", "same"),
    [
        ("Type-check with `pnpm tsc --noEmit`.", "Type-check with `npx tsc --noEmit`.", True),
        ("Run tests with `uv run pytest -q`.", "Run tests with `pytest -q`.", True),
        ("Run tests with `pnpm exec vitest`.", "Run tests with `npx vitest`.", True),
        ("Run tests with `mise run test`.", "Run tests with `mise run test:ci`.", False),
        ("Type-check with `npx tsc --noEmit`.", "Lint with `npx eslint .`.", False),
        ("Run `git add <path>` before `git commit`.", "Run `git add <path>` before `git commit`.",
         False),  # no job of a project: nothing to set against each other
    ],
)  # fmt: skip
def test_one_job_through_another_package_runner_is_the_same_practice(
    one: str, other: str, same: bool
) -> None:
    assert practice.same_job(one, other) is same
