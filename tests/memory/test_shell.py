"""Shell command shapes: the practice a command line carries, with paths and values as
placeholders, so runs of the same practice on different files read alike."""

from __future__ import annotations

import pytest

from memory.maths.shell import command_shape, path_placeholder


@pytest.mark.parametrize(
    ("command", "text"),
    [
        ("pytest specs/x_spec.py -v", "pytest specs/*.py -v"),
        ("pytest specs/y_spec.py", "pytest specs/*.py"),
        ("cd /home/a/shop && git status", "git status"),
        (
            "source .venv/bin/activate && pytest specs/",
            "source .venv/bin/activate && pytest specs/",
        ),
        (
            "DEBUG=1 uv run pytest tests/test_a.py -x --tb=short",
            "DEBUG=<v> uv run pytest tests/*.py -x --tb=<v>",
        ),
        ("uv run pytest tests/ -q 2>&1 | tail -20", "uv run pytest tests/ -q | tail"),
        (
            "git add src/a.py src/b.py && git commit -m 'fix: it'",
            "git add src/*.py && git commit -m <text>",
        ),
        ("git add -A", "git add -A"),
        ("git log --oneline -10", "git log --oneline -<n>"),
        ("grep -rn 'def handle' src/", "grep -rn <text> src/"),
        ("python -m pytest -k slow", "python -m pytest -k <v>"),
        ("npm run build", "npm run build"),
        ("docker compose up -d", "docker compose up -d"),
        ("find . -name '*.py' -type f", "find . -name *.py -type <v>"),
        ("curl -s https://example.com/x | jq .name", "curl -s <url> | jq"),
        ("# note\nmake docs", "make docs"),
        ("cat <<'EOF' > notes.txt\nhello && world\nEOF", "cat"),
        ("git commit -m \"$(cat <<'EOF'\nmsg\nEOF\n)\"", "git commit -m <text>"),
        ("sudo apt-get install -y jq", "sudo apt-get install -y <v>"),
        # every flag keeps its value; a repeated flag is dropped with its value
        (
            "xcodebuild -project App.xcodeproj -scheme App -destination 'platform=iOS Simulator'",
            "xcodebuild -project <v> -scheme <v> -destination <text>",
        ),
        ("curl -s -H 'A: b' -H 'C: d' https://example.com/x", "curl -s -H <text> <url>"),
    ],
)
def test_a_command_becomes_its_practice_with_placeholders(command: str, text: str) -> None:
    assert command_shape(command, cwd="/home/a/shop").text == text


def test_the_main_command_is_the_one_the_line_is_for() -> None:
    shape = command_shape("cd api && source .venv/bin/activate && pytest -x")
    assert shape.main is not None and shape.main.head == "pytest"
    assert shape.heads == ("source", "pytest")


def test_absolute_paths_inside_the_project_become_relative() -> None:
    assert path_placeholder("/home/a/shop/src/api/views.py", "/home/a/shop") == "src/*.py"
    assert path_placeholder("/etc/hosts", "/home/a/shop") == "<path>"
    assert path_placeholder("README.md") == "*.md"


def test_a_go_package_pattern_keeps_that_it_means_every_package_under() -> None:
    assert path_placeholder("./cmd/entire/cli/...") == "./cmd/..."
    assert path_placeholder("internal/store/...") == "internal/..."
    assert path_placeholder("./...") == "./..."
    assert command_shape("go test ./cmd/entire/cli/... -v").text == "go test ./cmd/... -v"


def test_a_leading_dot_slash_is_kept() -> None:
    """To Go, `./cmd/server` is the project's package and `cmd/server` a standard-library path:
    the placeholder keeps which one was meant."""
    assert path_placeholder("./cmd/server/") == "./cmd/"
    assert path_placeholder("cmd/server/") == "cmd/"
    assert command_shape("pytest ./tests/unit/").text == "pytest ./tests/"
    assert path_placeholder("./scripts/release.sh") == "./scripts/*.sh"


def test_the_package_go_builds_is_its_target_not_a_place() -> None:
    """`go build ./cmd/server/` builds that package: the folder is what it builds (kept whole),
    where a test run's package varies and meets the others under its first folder."""
    assert command_shape("go build ./cmd/server/").text == "go build ./cmd/server/"
    assert command_shape("go run ./cmd/tool serve").text == "go run ./cmd/tool <arg>"
    assert command_shape("go run ./cmd/main.go").text == "go run ./cmd/*.go"
    assert command_shape("go test ./internal/store").text == "go test ./internal/"


@pytest.mark.parametrize(
    "command",
    ["", "   ", 'echo "unterminated', "((((", "x" * 100_000, "\x00\x01\x02", "ls \udcff"],
)
def test_any_input_gives_a_shape_and_never_raises(command: str) -> None:
    shape = command_shape(command)
    assert len(shape.text) <= 200


def test_a_runners_flags_are_skipped_but_the_packages_it_adds_are_kept() -> None:
    """`uv run --quiet --with rich python` runs python with rich: the package is the practice,
    `--python 3.12`'s value is not a program."""
    assert command_shape("uv run --quiet --with rich python3 -c 'import rich'").text == (
        "uv run --with rich python3 -c <code>"
    )
    assert command_shape("uv run --python 3.12 pytest tests/ -x").text == (
        "uv run pytest tests/ -x"
    )
    assert command_shape("uvx --from=ruff-lsp ruff check").text == (
        "uvx --from ruff-lsp ruff check"
    )
