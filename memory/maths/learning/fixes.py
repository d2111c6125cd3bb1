"""Error → fix: a failed tool call followed by a successful, similar one in the same session,
said as one general lesson per recurring error.

A failure is a tool error only when the tool could not do what was asked: a non-zero exit whose
output is a test, lint or formatter report is a result (the tests ran), a call a hook, a guard,
the harness or the person refused is policy, not an error to work around, and an exit code with
no message of its own (a kill, a timeout) says nothing to learn from. A missing program is a
lesson only when the fix runs it (by name, path or runner) or installs it. The lesson names the error's kind and the fix's
command shape (paths and values as placeholders, `memory.maths.shell`), so the same error met
again words the same lesson and is counted as a recurrence, not a new candidate. A fix that a
hook blocked, or that carries a hook bypass (`--no-verify`, `# skip-hook`, `SKIP=` …), is never
proposed, nor one that forces its way through by throwing work away (`git push --force`, `git
reset --hard`, `rm -rf`) where the failed command did not.

Pure Python (no Django).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memory.maths import shell

_TOKEN = re.compile(r"[\w.@/-]+")
SIMILAR_CALL = 0.3
MAX_SHAPE_CHARS = 120

# --- what a failure is ------------------------------------------------------------------------

# Output of a test run or a linter that ran and found something: the command worked.
_REPORT = re.compile(
    r"^=+ .*\b(?:failed|passed|error)s?\b.* =+$"  # pytest's summary line
    r"|^=+ (?:FAILURES|ERRORS|short test summary info) =+$"
    r"|^(?:FAILED|ERROR) [\w/.-]+\.py::"  # pytest's short summary
    r"|^Tests?:\s+\d+ failed"  # jest, vitest
    r"|^\s*\d+ (?:failing|passing)\b"  # mocha
    r"|^\s*\d+ fail\s*$|^\s*Test Files\s+\d+ failed"  # bun test, vitest
    r"|^--- FAIL: |^FAIL\s+\S+\s+[\d.]+s$"  # go test
    r"|^test result: FAILED\."  # cargo test
    r"|^Found \d+ errors? in \d+ files?"  # mypy
    r"|^Found \d+ errors?\.?$"  # ruff
    r"|^\S+\.\w+:\d+:\d+: \S"  # a diagnostic (file:line:col: message): linters, compilers
    r"|^\S+\.\w+:\d+: error: "  # mypy
    r"|^✖ \d+ problems?"  # eslint
    r"|^\d+ errors? and \d+ warnings? potentially fixable"
    r"|^Ran \d+ tests? in [\d.]+s$"  # unittest
    r"|^(?:=+ )?no tests (?:ran|collected)\b"  # pytest found nothing to run (exit 5)
    r"|^(?:unformatted: File )?[Ww]ould (?:be )?reformat|^\d+ files? would be reformatted"  # ruff, black
    r"|^Diff in \S+:\d+:"  # cargo fmt --check, rustfmt --check
    r"|^\[warn\] Code style issues found"  # prettier --check
    r"|^[^\t\n]+\t(?:pending|fail|pass|skipping|cancel)\t",  # gh pr checks: the checks' states
    re.M,
)
# A call a hook or the person refused (PreToolUse deny, a blocking exit, a rejected tool use):
# the project or the person forbids it.
_BLOCKED = re.compile(
    r"The user doesn't want to proceed with this tool use|tool use was rejected"
    r"|\bhook\b[^\n]{0,80}\b(?:block|blocked|blocking|den(?:y|ied)|refus\w*|prevent\w*)\b"
    r"|\b(?:block|blocked|den(?:y|ied)|refused)\b[^\n]{0,40}\bhook\b"
    r"|PreToolUse:\w+ hook|permissionDecision\W+deny"
    r"|The user doesn't want to take this action|<tool_use_error>Blocked\b|(?-i:^BLOCKED\b)"
    r"|^Permission (?:for this action|to use \w+)\b[^\n]{0,400}\bdenied\b|\bRefusing to run\b",
    re.I | re.M,
)
# Ways to get past the project's hooks: never part of a proposed fix.
_BYPASS = re.compile(
    r"--no-verify\b|#\s*skip[-_ ]?hooks?\b|(?:^|[\s;&|(])(?:SKIP|HUSKY|HUSKY_SKIP_HOOKS|"
    r"LEFTHOOK|PRE_COMMIT_ALLOW_NO_CONFIG|SKIP_HOOKS?)=|\bcore\.hooksPath\b|--no-hooks\b"
    r"|\bgit\s+commit\b[^\n;&|]*\s-\w*n\w*\b",
    re.I,
)


def is_report(output: str) -> bool:
    """The output of a test run or a linter that ran (a result, even with a non-zero exit)."""
    return bool(_REPORT.search(output[:20_000]))


def is_blocked(output: str) -> bool:
    """The call was refused by a hook (PreToolUse deny or a blocking hook's output) or by the
    person (a rejected tool use)."""
    return bool(_BLOCKED.search(output[:5_000]))


# Claude Code cancels the other calls of a batch when one fails, and stops a command that runs
# past the Bash tool's time limit: neither is this command's error.
# Nor is the harness declining to run it (a tool it wants used instead, a permission check that
# could not run, a working folder that vanished).
_NOT_ITS_ERROR = re.compile(
    r"Sibling tool call errored|<tool_use_error>Cancelled|^Command timed out after\b"
    r"|^Use the \w+ tool\b|^Tool permission request failed\b|is temporarily unavailable, so auto"
    r" mode\b|^Working directory \S+ was deleted",
    re.I | re.M,
)


def has_bypass(command: str) -> bool:
    """The command skips the project's hooks (`--no-verify`, `# skip-hook`, `SKIP=` …)."""
    return bool(_BYPASS.search(command))


# Ways past an error that throw work away: a forced push, a hard reset, a forced clean, a forced
# branch delete, a recursive forced remove. What worked once in one state of one repository is
# no lesson to apply whenever the same command fails.
_DESTRUCTIVE = re.compile(
    r"\bgit\s+(?:-C\s+\S+\s+)?push\b[^\n;&|]*\s(?:-\w*f\w*|--force(?:-with-lease)?(?:=\S*)?)(?=\s|$)"
    r"|\bgit\s+(?:-C\s+\S+\s+)?reset\b[^\n;&|]*\s--hard\b"
    r"|\bgit\s+(?:-C\s+\S+\s+)?clean\b[^\n;&|]*\s-\w*f"
    r"|\bgit\s+(?:-C\s+\S+\s+)?branch\b[^\n;&|]*\s(?:-D|--delete\s+--force)\b"
    r"|\brm\s+(?:-\w*r\w*f\w*|-\w*f\w*r\w*|-r\s+-f|-f\s+-r)\b",
    re.I,
)


def is_destructive(command: str) -> bool:
    """The command throws work away (`git push --force`, `git reset --hard`, `rm -rf` …)."""
    return bool(_DESTRUCTIVE.search(command))


# --- the error's kind -------------------------------------------------------------------------

_NOT_FOUND = re.compile(
    # the shell's own words: "bash: foo: command not found", "sh: 1: foo: not found" (not "no
    # configuration file provided: not found", a program's message)
    r"(?:^|:\s)(?:\S*?/)?(?P<a>[\w.+-]+): (?:command )?not found"
    r"|command not found: (?P<b>[\w.+-]+)"
    r"|'(?P<c>[\w.+-]+)' is not recognized as an internal or external command"
    r"|No such file or directory: '(?P<d>[\w.+-]+)'$",
    re.M,
)
_NO_MODULE = re.compile(r"No module named '?(?P<m>[\w.]+)'?")
_EXIT = re.compile(r"^\s*(?:Exit code|exit status|Error: Command failed with exit code) \d+\s*$")
_MASK = re.compile(
    r"'[^'\n]{0,80}'|\"[^\"\n]{0,80}\"|`[^`\n]{0,80}`|\S*[/\\]\S*|\b0x[0-9a-f]+\b|\b\d+\b", re.I
)


def _command(tool_input: str) -> str:
    try:
        value = json.loads(tool_input)
    except ValueError:
        return tool_input
    if isinstance(value, dict):
        for key in ("command", "file_path", "path", "pattern", "url", "query"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return tool_input


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
# The line that says what went wrong: one that starts as an error does ("fatal: …", "error: …"),
# else one that names a failure. Output often opens with progress or notes ("Switched to branch
# 'main'", "[hook] Syncing …", a build's first step), which say nothing of the error.
_ERROR_START = re.compile(r"^(?:fatal|error|E|FAILED|failed|panic|Traceback)\b\W", re.I)
_ERROR_WORD = re.compile(
    r"\b(?:error|fatal|fail(?:ed|ure|s)?|not\s+found|no\s+such|unknown|invalid|denied|cannot|"
    r"can'?t|could\s+not|couldn'?t|unable|rejected|refused|not\s+allowed|conflict|unrecognized|"
    r"aborted|timed\s+out|exception|not\s+a\s+valid|does\s+not\s+exist)\b",
    re.I,
)


def _first_line(text: str, limit: int = 160) -> str:
    """The line of a failure's output that says what went wrong (the first line otherwise)."""
    lines = [line.strip() for line in _ANSI.sub("", text[:20_000]).splitlines()]
    lines = [line for line in lines if line and not _EXIT.match(line)]
    for pattern in (_ERROR_START, _ERROR_WORD):  # a line that starts as an error, else names one
        for line in lines[:80]:
            if pattern.search(line):
                return line[:limit]
    return lines[0][:limit] if lines else ""


def error_kind(output: str) -> tuple[str, str]:
    """(kind, subject) of a failure: ("not found", program), ("no module", module), or
    ("error", the first line with quoted spans, paths and numbers masked)."""
    found = _NOT_FOUND.search(output[:5_000])
    if found is not None:
        return "not found", next(g for g in found.groups() if g)
    module = _NO_MODULE.search(output[:5_000])
    if module is not None:
        return "no module", module.group("m")
    line = _first_line(output)
    return "error", _MASK.sub("…", line)[:100]


# --- pairs and lessons ------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One tool call as error → fix pairing sees it."""

    tool: str
    tool_input: str
    success: bool
    output: str = ""


@dataclass(frozen=True)
class Fix:
    tool: str
    failed: str
    fixed: str
    error: str
    statement: str = field(default="")
    key: str = ""  # the recurring error: tool, failing program, error kind and subject
    # As `memory.maths.shell` says them: the command that failed (the line's main command,
    # `pytest tests/*.py`) and the line that worked (`.venv/bin/pytest tests/*.py`). Stored
    # with the lesson, so PreToolUse knows the command whatever the lesson's wording.
    failed_shape: str = ""
    fixed_shape: str = ""


def _tokens(text: str) -> frozenset[str]:
    return frozenset(t.casefold() for t in _TOKEN.findall(text))


def call_similarity(a: str, b: str) -> float:
    """Jaccard similarity of the two inputs' tokens (0 when either is empty)."""
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)


_VIRTUALENV = re.compile(
    r"(?:^|[\s;&|])(?:source|\.)\s+\S*(?:venv|virtualenv|\.env)\S*/bin/activate"
    r"|(?:^|\s)\S*\.?venv/bin/|\b(?:uv|poetry|pipenv|pdm|hatch|rye) run\b",
    re.I,
)


def _shape(tool: str, command: str) -> tuple[str, str]:
    """(the main program, the line's shape) of a Bash command; other tools keep the input."""
    if tool != "Bash":
        return tool, command.strip()[:MAX_SHAPE_CHARS]
    parsed = shell.command_shape(command)
    main = parsed.main
    head = main.head.split()[0] if main is not None else ""
    return head, (parsed.text or command.strip())[:MAX_SHAPE_CHARS]


def _main(command: str) -> tuple[str, str]:
    """(head, shape) of the command a shell line is for (`git push`, `git push -u <v> <arg>`)."""
    main = shell.command_shape(command).main
    return (main.head, main.shape) if main is not None else ("", "")


def lesson(tool: str, failed: str, fixed: str, output: str) -> tuple[str, str]:
    """(the general lesson, the recurring error's key) for a failed call and its fix."""
    program, failed_shape = _shape(tool, failed)
    _, fixed_shape = _shape(tool, fixed)
    kind, subject = error_kind(output)
    key = f"{tool}\n{program}\n{kind}\n{subject}".casefold()
    if kind == "not found":
        if _VIRTUALENV.search(fixed):
            return (
                f"When `{subject}` is not found, run it from the project's virtualenv: "
                f"`{fixed_shape}`."
            ), key
        path = _path_to(subject, fixed)  # the shape names a program by its name alone
        if path:
            return f"When `{subject}` is not found, run it as `{path}`: `{fixed_shape}`.", key
        return f"When `{subject}` is not found, run `{fixed_shape}` instead.", key
    if kind == "no module":
        where = " from the project's virtualenv" if _VIRTUALENV.search(fixed) else ""
        return (
            f"When `{program or tool}` cannot import `{subject}`, run it{where}: `{fixed_shape}`."
        ), key
    said = f' ("{subject}")' if subject else ""
    return f"When `{failed_shape}` fails{said}, run `{fixed_shape}` instead.", key


_FAILED_OF = re.compile(r"^When `([^`]+)`")
# A lesson worded by `lesson`, read back: what failed and how ("is not found", "cannot import
# `M`", "fails (\"the error line\")").
_LESSON_WORDING = re.compile(
    r"^When `(?P<what>[^`]+)` (?:(?P<missing>is not found)\b|cannot import `(?P<module>[\w.]+)`"
    r"|fails(?: \(\"(?P<said>[^\"]*)\"\))?)"
)


def lesson_parts(statement: str) -> tuple[str, str, str] | None:
    """(kind, what failed, what it names) of a lesson worded by `lesson`: ("not found",
    program, ""), ("no module", program, module), ("error", the failing line, the error line
    quoted or ""); None for any other wording (a lesson an LLM or a person worded)."""
    found = _LESSON_WORDING.match(statement)
    if found is None:
        return None
    if found["missing"]:
        return "not found", found["what"], ""
    if found["module"]:
        return "no module", found["what"], found["module"]
    return "error", found["what"], found["said"] or ""


def failed_of(statement: str) -> str:
    """The command (or program) an error → fix lesson worded by `lesson` warns about: the code
    span after its leading "When", or "" for any other statement."""
    match = _FAILED_OF.match(statement)
    return match.group(1) if match else ""


def _not_an_error(output: str) -> bool:
    return (
        is_report(output)
        or is_blocked(output)
        or bool(_NOT_ITS_ERROR.search(output[:2_000]))
        or not _first_line(output)  # an exit code alone: killed, or a check that answered no
    )


# Ways a fix makes a missing program available: installing it or the project's dependencies,
# or running it through a tool that fetches it.
_INSTALLS = re.compile(
    r"\b(?:npm|pnpm|yarn|bun)\s+(?:install|i|add|ci)\b|\bpip3?\s+install\b"
    r"|\buv\s+(?:sync|add|pip\s+install|tool\s+install)\b|\b(?:go|cargo|gem|pipx)\s+install\b"
    r"|\bbrew\s+install\b|\bapt(?:-get)?\s+install\b|\bpoetry\s+install\b",
    re.I,
)


def _reaches(program: str, command: str) -> bool:
    """The fix runs the missing program (by name or path, through a runner or a package
    manager) or installs it: a way to have it. Doing the job with another program (`psql` not
    found, a query through `node -e`) or a command that never needed it is no lesson about it."""
    if _VIRTUALENV.search(command) or _INSTALLS.search(command):
        return True
    return re.search(r"(?<![\w.-])" + re.escape(program) + r"(?![\w-])", command) is not None


def _path_to(program: str, command: str) -> str:
    """The path the fix runs the missing program by (`/usr/local/go/bin/go`, `~/go/bin/swag`),
    or "" when it runs it by name."""
    found = re.search(  # in a command's place: first, or after an operator or a wrapper
        r"(?:^|[;&|(]|\b(?:sudo|exec|env|time|nohup))\s*(?:\w+=\S*\s+)*"
        r"((?:/|~/)[^\s;&|()'\"]*/" + re.escape(program) + r")(?=$|[\s;&|)])",
        command,
    )
    return found.group(1) if found else ""


_SAYS_WHO = re.compile(r"^([\w.+-]+): ")


def _a_filters_error(command: str, output: str) -> bool:
    """The error is a program's after a pipe that only trims or reads the output (`| tail -2`
    written `| tail 2`: "tail: 2: No such file or directory"): no lesson about the command
    before the pipe."""
    if "|" not in command:
        return False
    who = _SAYS_WHO.match(_first_line(output))
    if who is None or who.group(1) not in shell.DATA_PROGRAMS:
        return False
    main = shell.command_shape(command).main
    return main is not None and main.head.split(" ")[0] != who.group(1)


def error_fixes(calls: Sequence[Call], *, window: int = 6) -> list[Fix]:
    """Each shell error followed (within `window` calls) by a successful similar command with a
    different input — the same program, unless the error was a missing program or module: the
    failure, the fix and its general lesson. Test and lint reports are results, not errors; a
    blocked or rejected call is no error; a fix whose command a hook blocked in this session,
    or that bypasses hooks, is never proposed."""
    blocked = {
        _shape(c.tool, _command(c.tool_input))[1]
        for c in calls
        if not c.success and is_blocked(c.output)
    }
    fixes: list[Fix] = []
    used: set[int] = set()
    for i, failed in enumerate(calls):
        if failed.success or failed.tool != "Bash" or _not_an_error(failed.output):
            continue
        if _a_filters_error(_command(failed.tool_input), failed.output):
            continue
        kind, subject = error_kind(failed.output)
        for j in range(i + 1, min(len(calls), i + 1 + window)):
            fixed = calls[j]
            if j in used or fixed.tool != failed.tool or not fixed.success:
                continue
            a, b = _command(failed.tool_input), _command(fixed.tool_input)
            if a.strip() == b.strip() or call_similarity(a, b) < SIMILAR_CALL:
                continue
            if has_bypass(b) or _shape(fixed.tool, b)[1] in blocked:
                break  # the next step got past a hook: nothing to teach
            if is_destructive(b) and not is_destructive(a):
                break  # it was forced through (a force push, a hard reset): nothing to teach
            if kind == "not found" and not _reaches(subject, b):
                continue  # another way to do the job, or a command that never needed it
            (head_a, shape_a), (head_b, shape_b) = _main(a), _main(b)
            if kind == "error" and (head_a != head_b or shape_a == shape_b):
                continue  # another command did something else, or the same one again
            line_a, line_b = _shape(failed.tool, a)[1], _shape(fixed.tool, b)[1]
            if line_a.split(" | ")[0] == line_b.split(" | ")[0] and not (
                kind == "not found" and _path_to(subject, b)
            ):
                continue  # the same line with other content (or output filter) got round it
            if head_a.split(" ")[0] in shell.DATA_PROGRAMS:
                break  # looking at files (ls, grep, cat …): no practice to learn
            used.add(j)
            statement, key = lesson(failed.tool, a, b, failed.output)
            fixes.append(
                Fix(
                    failed.tool,
                    a[:400],
                    b[:400],
                    _first_line(failed.output),
                    statement,
                    key,
                    failed_shape=(shape_a or _shape(failed.tool, a)[1])[:MAX_SHAPE_CHARS],
                    fixed_shape=_shape(fixed.tool, b)[1],
                )
            )
            break
    return fixes
