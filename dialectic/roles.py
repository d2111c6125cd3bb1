"""The role a shell command plays in a project's work, from its program and subcommand: running
the tests, linting, formatting, type-checking, building, installing the dependencies or
generating code. A command with a role is the project's way of doing that job, worth a rule
("Run tests with `bun run test`."); a command without one (`git stash`, `ssh …`) says nothing on
its own of when to run it.

Pure: normalised command text in (as `memory.maths.shell` writes it), a role name out; no Django.
"""

from __future__ import annotations

import re

TEST = "test"
LINT = "lint"
FORMAT = "format"
TYPECHECK = "typecheck"
BUILD = "build"
INSTALL = "install"
GENERATE = "generate"
DOCS = "docs"

# How a statement says the role, before the command.
WORDING = {
    TEST: "Run tests with",
    LINT: "Lint with",
    FORMAT: "Format with",
    TYPECHECK: "Type-check with",
    BUILD: "Build with",
    INSTALL: "Install dependencies with",
    GENERATE: "Regenerate code with",
    DOCS: "Build the docs with",
}

# Programs (or program and subcommand) that do one job, whatever their arguments.
PROGRAMS: dict[str, str] = {
    # test runners
    "pytest": TEST, "py.test": TEST, "python -m pytest": TEST, "python -m unittest": TEST,
    "jest": TEST, "vitest": TEST, "mocha": TEST, "ava": TEST, "jasmine": TEST, "karma": TEST,
    "playwright test": TEST, "cypress run": TEST, "rspec": TEST, "phpunit": TEST, "pest": TEST,
    "go test": TEST, "cargo test": TEST, "cargo nextest": TEST, "mix test": TEST,
    "deno test": TEST, "bun test": TEST, "dotnet test": TEST, "gradle test": TEST,
    "mvn test": TEST, "ctest": TEST, "tox": TEST, "nox": TEST, "rails test": TEST,
    "swift test": TEST, "npm test": TEST, "pnpm test": TEST, "yarn test": TEST,
    "npm t": TEST, "bats": TEST, "gotestsum": TEST,
    # linters
    "eslint": LINT, "biome lint": LINT, "biome check": LINT, "ruff check": LINT, "ruff": LINT,
    "flake8": LINT, "pylint": LINT, "golangci-lint run": LINT, "golangci-lint": LINT,
    "go vet": LINT, "cargo clippy": LINT, "shellcheck": LINT, "rubocop": LINT,
    "stylelint": LINT, "markdownlint": LINT, "hadolint": LINT, "oxlint": LINT,
    "mix credo": LINT, "staticcheck": LINT, "tflint": LINT, "actionlint": LINT,
    "npm run lint": LINT, "swiftlint": LINT, "ktlint": LINT, "yamllint": LINT,
    # formatters
    "prettier": FORMAT, "black": FORMAT, "isort": FORMAT, "ruff format": FORMAT,
    "gofmt": FORMAT, "goimports": FORMAT, "go fmt": FORMAT, "cargo fmt": FORMAT,
    "rustfmt": FORMAT, "biome format": FORMAT, "mix format": FORMAT, "dprint fmt": FORMAT,
    "clang-format": FORMAT, "shfmt": FORMAT, "terraform fmt": FORMAT, "swiftformat": FORMAT,
    # type checkers
    "mypy": TYPECHECK, "pyright": TYPECHECK, "basedpyright": TYPECHECK, "tsc": TYPECHECK,
    "vue-tsc": TYPECHECK, "cargo check": TYPECHECK, "flow": TYPECHECK, "pyre": TYPECHECK,
    "svelte-check": TYPECHECK, "mix dialyzer": TYPECHECK,
    # build tools
    "go build": BUILD, "cargo build": BUILD, "vite build": BUILD, "next build": BUILD,
    "docker build": BUILD, "docker compose build": BUILD, "gradle build": BUILD,
    "mvn package": BUILD, "webpack": BUILD, "esbuild": BUILD, "swift build": BUILD,
    "mix compile": BUILD, "python -m build": BUILD, "uv build": BUILD, "tsup": BUILD,
    "rollup": BUILD, "xcodebuild": BUILD, "dotnet build": BUILD, "cmake --build": BUILD,
    "make": BUILD,
    # dependencies, as the project installs them
    "npm ci": INSTALL, "uv sync": INSTALL, "poetry install": INSTALL, "bundle install": INSTALL,
    "pipenv install": INSTALL, "pdm install": INSTALL, "mix deps.get": INSTALL,
    "go mod tidy": INSTALL, "go mod download": INSTALL, "cargo fetch": INSTALL,
    "npm install": INSTALL, "pnpm install": INSTALL, "yarn install": INSTALL,
    "bun install": INSTALL, "pnpm i": INSTALL, "npm i": INSTALL,
    # code generators
    "go generate": GENERATE, "prisma generate": GENERATE, "buf generate": GENERATE,
    "sqlc generate": GENERATE, "protoc": GENERATE, "openapi-generator": GENERATE,
    "orval": GENERATE, "graphql-codegen": GENERATE,
    # documentation builders
    "mkdocs build": DOCS, "sphinx-build": DOCS, "typedoc": DOCS, "cargo doc": DOCS,
}  # fmt: skip

# Runners of a project's own named tasks (`npm run <script>`, `make <target>`): the role is in
# the task's name.
TASK_RUNNERS = (
    "npm run", "pnpm run", "yarn run", "bun run", "mise run", "deno task", "just", "make",
    "task", "poe", "invoke", "rake", "npm", "pnpm", "yarn", "composer", "hatch run", "uv run",
    "poetry run", "pdm run", "nx run", "turbo run", "turbo", "nx",
)  # fmt: skip
# A task name's words (split at `:`, `-`, `_`, `.`, `/`) that say its role.
TASK_WORDS: dict[str, str] = {
    "test": TEST, "tests": TEST, "spec": TEST, "specs": TEST, "e2e": TEST, "unit": TEST,
    "integration": TEST, "check-types": TYPECHECK,
    "lint": LINT, "eslint": LINT, "biome": LINT, "clippy": LINT, "vet": LINT,
    "fmt": FORMAT, "format": FORMAT, "prettier": FORMAT,
    "typecheck": TYPECHECK, "type-check": TYPECHECK, "types": TYPECHECK, "tsc": TYPECHECK,
    "typescript": TYPECHECK, "mypy": TYPECHECK, "pyright": TYPECHECK,
    "build": BUILD, "compile": BUILD, "bundle": BUILD,
    "install": INSTALL, "bootstrap": INSTALL, "deps": INSTALL,
    "generate": GENERATE, "gen": GENERATE, "codegen": GENERATE,
    "docs": DOCS, "doc": DOCS,
}  # fmt: skip
# A flag that turns a formatter into a check of the formatting.
CHECK_FLAGS = frozenset({"--check", "--diff", "-l", "--list-different", "--dry-run"})
_TASK_SPLIT = re.compile(r"[:._/-]")
_PYTHON = re.compile(r"^python[\d.]*$")


def _words(command: str) -> list[str]:
    return [w for w in command.split(" ") if w]


def _first(command: str) -> str:
    """The first command of a line (up to `&&`, `||`, `;` or a pipe)."""
    return re.split(r"\s(?:&&|\|\||;|\|)\s", command, maxsplit=1)[0].strip()


def _unwrap(words: list[str]) -> list[str]:
    """Without variable assignments and the runners that only launch a program (`npx`, `uvx`,
    `bunx`, `pnpm dlx`, `pnpm exec`, `uv run`, `poetry run`, `bundle exec`, `time`)."""
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]
    if words and _PYTHON.match(words[0]):
        words = ["python", *words[1:]]
    launchers = {
        ("npx",), ("bunx",), ("uvx",), ("pnpm", "dlx"), ("pnpm", "exec"), ("npm", "exec"),
        ("yarn", "dlx"), ("bun", "x"), ("uv", "run"), ("poetry", "run"), ("pipenv", "run"),
        ("pdm", "run"), ("hatch", "run"), ("rye", "run"), ("bundle", "exec"), ("time",),
        ("sudo",), ("nohup",), ("mise", "exec"),
    }  # fmt: skip
    changed = True
    while changed and words:
        changed = False
        for launcher in launchers:
            n = len(launcher)
            if tuple(words[:n]) == launcher and len(words) > n and not words[n].startswith("<"):
                # `uv run pytest` launches pytest; `uv run <script>` is a task (see below).
                words, changed = words[n:], True
                while words and words[0].startswith("-"):
                    words = words[1:]
                break
    return words


def command_role(command: str) -> str:
    """The role of a normalised command line: that of its first command with one (runners
    unwrapped; `source .venv/bin/activate && pytest` → test), "" when none has: `uv run pytest
    -q` → test, `bun run lint` → lint, `npx biome check src/` → lint, `make` → build, `pnpm
    api:generate` → generate, `git push` → ""."""
    for part in re.split(r"\s(?:&&|\|\||;)\s", command):
        role = _role(_first(part))
        if role:
            return role
    return ""


def _role(command: str) -> str:
    words = _unwrap(_words(command))
    if not words:
        return ""
    for size in (3, 2, 1):
        key = " ".join(words[:size])
        if len(words) >= size and key in PROGRAMS:
            role = PROGRAMS[key]
            rest = words[size:]
            if role == INSTALL and rest and not rest[0].startswith("-"):
                return ""  # `npm install <arg>`: adds a package, a one-off
            if role == BUILD and key == "make" and rest and not rest[0].startswith("-"):
                break  # `make <target>`: the target's name says the role
            if key == "tsc" and any(w in ("-b", "--build") for w in rest):
                return BUILD
            return role
    return _task_role(words)


def _task_role(words: list[str]) -> str:
    for runner in TASK_RUNNERS:
        parts = runner.split(" ")
        if words[: len(parts)] != parts or len(words) <= len(parts):
            continue
        task = words[len(parts)].lower()
        if task.startswith(("-", "<")):
            return ""
        if task in TASK_WORDS:
            return TASK_WORDS[task]
        for piece in _TASK_SPLIT.split(task):
            if piece in TASK_WORDS:
                return TASK_WORDS[piece]
        return ""
    return ""


def checks_only(command: str, role: str) -> bool:
    """A formatter run with a flag that only reports (`prettier --check`, `black --diff`)."""
    return role == FORMAT and any(w in CHECK_FLAGS for w in _words(_first(command)))


def role_sentence(command: str, role: str) -> str:
    """The role said before the command: "Run tests with `bun run test`."."""
    wording = "Check formatting with" if checks_only(command, role) else WORDING[role]
    return f"{wording} `{command}`."
