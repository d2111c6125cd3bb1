"""The concrete practice a cluster's members share, and the sentences that state it (DESIGN v3
"Dialectic and maintenance": a thesis or synthesis names a concrete practice — a command, a
flag, a file pattern or a tool choice — never a list of tool names).

Pure: observation texts in (as `dialectic.observe` writes them), sentences out; no Django.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dialectic import maths, roles
from memory.maths import shell

COMMAND_RE = re.compile(r"`([^`]+)`")
OPERATORS = frozenset({"|", "&&", "||", ";"})
SHARE_FLAG = 0.5  # a flag joins the practice when at least half the runs use it
SHARE_PREFIX = 0.6  # the practice's words: those at least 60 % of the runs start with
SHARE_BEFORE = 0.5  # the call before is part of the practice when half the runs follow it
FAILED = " failed"
FILE_TOOLS = ("Read", "Edit", "Write", "MultiEdit", "NotebookEdit")
# Commands that only look (list, print, search, show state) or shuffle files and processes:
# running them is no practice to publish on their own, only as a step before an action.
ROUTINE = frozenset(
    {
        "ls", "cat", "head", "tail", "less", "more", "grep", "egrep", "rg", "ag", "find", "tree",
        "wc", "echo", "printf", "pwd", "which", "type", "file", "stat", "du", "df", "ps",
        "lsof", "date", "env", "printenv", "sleep", "true", "jq", "sort", "uniq", "diff",
        "mv", "cp", "rm", "mkdir", "rmdir", "touch", "chmod", "ln", "kill", "pkill", "killall",
        "open", "sed", "awk", "curl", "wget", "cd",
        "git status", "git log", "git diff", "git show", "git branch", "git remote",
        "git rev-parse", "git ls-files", "git blame", "gh pr view", "gh pr list", "gh run list",
        "gh issue view", "gh issue list", "gh api", "docker ps", "docker logs", "docker exec",
        "docker compose ps", "docker compose logs",
    }
)  # fmt: skip
LOOKING = ROUTINE
# Ad hoc code handed to an interpreter (`python -c <code>`) is a one-off, not a practice.
ADHOC_RE = re.compile(r"(?:^|\s)-[ce] <(?:code|text)>|<code>")
# A file pattern (`*.py`, `.py files`) or a backticked command or flag: a concrete practice.
PATTERN_RE = re.compile(r"(\*\.\w+|\.\w{1,6} files?\b)")
# A path cut to its first part where that part was no folder of the project: home (`~/`), a
# scoped package (`@biomejs/`) or a host (`github.com/`).
CUT_PATH_RE = re.compile(r"^(?:~|@[\w.-]*|[\w-]+(?:\.[\w-]+)+)/$")
PLACEHOLDER_RE = re.compile(r"^(?:<\w+>|\w+=<v>|-[\w-]+=<v>)$")
# Subcommands that run a task named after them (`mise run <arg>`: the task was the meaning).
TASK_SUBCOMMANDS = frozenset({"run", "exec", "x", "task", "dlx"})


@dataclass(frozen=True)
class Member:
    """One observation of a cluster, as a practice is read from it."""

    tool: str
    text: str  # its observation text
    previous: str = ""  # the call before it, in its session


def command_in(text: str) -> str:
    """The command of a Bash observation text (`Bash `pytest -x` failed` → `pytest -x`)."""
    match = COMMAND_RE.search(text)
    return match.group(1) if match else ""


def failed(text: str) -> bool:
    return text.endswith(FAILED)


def common_command(commands: Sequence[str]) -> str:
    """What most runs share: the leading words (placeholders included) at least 60 % of them
    start with, then the flags at least half of those runs use in the same command, each with
    its value's placeholder when it usually has one (`uv run pytest tests/ -q --tb=<v>`)."""
    runs = [c.split(" ") for c in commands if c]
    if not runs:
        return ""
    words: list[str] = []
    group = runs
    while True:
        nexts = Counter(r[len(words)] for r in group if len(r) > len(words))
        if not nexts:
            break
        word, n = nexts.most_common(1)[0]
        if n < SHARE_PREFIX * len(group) or word in OPERATORS:
            break
        words.append(word)
        group = [r for r in group if r[: len(words)] == words]
    if not words:
        return ""
    rests = [_first_command(r[len(words) :]) for r in group]
    flags = Counter(w for rest in rests for w in dict.fromkeys(rest) if w.startswith("-"))
    for flag, n in flags.most_common():
        if n < SHARE_FLAG * len(group) or flag in words or len(words) >= 10:
            continue
        values = Counter(
            rest[rest.index(flag) + 1]
            for rest in rests
            if flag in rest and rest.index(flag) + 1 < len(rest)
        )
        value = values.most_common(1)[0] if values else ("", 0)
        words.append(flag)
        if value[0].startswith("<") and value[1] >= SHARE_FLAG * n:
            words.append(value[0])
    # What most runs name after the command (files by name: `git add <path>`) ...
    named = [next((w for w in rest if not w.startswith("-")), "") for rest in rests]
    if sum(bool(w) for w in named) >= SHARE_PREFIX * len(group):
        paths = sum(1 for w in named if w and ("/" in w or "*" in w or w == "."))
        words.append("<path>" if paths * 2 >= len(named) else "<arg>")
    # ... and the command most of them chain after it (`&& git commit`).
    chained = Counter(
        main_program(" ".join(_first_command(r[i + 1 :]))) or " ".join(r[i + 1 : i + 3])
        for r in group
        for i in [next((k for k, w in enumerate(r) if k >= len(words) - 1 and w == "&&"), -1)]
        if i >= 0
    )
    if chained:
        after, n = chained.most_common(1)[0]
        if n >= SHARE_PREFIX * len(group):
            words += ["&&", after]
    return " ".join(words)


def _first_command(words: Sequence[str]) -> list[str]:
    for n, word in enumerate(words):
        if word in OPERATORS:
            return list(words[:n])
    return list(words)


def literal(command: str) -> bool:
    """Whether a command names more than its program: a subcommand, a flag or a place, not
    only placeholders (`node <path>/*.cjs <arg>` names nothing)."""
    words = [w for w in command.split(" ") if w and w not in OPERATORS]
    return any(not w.startswith("<") and "=<" not in w[:2] for w in words[1:])


def swallowed(command: str) -> bool:
    """Whether the placeholders swallowed what the command does: a path cut to `~/`,
    `github.com/` or `@scope/`, a name cut at its slash as a flag's value (`--repo owner/`),
    the subcommand, script or target itself a placeholder (`cargo <arg>`, `mise run <arg>`,
    `pnpm --filter <v> <arg>`), or a line that is mostly placeholders."""
    words = [w for w in command.split(" ") if w]
    for n, word in enumerate(words):
        if CUT_PATH_RE.match(word):
            return True
        bare = word.endswith("/") and "/" not in word[:-1] and not word.startswith("<")
        if bare and n and words[n - 1].startswith("-") and "=" not in words[n - 1]:
            return True
    first = re.split(r"\s(?:&&|\|\||;|\|)\s", command, maxsplit=1)[0]
    head = [w for w in first.split(" ") if w and not (w[0].isupper() and "=<" in w)]
    program = main_program(" ".join(head))
    if program:
        rest = head[len(program.split(" ")) :]
        runs_task = len(program.split(" ")) == 1 or program.split(" ")[-1] in TASK_SUBCOMMANDS
        named = [w for k, w in enumerate(rest) if not w.startswith("-") and not (
            w == "<v>" and k and rest[k - 1].startswith("-"))]  # fmt: skip
        if runs_task and named and named[0] == "<arg>":
            return True
    placeholders = sum(1 for w in words if PLACEHOLDER_RE.match(w))
    return len(words) >= 3 and placeholders * 5 > len(words) * 3


def _ordinary_use(parts: Sequence[str]) -> bool:
    """Whether a chain is one program's ordinary use: its first step is only a subcommand of
    the program the next step runs (`git add && git commit`), naming nothing of how or what
    (no flag, no place); that is how the program works, not a practice of this person."""
    first, after = parts[0].split(" "), parts[1].split(" ")
    return first == main_program(parts[0]).split(" ") and first[0] == after[0]


def main_program(command: str) -> str:
    """The program with its subcommands, up to the first flag or placeholder (at most three
    words): `git log --oneline -<n>` → `git log`, `uv run pytest -x` → `uv run pytest`."""
    words: list[str] = []
    for word in command.split(" "):
        if not word or word.startswith(("-", "<")) or "=" in word or word in OPERATORS:
            break
        words.append(word)
    return " ".join(words[:3])


def only_looks(command: str) -> bool:
    """Whether a command line only looks (lists, prints, searches, shows state)."""
    parts = [p.strip() for p in re.split(r"\s(?:&&|\|\||;|\|)\s", command) if p.strip()]
    for part in parts:
        words = [w for w in part.split(" ") if "=" not in w or w.startswith("-")]
        head = words[0] if words else ""
        if head not in LOOKING and " ".join(words[:2]) not in LOOKING:
            return False
    return True


def step_phrase(text: str) -> str:
    """A call's text as a step of a sentence: `Edit .py file in src` → `editing .py files in
    src`, `Bash `make docs`` → `` `make docs` ``."""
    text = text.removesuffix(FAILED)
    command = command_in(text)
    if command:
        return f"`{command}`"
    tool, _, rest = text.partition(" ")
    verbs = {"Read": "reading", "Edit": "editing", "Write": "writing", "MultiEdit": "editing"}
    rest = rest.replace(" file in ", " files in ").replace("file in the project root", "files")
    if tool in verbs:
        return f"{verbs[tool]} {rest}".strip()
    return f"{tool} {rest}".strip() if rest else tool


@dataclass(frozen=True)
class Practice:
    """A cluster's practice: the command (Bash) or the kind of file work, what usually comes
    just before it, whether most runs failed, the command's role (`dialectic.roles`) and
    whether the step before it was a failed command it answers (failure → fix)."""

    tool: str
    command: str  # the common command, "" for other tools
    before: str  # the step most runs follow ("" when none dominates)
    failing: bool
    role: str = ""  # test, lint, format, ... ("" when the command plays none)
    after_failure: bool = False  # `before` is a command that had just failed

    @property
    def occasion(self) -> str:
        """When the command is run, as the cluster shows it: "role" (the project's way to do
        a job), "precondition" (a step chained before another: `source .venv/bin/activate &&
        python`, `git add <path> && git commit`), "fix" (run when another command failed), or
        "" when the cluster shows no occasion."""
        if self.role:
            return "role"
        if self.after_failure and self.before:
            return "fix"
        parts = [p.strip() for p in self.command.split(" && ")]
        if self.command.startswith(("source ", ". ")):
            return "precondition"
        if len(parts) >= 2 and not only_looks(parts[0]):
            programs = {main_program(p) for p in parts}
            if len(programs) == len(parts) and all(programs) and not _ordinary_use(parts):
                return "precondition"
        return ""

    @property
    def publishable(self) -> bool:
        """A command that does something, names more than its program and keeps its meaning
        (not only looks, not ad hoc code, not a failure on its own, placeholders did not
        swallow it), with an occasion: its role, a precondition, or a fix. A command with no
        role and no occasion (`git stash`, `gh pr diff <n>`) says nothing of when to run it;
        other tools' work is a place, not a practice, on its own."""
        if not self.command or not literal(self.command) or self.failing:
            return False
        if ADHOC_RE.search(self.command) or swallowed(self.command):
            return False
        if self.before.startswith("`") and swallowed(self.before.strip("`")):
            return False
        if only_looks(self.command.split(" && ")[0]):
            return False  # looking is no practice, whatever comes before it
        return bool(self.occasion)

    @property
    def workflow_ok(self) -> bool:
        """Whether the command may stand as a step of a longer workflow: it keeps its meaning,
        and has a role or an occasion (a failing test run read and fixed is a workflow)."""
        if not self.command:
            return True
        if not literal(self.command) or swallowed(self.command):
            return False
        if ADHOC_RE.search(self.command):
            return False
        return bool(self.role) or (self.occasion != "" and not self.failing)

    def sentence(self) -> str:
        if not self.command:
            return ""
        if self.failing:
            return f"When `{self.command}` fails, fix the cause and run it again."
        if self.role:
            said = roles.role_sentence(self.command, self.role).removesuffix(".")
            return f"{said} after {self.before}." if self.before else f"{said}."
        if self.after_failure and self.before:
            return f"When {self.before} fails, run `{self.command}`."
        if self.command.startswith(("source ", ". ")) and "&&" not in self.command:
            return f"Start commands with `{self.command} && …`."
        if self.occasion == "precondition":
            first, _, rest = self.command.partition(" && ")
            return f"Run `{first}` before `{rest}`."
        if self.before:
            return f"Run `{self.command}` after {self.before}."
        return f"Run `{self.command}`."


def practice_of(members: Sequence[Member]) -> Practice:
    """The practice of a cluster from its members (their texts and the calls before them)."""
    tools = Counter(m.tool for m in members)
    tool = tools.most_common(1)[0][0] if tools else ""
    own = [m for m in members if m.tool == tool]
    command = common_command([command_in(m.text) for m in own]) if tool == "Bash" else ""
    failing = sum(failed(m.text) for m in own) * 2 > len(own) if own else False
    befores = Counter(step_phrase(m.previous) for m in own if m.previous)
    before = ""
    after_failure = False
    if befores:
        phrase, n = befores.most_common(1)[0]
        mine = f"`{command}`" if command else ""
        theirs = main_program(command_in(phrase))
        distinct = phrase != mine and (not theirs or theirs != main_program(command))
        if n >= SHARE_BEFORE * len(own) and distinct:
            before = phrase
            fails = sum(1 for m in own if m.previous and step_phrase(m.previous) == phrase
                        and failed(m.previous))  # fmt: skip
            after_failure = bool(theirs) and fails * 2 > n
    role = roles.command_role(command) if command else ""
    return Practice(
        tool=tool,
        command=command,
        before=before,
        failing=failing,
        role=role,
        after_failure=after_failure,
    )


def steps_text(sequence: Sequence[str], joiner: str = " → ") -> str:
    """A tool sequence for a sentence, a run of one tool said once with its count
    (`Glob → Grep → Read (3 times)`), so no sentence strings one tool name after itself."""
    runs: list[list[Any]] = []
    for tool in sequence:
        if runs and runs[-1][0] == tool:
            runs[-1][1] += 1
        else:
            runs.append([tool, 1])
    return joiner.join(f"{t} ({n} times)" if n > 1 else str(t) for t, n in runs)


def project_command(statement: str) -> str:
    """The command of a statement when it is a project's own: its way of doing a job (it has
    a role: tests, lint, format, type-check, build, install, generate, docs) or it names the
    project's files (`git add cmd/*.go`), else ""."""
    for command in COMMAND_RE.findall(statement):
        if roles.command_role(command) or any(_project_path(w) for w in command.split(" ")):
            return command
    return ""


def runner_free(command: str) -> str:
    """A command without the runner in front that reached the project's tool (`npx tsc
    --noEmit`, `pnpm tsc --noEmit` → `tsc --noEmit`; `shell.RUNNERS`, `shell.PACKAGE_MANAGERS`);
    other commands as they are."""
    words = command.split(" ")
    if len(words) > 2 and (
        (words[0], words[1]) in shell.RUNNERS
        or (words[0] in shell.PACKAGE_MANAGERS and words[1] in ("run", "x"))
    ):
        return " ".join(words[2:])
    if len(words) > 1 and ((words[0], "") in shell.RUNNERS or words[0] in shell.PACKAGE_MANAGERS):
        return " ".join(words[1:])
    return command


def same_job(statement: str, other: str) -> bool:
    """Whether two statements give one project's way of doing the same job: the same role and
    the same command once the package runner is set aside (`Type-check with `pnpm tsc --noEmit``
    and `Type-check with `npx tsc --noEmit``)."""
    mine, theirs = project_command(statement), project_command(other)
    if not mine or not theirs:
        return False
    role = roles.command_role(mine)
    same_role = bool(role) and role == roles.command_role(theirs)
    return same_role and runner_free(mine) == runner_free(theirs)


def _project_path(word: str) -> bool:
    """A folder or file pattern of the project (`cmd/*.go`, `.planning/`), not a placeholder,
    a place outside it (`<path>/…`, `~/…`, `/tmp/…`) or an operator."""
    if word.startswith(("<", "~", "/", "-")) or "=" in word:
        return False
    return "/" in word or bool(re.match(r"^\*\.\w+$", word))


def names_practice(statement: str) -> bool:
    """Whether a thesis or synthesis statement names a concrete practice: a backticked command
    or flag, or a file pattern; a statement that is only tool names never does."""
    for command in COMMAND_RE.findall(statement):
        if command.strip() and not maths.is_tool_list(command):
            return True
    return bool(PATTERN_RE.search(statement))
