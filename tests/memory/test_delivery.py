"""What the hooks deliver and when (issue #25): the SessionStart brief, the quiet prompt path,
error → fix lessons at tool time, bad input, and the evidence on the session page."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from memory.maths import delivery as maths
from memory.models import AgentSession, Engram, Injection, LearningSignal
from memory.services import delivery, learning
from memory.services.engrams import engram_update

URL = "/api/v1/hooks/claude-code"
CWD = "/home/dev/shop"


def hook(api: Client, event: str, session: str = "s1", **fields: Any) -> dict[str, Any]:
    body = {"hook_event_name": event, "session_id": session, "cwd": CWD, **fields}
    response = api.post(URL, body, content_type="application/json")
    assert response.status_code == HTTPStatus.OK, response.content
    return dict(response.json())


def context(answer: dict[str, Any]) -> str:
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


def learn(api: Client, statement: str, **fields: Any) -> str:
    body = {"statement": statement, "scope": "project:shop", "source": "user", **fields}
    response = api.post("/api/v1/engrams", body, content_type="application/json")
    assert response.status_code in (HTTPStatus.OK, HTTPStatus.CREATED), response.content
    return str(response.json()["engram"]["id"])


# --- maths -----------------------------------------------------------------------------------


def test_one_shared_common_word_is_no_evidence() -> None:
    rule = maths.terms("Always run the alembic migrations with autogenerate before a release.")
    df = {"release": 40, "alembic": 1, "migration": 2, "autogenerate": 1}
    one_word = maths.evidence(maths.terms("prepare the release notes"), rule, df, 50)
    assert one_word.shared == ("release",)
    assert not one_word.admitted()
    on_topic = maths.evidence(
        maths.terms("add an alembic migration, autogenerate it"), rule, df, 50
    )
    assert set(on_topic.shared) == {"alembic", "migration", "autogenerate"}
    assert on_topic.coverage > 0.8
    assert on_topic.admitted()


def test_specific_terms_weigh_more_than_common_ones() -> None:
    assert maths.idf(1, 100) > maths.idf(50, 100) > 0
    rule = frozenset({"pnpm", "package", "install"})
    df = {"pnpm": 1, "package": 30, "install": 30}
    common = maths.evidence(frozenset({"package", "install"}), rule, df, 60)
    specific = maths.evidence(frozenset({"pnpm", "install"}), rule, df, 60)
    assert specific.coverage > common.coverage


def test_the_brief_stays_within_its_budget_and_counts_the_rest() -> None:
    items = [maths.BriefItem(f"ENG-{i:03}", f"Rule number {i} " + "word " * 30) for i in range(40)]
    made = maths.brief(items, scope="project:shop")
    assert 0 < len(made.shown) < 40
    assert made.more == 40 - len(made.shown)
    assert f"{made.more} more standing rules" in made.rendered
    assert len(made.rendered) / 4 <= maths.BRIEF_TOKENS
    assert all(f"[{eid}]" in made.rendered for eid in made.shown)
    assert maths.brief([], scope="global").rendered == ""


@pytest.mark.parametrize(
    ("command", "trigger"),
    [
        ("git add -A", "git add -a"),
        ("grep -r TODO src/", "grep -r"),
        ("pytest tests/test_x.py -q", "pytest"),
        ("/usr/bin/npm install left-pad", "npm install"),
        ("./run.sh", ""),
        # a runner's program is the practice, not the runner (every `uv run` is not `pytest`)
        ("uv run pytest tests/ -x", "uv run pytest"),
        ("uv run --project <path> app sync", "uv run app sync"),
        ("npx eslint src/", "npx eslint"),
        ("poetry run python -m app", "poetry run python -m"),
    ],
)
def test_the_trigger_of_a_failed_command_is_its_program_subcommand_and_flags(
    command: str, trigger: str
) -> None:
    assert maths.tool_trigger(command) == trigger


# --- SessionStart ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_correction_in_one_session_is_in_the_next_sessions_brief(api: Client) -> None:
    """The newcomer case: the pnpm correction typed yesterday is a standing rule today."""
    hook(api, "SessionStart", "day-1", source="startup")
    hook(api, "UserPromptSubmit", "day-1", prompt="Install the test dependencies with npm")
    hook(
        api,
        "UserPromptSubmit",
        "day-1",
        prompt="No, don't use npm here. We always use pnpm in this repo, never npm.",
    )
    hook(api, "Stop", "day-1")
    learning.session_capture(session_pk=AgentSession.objects.get(session_id="day-1").pk)
    rules = Engram.objects.filter(status="active", statement__icontains="pnpm")
    assert [r.source for r in rules] == ["user"] * len(rules) and rules
    rule = rules[0]

    brief = context(hook(api, "SessionStart", "day-2", source="startup"))
    assert f"[{rule.engram_id}]" in brief
    assert "pnpm" in brief
    # Delivered once: the next prompt does not repeat it.
    assert hook(api, "UserPromptSubmit", "day-2", prompt="Add the lodash dependency") == {}
    shown = Injection.objects.get(session__session_id="day-2", engram=rule)
    assert shown.bucket == "brief"
    assert shown.evidence["brief"] == "startup"


@pytest.mark.django_db
def test_the_brief_holds_only_stated_rules_of_this_project_and_global(api: Client) -> None:
    mine = learn(api, "Use pnpm for every package install in this repo.")
    everywhere = learn(api, "Write commit messages in the imperative mood.", scope="global")
    elsewhere = learn(api, "Use yarn workspaces.", scope="project:other")
    inferred = learn(api, "The build cache lives in .turbo.", source="agent")
    Engram.objects.filter(engram_id=inferred).update(status="active")
    brief = context(hook(api, "SessionStart", source="startup"))
    assert brief.index(mine) < brief.index(everywhere)
    assert elsewhere not in brief
    assert inferred not in brief


@pytest.mark.django_db
def test_the_brief_comes_again_after_compaction_and_so_may_prompt_rules(api: Client) -> None:
    rule = learn(api, "Run alembic migrations with autogenerate, never by hand.", source="agent")
    Engram.objects.filter(engram_id=rule).update(status="active")
    prompt = "write the alembic migration for orders with autogenerate"
    assert hook(api, "SessionStart", source="startup") == {}  # inferred: not in the brief
    assert rule in context(hook(api, "UserPromptSubmit", prompt=prompt))
    assert hook(api, "UserPromptSubmit", prompt=prompt) == {}  # once is enough
    hook(api, "SessionStart", source="compact")
    assert rule in context(hook(api, "UserPromptSubmit", prompt=prompt))  # context was lost


@pytest.mark.django_db
def test_an_unknown_session_start_source_gets_the_brief(api: Client) -> None:
    rule = learn(api, "Use pnpm for every package install in this repo.")
    assert rule in context(hook(api, "SessionStart", source="teleport"))
    assert rule in context(hook(api, "SessionStart", "s2"))  # no source at all


# --- UserPromptSubmit ------------------------------------------------------------------------


@pytest.mark.django_db
def test_most_prompts_get_nothing(api: Client) -> None:
    rule = learn(
        api, "Store every timestamp in UTC in the orders database.", source="agent", tags=["tz"]
    )
    Engram.objects.filter(engram_id=rule).update(status="active")
    for prompt in (
        "fix the typo in the README",
        "why does the orders page load slowly?",  # one shared word
        "looks good, thanks",
    ):
        assert hook(api, "UserPromptSubmit", prompt=prompt) == {}, prompt
    answer = context(hook(api, "UserPromptSubmit", prompt="store the order timestamps in UTC"))
    assert rule in answer
    shown = Injection.objects.get(engram__engram_id=rule)
    assert shown.evidence["prompt"]["coverage"] >= maths.COVERAGE_FLOOR
    assert "utc" in shown.evidence["prompt"]["shared"]


@pytest.mark.django_db
def test_an_approved_narrowing_keeps_the_rule_out_of_those_prompts(api: Client) -> None:
    """A maintenance "not for: …" note (or any contraindication) is a context the prompt path
    skips: the rule stays away from prompts of that context and still comes where it applies."""
    rule = learn(api, "Store every timestamp in UTC in the orders database.", tags=["tz"])
    engram = Engram.objects.get(engram_id=rule)
    engram_update(
        owner=engram.owner,
        engram=engram,
        changes={"contraindications": ["not for: fixtures, seed", "when importing legacy csv"]},
    )
    for prompt in (
        "seed the orders database with UTC timestamp fixtures",  # one listed word is enough
        "importing the legacy csv: store each order timestamp in UTC",  # all of its words
    ):
        assert hook(api, "UserPromptSubmit", session="narrow", prompt=prompt) == {}, prompt
    answer = context(hook(api, "UserPromptSubmit", prompt="store the order timestamps in UTC"))
    assert rule in answer


def test_contraindications_are_contexts_of_their_words() -> None:
    avoid = maths.contraindication_terms(
        ["not for: docs, readme", "Not when writing database migrations", "", 7]
    )
    assert avoid == (
        maths.terms("docs"),
        maths.terms("readme"),
        maths.terms("writing database migrations"),
    )
    assert maths.contraindicated(maths.terms("update the docs"), avoid)
    assert maths.contraindicated(maths.terms("two database migrations"), avoid)
    assert not maths.contraindicated(maths.terms("database indexes"), avoid)
    assert not maths.contraindicated(maths.terms("anything"), ())


@pytest.mark.django_db
def test_an_escalated_rule_may_come_again(api: Client) -> None:
    rule = learn(api, "Never push to main without a review.")
    Engram.objects.filter(engram_id=rule).update(enforcement="emphasised")
    prompt = "push the fix to main now, skip the review"
    assert rule in context(hook(api, "SessionStart", source="startup"))
    assert rule in context(hook(api, "UserPromptSubmit", prompt=prompt))


@pytest.mark.django_db
@pytest.mark.parametrize(
    "prompt",
    [
        "",
        "   ",
        "pnpm install " * 90_000,  # ~1 MB
        'Traceback (most recent call last):\n  File "/app/orders/models.py", line 12, in save\n'
        "    raise ValueError('bad timestamp')\nValueError: bad timestamp\n" * 20,
    ],
    ids=["empty", "blank", "one-megabyte", "stack-trace"],
)
def test_bad_prompts_get_a_quiet_200(api: Client, prompt: str) -> None:
    learn(api, "Use pnpm for every package install in this repo.")
    hook(api, "SessionStart", source="startup")
    before = Injection.objects.count()
    assert hook(api, "UserPromptSubmit", prompt=prompt) == {}
    assert Injection.objects.count() == before


# --- PreToolUse ------------------------------------------------------------------------------


def fail_then_fix(
    api: Client,
    session: str,
    failed: str = "pytest tests/test_orders.py",
    error: str = "pytest: command not found",
    fixed: str = ".venv/bin/pytest tests/test_orders.py",
) -> None:
    hook(
        api,
        "PostToolUseFailure",
        session,
        tool_name="Bash",
        tool_input={"command": failed},
        error=error,
    )
    hook(
        api,
        "PostToolUse",
        session,
        tool_name="Bash",
        tool_input={"command": fixed},
        tool_response={"stdout": "3 passed"},
    )
    hook(api, "Stop", session)
    learning.session_capture(session_pk=AgentSession.objects.get(session_id=session).pk)


@pytest.mark.django_db
def test_a_recurring_failing_command_gets_its_fix_before_it_runs_again(api: Client) -> None:
    fail_then_fix(api, "monday")
    fail_then_fix(api, "tuesday")
    lesson = Engram.objects.get()
    assert lesson.derivation_count == 2
    tool = {"tool_name": "Bash", "tool_input": {"command": "pytest tests/test_users.py -x"}}
    answer = context(hook(api, "PreToolUse", "wednesday", **tool))
    assert f"[{lesson.engram_id}]" in answer
    assert ".venv/bin/pytest" in answer
    assert len(answer.splitlines()) == 2  # the header and one line
    assert hook(api, "PreToolUse", "wednesday", **tool) == {}  # once per session
    shown = Injection.objects.get(session__session_id="wednesday")
    assert (shown.bucket, shown.evidence["tool"]) == (
        "reminder",
        {"trigger": "pytest", "kind": "fix"},
    )
    # The command that worked, and unrelated commands, get nothing.
    fixed = {"tool_name": "Bash", "tool_input": {"command": ".venv/bin/pytest -x"}}
    assert hook(api, "PreToolUse", "thursday", **fixed) == {}
    assert hook(api, "PreToolUse", "thursday", tool_name="Bash", tool_input={"command": "ls"}) == {}


@pytest.mark.parametrize(
    ("statement", "trigger"),
    [
        (
            "When `pytest` is not found, run it from the project's virtualenv: "
            "`.venv/bin/pytest tests/*.py`.",
            "pytest",
        ),
        (
            "When `python3` cannot import `yaml`, run it from the project's virtualenv: "
            "`uv run python3 -c <code>`.",
            "python3 yaml",
        ),
        (
            'When `gh pr diff <n> --stat` fails ("unknown flag: --stat"), run '
            "`gh pr diff <n> --name-only` instead.",
            "gh pr diff --stat",
        ),
        (
            'When `git add src/*.ts && git commit -m <text> && git push` fails ("husky - '
            'pre-commit script failed (code …)"), run `git add src/*.ts api/*.json && git '
            "commit -m <text> && git push` instead.",
            "git add commit -m push",
        ),
        (
            'When `go test ./pkg/ -run <v> | tail` fails ("stat … directory not found"), run '
            "`go test ./pkg/... -run <v>` instead.",
            "go test",
        ),
        (  # what feeds the failing program its input is not what failed
            'When `echo | app import --dry-run` fails ("error: no project here"), run '
            "`uv run --project <path> app import --dry-run` instead.",
            "app import --dry-run",
        ),
        (
            "When `zig` is not found, run it as `/opt/zig/bin/zig`: `zig build <arg>`.",
            "zig",
        ),
    ],
)
def test_a_fix_fires_on_what_failed_not_on_every_call_of_its_program(
    statement: str, trigger: str
) -> None:
    """A missing program fires on the program, a missing module with the module's name, any
    other failure on the failing line's commands and the flag its error names."""
    assert maths.fix_trigger(statement, "") == trigger


def stat_flag_fixed_twice(api: Client) -> None:
    """`gh pr diff --stat` fails ("unknown flag") and `--name-only` works, in two sessions."""
    for session in ("monday", "tuesday"):
        fail_then_fix(
            api,
            session,
            "gh pr diff 12 --stat",
            "unknown flag: --stat",
            "gh pr diff 12 --name-only",
        )


@pytest.mark.django_db
def test_a_fix_for_one_subcommand_is_not_delivered_at_another(api: Client) -> None:
    """A lesson about `gh pr diff --stat` is no word for `gh pr list`."""
    stat_flag_fixed_twice(api)
    lesson = Engram.objects.get()
    listing = {"tool_name": "Bash", "tool_input": {"command": "gh pr list --state open"}}
    assert hook(api, "PreToolUse", "wednesday", **listing) == {}
    again = {"tool_name": "Bash", "tool_input": {"command": "gh pr diff 14 --stat"}}
    assert f"[{lesson.engram_id}]" in context(hook(api, "PreToolUse", "wednesday", **again))


@pytest.mark.django_db
def test_a_fix_is_not_delivered_for_what_a_commit_message_says(api: Client) -> None:
    """The prose inside a command (a heredoc, `-m "…"`) is not what it runs: a commit whose
    message mentions `gh pr diff --stat` is not that command."""
    stat_flag_fixed_twice(api)
    message = "docs: say that gh pr diff has no --stat flag"
    for command in (
        f'git commit -m "{message}"',
        f"git commit -F - <<'EOF'\n{message}\nEOF",
    ):
        tool = {"tool_name": "Bash", "tool_input": {"command": command}}
        assert hook(api, "PreToolUse", "wednesday", **tool) == {}
    again = {"tool_name": "Bash", "tool_input": {"command": "gh pr diff 14 --stat"}}
    assert context(hook(api, "PreToolUse", "wednesday", **again))


@pytest.mark.django_db
def test_a_one_off_failure_is_not_delivered(api: Client) -> None:
    fail_then_fix(api, "monday")
    tool = {"tool_name": "Bash", "tool_input": {"command": "pytest tests/test_users.py"}}
    assert hook(api, "PreToolUse", "tuesday", **tool) == {}


# --- the session page ------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_session_page_shows_what_was_delivered_and_why(
    api: Client, owner: Any, client: Client
) -> None:
    rule = learn(api, "Store every timestamp in UTC in the orders database.", source="agent")
    Engram.objects.filter(engram_id=rule).update(status="active")
    hook(api, "UserPromptSubmit", prompt="store the order timestamps in UTC")
    client.force_login(owner)
    session = AgentSession.objects.get()
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert rule in page
    assert "store the order timestamps in UTC" in page
    assert "coverage" in page and "utc" in page


def fix_lesson(api: Client) -> Engram:
    fail_then_fix(api, "monday")
    fail_then_fix(api, "tuesday")
    return Engram.objects.get()


PYTEST_AGAIN = {"tool_name": "Bash", "tool_input": {"command": "pytest tests/test_users.py -x"}}
FIXED = {"tool_name": "Bash", "tool_input": {"command": ".venv/bin/pytest -x"}}


@pytest.mark.django_db
def test_the_failed_and_fixed_commands_are_stored_as_shapes_with_the_lesson(api: Client) -> None:
    lesson = fix_lesson(api)
    assert lesson.extra["error_fix"] == {
        "tool": "Bash",
        "failed": "pytest tests/*.py",
        "fixed": ".venv/bin/pytest tests/*.py",
    }
    signal = LearningSignal.objects.filter(kind="error_fix").first()
    assert signal is not None and signal.fix == lesson.extra["error_fix"]


@pytest.mark.django_db
def test_a_fix_reworded_without_a_code_span_still_matches_by_its_stored_shape(
    api: Client, owner: Any
) -> None:
    lesson = fix_lesson(api)
    engram_update(
        owner=owner,
        engram=lesson,
        changes={"statement": "Run the test runner from the project's virtualenv."},
    )
    assert maths.code_spans(Engram.objects.get().statement) == []
    answer = context(hook(api, "PreToolUse", "wednesday", **PYTEST_AGAIN))
    assert f"[{lesson.engram_id}]" in answer
    # The command that worked is known from the data, not the wording: it gets nothing.
    assert hook(api, "PreToolUse", "thursday", **FIXED) == {}


@pytest.mark.django_db
def test_an_llm_worded_fix_lesson_matches_by_its_stored_shape(
    api: Client, fake_claude: Any, settings: Any
) -> None:
    settings.ENGRAM_LLM_RETRIES = 0
    lesson = {
        "statement": "Run the test runner from the project's virtualenv.",
        "type": "procedural",
        "polarity": "do",
        "tier": "C",
    }
    fake_claude.on("memory.learning_extract", lambda body: {"lessons": [lesson]})
    lesson_row = fix_lesson(api)
    assert lesson_row.statement == lesson["statement"]
    assert lesson_row.derivation_count == 2
    answer = context(hook(api, "PreToolUse", "wednesday", **PYTEST_AGAIN))
    assert f"[{lesson_row.engram_id}]" in answer
    assert hook(api, "PreToolUse", "thursday", **FIXED) == {}


@pytest.mark.django_db
def test_a_fix_lesson_captured_before_the_shapes_were_stored_matches_by_its_wording(
    api: Client,
) -> None:
    lesson = fix_lesson(api)
    # As a row written before the shapes were stored: the wording is all there is.
    extra = {k: v for k, v in lesson.extra.items() if k != "error_fix"}
    Engram.objects.filter(pk=lesson.pk).update(extra=extra)
    LearningSignal.objects.update(fix={})
    delivery.cache_clear()
    answer = context(hook(api, "PreToolUse", "wednesday", **PYTEST_AGAIN))
    assert f"[{lesson.engram_id}]" in answer
    assert hook(api, "PreToolUse", "thursday", **FIXED) == {}
    # When it recurs, it learns the shapes.
    fail_then_fix(api, "friday")
    lesson.refresh_from_db()
    assert lesson.derivation_count == 3
    assert lesson.extra["error_fix"]["failed"] == "pytest tests/*.py"
