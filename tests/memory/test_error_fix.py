"""Error → fix as one general lesson per recurring error (issue #24 item 6): later occurrences are
recurrences, a test or lint report is a result, and a command a hook blocked or one that bypasses
hooks is never proposed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from memory.maths import learning as L
from memory.models import AgentSession, Engram, LearningDraft, LearningSignal
from memory.services import learning

URL = "/api/v1/hooks/claude-code"
NOT_FOUND = "Exit code 127\n/bin/bash: line 1: pytest: command not found"
PYTEST_REPORT = (
    "Exit code 1\n============================= test session starts ==============================\n"
    "collected 4 items\n\ntests/test_cart.py ..F.\n\n=================================== FAILURES "
    "===================================\n________________________________ test_total "
    "________________________________\nE       assert 3 == 4\n=========================== short "
    "test summary info ============================\nFAILED tests/test_cart.py::test_total - "
    "assert 3 == 4\n========================= 1 failed, 3 passed in 0.12s "
    "=========================="
)
RUFF_REPORT = (
    "Exit code 1\nsrc/cart.py:12:5: F841 Local variable `x` is assigned to but never used\n"
    "Found 1 error.\n[*] 1 fixable with the `--fix` option."
)
BLOCKED = (
    "PreToolUse:Bash hook error: [.claude/hooks/guard.sh]: git add -A is blocked in this repo; "
    "stage the files you changed by name"
)


def bash(command: str, ok: bool, output: str = "") -> L.Call:
    return L.Call("Bash", json.dumps({"command": command}), ok, output)


def test_a_missing_program_fixed_from_the_virtualenv_is_one_general_lesson() -> None:
    (fix,) = L.error_fixes(
        [
            bash("pytest tests/test_cart.py -x", False, NOT_FOUND),
            bash("source .venv/bin/activate && pytest tests/test_cart.py -x", True),
        ]
    )
    assert fix.statement == (
        "When `pytest` is not found, run it from the project's virtualenv: "
        "`source .venv/bin/activate && pytest tests/*.py -x`."
    )
    # The commands as data, whatever the wording: what failed (its main command) and what worked.
    assert (fix.failed_shape, fix.fixed_shape) == (
        "pytest tests/*.py -x",
        "source .venv/bin/activate && pytest tests/*.py -x",
    )


def test_the_same_error_on_other_files_words_the_same_lesson() -> None:
    lessons = {
        (fix.statement, fix.key)
        for path in ("tests/test_cart.py", "tests/test_user.py", "tests/test_tax.py")
        for fix in L.error_fixes(
            [
                bash(f"pytest {path} -x", False, NOT_FOUND.replace("line 1", "line 7")),
                bash(f"source .venv/bin/activate && pytest {path} -x", True),
            ]
        )
    }
    assert len(lessons) == 1


@pytest.mark.parametrize("report", [PYTEST_REPORT, RUFF_REPORT])
def test_a_test_or_lint_report_is_a_result_not_a_tool_error(report: str) -> None:
    assert L.is_report(report)
    calls = [bash("pytest tests/ -q", False, report), bash("pytest tests/ -q -x", True)]
    assert L.error_fixes(calls) == []


def test_a_command_a_hook_blocked_is_never_proposed() -> None:
    calls = [
        bash("git add -A", False, BLOCKED),
        bash("git status --short", False, "fatal: bad flag"),
        bash("git add -A", True),
    ]
    assert L.is_blocked(BLOCKED)
    assert L.error_fixes(calls) == []


@pytest.mark.parametrize(
    "fixed",
    [
        "git commit --no-verify -m 'wip'",
        "git commit -n -m 'wip'",
        "SKIP=ruff git commit -m 'wip'",
        "HUSKY=0 git commit -m 'wip'",
        "git commit -m 'wip'  # skip-hook",
        "git -c core.hooksPath=/dev/null commit -m 'wip'",
    ],
)
def test_a_fix_that_bypasses_hooks_is_never_proposed(fixed: str) -> None:
    calls = [
        bash("git commit -m 'wip'", False, "ruff....Failed\n- hook id: ruff"),
        bash(fixed, True),
    ]
    assert L.has_bypass(fixed)
    assert L.error_fixes(calls) == []


def test_a_plain_commit_is_no_bypass() -> None:
    assert not L.has_bypass("git commit -m 'run the new tests' --amend")


@pytest.mark.parametrize(
    "fixed",
    [
        "git push --force origin feature",
        "git push -f origin feature",
        "git push --force-with-lease origin feature",
        "git reset --hard origin/feature && git push origin feature",
        "rm -rf node_modules && npm install",
    ],
)
def test_a_fix_that_throws_work_away_is_never_proposed(fixed: str) -> None:
    """What forced its way through once (a force push, a hard reset) is no lesson for whenever
    the same command fails; a plain retry that works is one."""
    rejected = (
        "Exit code 1\nTo github.com:shop/shop.git\n ! [rejected]  feature -> feature "
        "(non-fast-forward)\nerror: failed to push some refs to 'github.com:shop/shop.git'"
    )
    calls = [bash("git push origin feature", False, rejected), bash(fixed, True)]
    assert L.error_fixes(calls) == []
    (fix,) = L.error_fixes(
        [bash("git push origin feature", False, rejected),
         bash("git push --set-upstream origin feature", True)]
    )  # fmt: skip
    assert "--force" not in fix.statement


def test_the_lesson_quotes_the_line_that_says_what_went_wrong() -> None:
    """Output often opens with progress or notes (a hook's banner, "Switched to branch"): the
    lesson quotes the error line, without terminal colours, so the same error met again words
    the same lesson whatever the banner said."""
    noisy = (
        "Exit code 1\n\x1b[36m[sync] Pushing checkpoints...\x1b[0m\nSwitched to branch 'main'\n"
        "\x1b[31mfatal: a branch named 'feature' already exists\x1b[0m"
    )
    (fix,) = L.error_fixes(
        [bash("git checkout -b feature", False, noisy), bash("git checkout feature", True)]
    )
    assert fix.statement == (
        'When `git checkout -b <v>` fails ("fatal: a branch named … already exists"), '
        "run `git checkout <arg>` instead."
    )
    assert L.error_kind(noisy) == ("error", "fatal: a branch named … already exists")
    # no line names a failure: the first line, as before
    assert L.error_kind("Exit code 2\nUsage: tool [flags]") == ("error", "Usage: tool [flags]")


def post(api: Client, session: str, command: str, error: str | None = None) -> None:
    body: dict[str, Any] = {
        "hook_event_name": "PostToolUseFailure" if error else "PostToolUse",
        "session_id": session,
        "cwd": "/home/dev/shop",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }
    if error:
        body["error"] = error
    else:
        body["tool_response"] = {"stdout": "4 passed", "stderr": "", "interrupted": False}
    assert api.post(URL, body, content_type="application/json").status_code == 200


def test_a_recurring_error_is_one_candidate_counted_again_in_later_sessions(api: Client) -> None:
    for session, path in (("s1", "test_cart"), ("s2", "test_user"), ("s3", "test_tax")):
        for _ in range(2):  # twice in each session
            post(api, session, f"pytest tests/{path}.py", NOT_FOUND)
            post(api, session, f"source .venv/bin/activate && pytest tests/{path}.py")
        learning.session_capture(session_pk=AgentSession.objects.get(session_id=session).pk)
    lesson = Engram.objects.get()
    assert lesson.statement == (
        "When `pytest` is not found, run it from the project's virtualenv: "
        "`source .venv/bin/activate && pytest tests/*.py`."
    )
    assert (lesson.status, lesson.source, lesson.derivation_count) == ("candidate", "agent", 3)
    assert list(LearningDraft.objects.values_list("result", flat=True)) == [
        "created",
        "recurrence",
        "recurrence",
    ]
    assert LearningSignal.objects.filter(kind="error_fix").count() == 3


def test_a_failing_test_run_leaves_no_lesson(api: Client) -> None:
    post(api, "s1", "pytest tests/test_cart.py", PYTEST_REPORT)
    post(api, "s1", "pytest tests/test_cart.py -x")
    learning.session_capture(session_pk=AgentSession.objects.get().pk)
    assert not LearningSignal.objects.filter(kind="error_fix").exists()
    assert not Engram.objects.exists()


def test_a_program_that_says_not_found_is_not_a_missing_program() -> None:
    """Only the shell's own words name a missing program; a program's message that ends in
    "not found" is its error, and a fix that only changed what the same command did (other code
    for `python3 -c`) is no way to run it."""
    assert L.error_kind("Exit code 127\nsh: 1: yq: not found") == ("not found", "yq")
    kind, _ = L.error_kind("Exit code 1\nno configuration file provided: not found")
    assert kind == "error"
    no_module = "Exit code 1\nModuleNotFoundError: No module named 'yaml'"
    assert L.error_fixes(
        [bash("python3 -c 'import yaml; print(1)'", False, no_module),
         bash("python3 -c 'import json; print(1)'", True)]
    ) == []  # fmt: skip
    (fix,) = L.error_fixes(
        [bash("python3 -c 'import yaml; print(1)'", False, no_module),
         bash("uv run python3 -c 'import yaml; print(1)'", True)]
    )  # fmt: skip
    assert "virtualenv" in fix.statement


def test_an_output_filters_error_is_no_lesson_about_the_command_before_it() -> None:
    """`xcodebuild … | tail 2` fails in `tail` ("tail: 2: No such file or directory"): a
    lesson about xcodebuild would be delivered at every build. Only trimming the output
    differently is no way to run a command either."""
    broken_tail = "Exit code 1\ntail: 2: No such file or directory"
    assert L.error_fixes(
        [bash("xcodebuild -scheme App build | tail 2", False, broken_tail),
         bash("xcodebuild -scheme App -quiet build | tail -n 2", True)]
    ) == []  # fmt: skip
    no_module = "Exit code 1\nModuleNotFoundError: No module named 'yaml'"
    assert L.error_fixes(
        [bash("python3 -c 'import yaml'", False, no_module),
         bash("python3 -c 'import json' | tail", True)]
    ) == []  # fmt: skip
    # the program's own error before a pipe still teaches
    (fix,) = L.error_fixes(
        [bash("gh pr diff 3 --stat | head", False, "Exit code 1\nunknown flag: --stat"),
         bash("gh pr diff 3 --name-only | head", True)]
    )  # fmt: skip
    assert "--name-only" in fix.statement


@pytest.mark.parametrize(
    "output",
    [
        "Exit code 143",  # killed (a timeout, an interrupt): nothing says what went wrong
        "Exit code 1",  # a check that answered no (`git config --get`, `grep -q`)
        "Exit code 1\nCommand timed out after 2m 0s",  # the Bash tool's limit, not the command
        "<tool_use_error>Cancelled: parallel tool call Bash(ls) errored</tool_use_error>",
        "Use the Read tool to read file contents",  # the harness wants another tool
        "Tool permission request failed: AbortError",
    ],
)
def test_a_failure_that_says_no_error_of_its_own_is_no_lesson(output: str) -> None:
    calls = [bash("make build ARCH=arm64", False, output), bash("make build ARCH=arm64 -j1", True)]
    assert L.error_fixes(calls) == []


@pytest.mark.parametrize(
    "output",
    [
        "Exit code 1\nWould reformat: src/app.py\n1 file would be reformatted",
        "Exit code 1\nunformatted: File would be reformatted\n --> src/app.py:3:1",
        "Exit code 1\nDiff in /home/me/proj/src/main.rs:12:\n-    let x=1;\n+    let x = 1;",
        "Exit code 1\nChecking formatting...\n[warn] src/a.ts\n[warn] Code style issues found in the"
        " above file. Run Prettier with --write to fix.",
        "Exit code 5\n============ test session starts ============\ncollected 12 items / 12 "
        "deselected / 0 selected\n=========== 12 deselected in 0.03s ===========\n"
        "no tests ran in 0.03s",
        "Exit code 5\nno tests collected (12 deselected) in 0.03s",
        "Exit code 8\nbuild\tpending\t0\thttps://example.test/run/1\t\nlint\tpass\t12s\thttps://"
        "example.test/run/2\t",
    ],
)
def test_a_formatter_check_an_empty_test_run_or_pending_checks_are_results(output: str) -> None:
    assert L.is_report(output)


@pytest.mark.parametrize(
    "refusal",
    [
        "Permission for this action was denied by the Claude Code auto mode classifier. Reason: "
        "it deletes a remote branch.",
        "Permission to use Bash with command rm -r build has been denied.",
        "BLOCKED by the project's guard\n\nReason: discards uncommitted changes.",
        "<tool_use_error>Blocked: sleep 60 followed by: make check.</tool_use_error>",
        "This session may only touch its own worktree; refusing to run it. Refusing to run it - "
        "run the equivalent from the worktree.",
        "The user doesn't want to take this action right now. STOP what you are doing.",
    ],
)
def test_a_refusal_by_the_harness_a_guard_or_the_person_is_no_error(refusal: str) -> None:
    assert L.is_blocked(refusal)
    calls = [bash("git push origin main", False, refusal), bash("git push origin feature", True)]
    assert L.error_fixes(calls) == []


def test_a_missing_program_is_a_lesson_only_when_the_fix_reaches_it() -> None:
    """The fix runs the program (by a path, through a runner) or installs it; doing the job with
    another program, or a command that never needed the one that was missing, teaches nothing
    about it."""
    missing = "Exit code 127\n/bin/bash: line 1: {}: command not found"
    query = "mysql -u app -e 'select count(*) from orders'"
    assert L.error_fixes(
        [bash(query, False, missing.format("mysql")),
         bash("python3 -c 'import db; print(db.count(\"orders\"))'", True)]
    ) == []  # fmt: skip
    # a pipe's program was missing (PATH cut short), the fix dropped the pipe
    assert L.error_fixes(
        [bash('export PATH="/opt/zig/bin" && zig build test | head -3', False,
              missing.format("head")),
         bash('export PATH="/opt/zig/bin:/usr/bin" && zig build test', True)]
    ) == []  # fmt: skip
    (by_path,) = L.error_fixes(
        [bash("zig build test", False, missing.format("zig")),
         bash("cd /home/me/app/zig && /opt/zig/bin/zig build test", True)]
    )  # fmt: skip
    assert by_path.statement == (
        "When `zig` is not found, run it as `/opt/zig/bin/zig`: `zig build <arg>`."
    )
    (installed,) = L.error_fixes(
        [bash("npm run build", False, "Exit code 127\n> build\n> tsc\nsh: tsc: command not found"),
         bash("npm ci && npm run build", True)]
    )  # fmt: skip
    assert "npm ci" in installed.statement
