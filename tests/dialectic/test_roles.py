"""The role a command plays in a project's work, from its program and subcommand."""

from __future__ import annotations

import pytest

from dialectic import roles


@pytest.mark.parametrize(
    ("command", "role"),
    [
        # test runners, direct and through a launcher or a project's script
        ("pytest -x <path>", "test"),
        ("uv run pytest -q <path>", "test"),
        ("python3 -m pytest tests/", "test"),
        ("go test ./... -count=<v>", "test"),
        ("cargo test", "test"),
        ("npx playwright test tests/*.ts", "test"),
        ("npx jest --testPathPattern=<v>", "test"),
        ("bun test <arg>", "test"),
        ("bun run test", "test"),
        ("pnpm test:e2e", "test"),
        ("make test", "test"),
        ("mise run test:integration", "test"),
        ("RUST_LOG=<v> cargo test", "test"),
        # linters
        ("npx eslint src/", "lint"),
        ("npx biome check src/", "lint"),
        ("ruff check .", "lint"),
        ("golangci-lint run <path>", "lint"),
        ("cargo clippy", "lint"),
        ("go vet ./...", "lint"),
        ("bun run lint", "lint"),
        ("mise run lint", "lint"),
        # formatters
        ("ruff format .", "format"),
        ("npx prettier --write <path>", "format"),
        ("gofmt -w <path>", "format"),
        ("cargo fmt", "format"),
        ("npm run format", "format"),
        # type checkers
        ("mypy memory", "typecheck"),
        ("npx tsc --noEmit", "typecheck"),
        ("bun run typecheck", "typecheck"),
        ("pnpm check-types", "typecheck"),
        ("cargo check", "typecheck"),
        # build tools
        ("go build -o <arg>", "build"),
        ("cargo build --release", "build"),
        ("npm run build", "build"),
        ("tsc -b", "build"),
        ("make", "build"),
        ("docker compose build", "build"),
        # dependencies, code generation, docs
        ("uv sync", "install"),
        ("pnpm install", "install"),
        ("go mod tidy", "install"),
        ("pnpm api:generate", "generate"),
        ("go generate ./...", "generate"),
        ("make docs", "docs"),
        ("mkdocs build", "docs"),
        # no role: what they do says nothing of a project's way of doing a job
        ("git push -u <v> <arg>", ""),
        ("git stash", ""),
        ("gh pr diff <n> --name-only", ""),
        ("ssh -i ~/ <arg> <text>", ""),
        ("npm install <arg>", ""),
        ("pnpm add <arg>", ""),
        ("make <arg>", ""),
        ("mise run <arg>", ""),
        ("pnpm --filter <v> <arg>", ""),
        ("bun run dev", ""),
        ("docker compose up -d", ""),
    ],
)
def test_a_command_plays_the_role_its_program_and_subcommand_say(command: str, role: str) -> None:
    assert roles.command_role(command) == role


def test_a_line_has_the_role_of_its_first_command_with_one() -> None:
    assert roles.command_role("source .venv/bin/activate && pytest specs/ -v") == "test"
    assert roles.command_role("bun run lint && bun run test") == "lint"


def test_a_formatter_that_only_reports_checks_the_formatting() -> None:
    assert roles.role_sentence("black --check .", "format") == (
        "Check formatting with `black --check .`."
    )
    assert roles.role_sentence("black .", "format") == "Format with `black .`."
