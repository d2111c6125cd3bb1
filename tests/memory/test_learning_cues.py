"""Each cue group of `memory.maths.learning.cues` with prompts it accepts and rejects.

The prompts are written for these tests in the genre of prompts to coding agents; none is taken
from an evaluation set.
"""

from __future__ import annotations

import re

import pytest

from memory.maths import learning as L
from memory.maths.learning import cues, indirect

GROUPS: dict[str, tuple[re.Pattern[str], list[str], list[str]]] = {
    "STANDING_TIME": (
        cues.STANDING_TIME,
        [
            "from now on run the linter before you commit",
            "next time ask before deleting a migration",
            "whenever you touch the schema, regenerate the types",
            "don't push to main ever",
            "in future, keep PR descriptions under ten lines",
        ],
        [
            "add type hints whenever possible",
            "refactor the helpers whenever you have a minute",
            "the exporter will in the future support CSV",
            "it reads a local file, and in the future may read from S3",
            "run the linter now",
            "push the branch",
        ],
    ),
    "ALWAYS_NEVER": (
        cues.ALWAYS_NEVER,
        [
            "always run the formatter before committing",
            "please never commit the .env file",
            "you should always pin versions in requirements.txt",
            "and never force-push a shared branch",
            "make sure you always add a changelog entry",
        ],
        [
            "the cache always returns None here, why?",
            "this test never finishes on CI",
            "it always crashes when I open settings",
        ],
    ),
    "PROJECT_CONVENTION": (
        cues.PROJECT_CONVENTION,
        [
            "in this repo we use tabs for Go files",
            "we never import from the internal package",
            "we don't use default exports",
            "as a rule, keep handlers thin",
            "our convention is snake_case for file names",
            "there should be one way to read the config in this codebase",
        ],
        [
            "we use this endpoint to fetch users",
            "in this file the import is wrong",
            "we shipped the release yesterday",
            "should we rename the module in this repo?",
            "the tests should pass in this repo before the demo and then we ship",
        ],
    ),
    "REMEMBER": (
        cues.REMEMBER,
        [
            "remember that we deploy with Helm",
            "keep in mind that we target Python 3.11",
            "don't forget that we squash-merge feature branches",
        ],
        [
            "I don't remember where the config lives",
            "do you remember the earlier error?",
            "don't forget to run the migrations check",
            "remember to bump the version in pyproject.toml",
        ],
    ),
    "RULE_REQUEST": (
        cues.RULE_REQUEST,
        [
            "make a rule that every new endpoint gets an OpenAPI example",
            "create a new rule for naming feature flags",
            "add this to your rules",
            "update CLAUDE.md to say we use uv, not pip",
            "can we update the rule so you always run tests first?",
            "put that in CLAUDE.md",
            "extend AGENTS.md and add a note that fixtures live in tests/data",
            "add a line to CLAUDE.md: regenerate the client after changing the schema",
        ],
        [
            "the rule engine throws on empty input",
            "update the README with the new flags",
            "add a validation rule to the form",
            "update AGENTS.md and add this",
            "add a line to CLAUDE.md: this one",
        ],
    ),
    "CORRECTION_LEAD": (
        cues.CORRECTION_LEAD,
        [
            "no, use pnpm here, not npm",
            "nope, that goes in utils",
            "that's not right, the port is 8080",
            "actually, use the v2 client",
        ],
        [
            "no worries, take your time",
            "no problem",
            "now run the tests",
        ],
    ),
    "RIGHT_WAY": (
        cues.RIGHT_WAY,
        [
            "use pnpm, not npm",
            "call the service instead of the model",
            "use httpx rather than requests",
            "not in the view but in the service",
        ],
        [
            "use pnpm",
            "not only the tests",
            "I am not sure",
            "that's not right, look it up again",
        ],
    ),
    "CONTRAST_CHOICE": (
        cues.CONTRAST_CHOICE,
        [
            "test the parser, not the CLI wrapper",
            "we want to call the API directly, not through the SDK",
            "run migrations with the manage command instead of raw SQL",
        ],
        [
            "the build is not green",
            "this is not what I expected",
            "use the new logger",
        ],
    ),
    "HEDGE": (
        cues.HEDGE,
        [
            "we should probably use git mv",
            "maybe keep the old name",
            "I think it needs a lock",
            "I don't rule out the possibility of a web client in the future",
        ],
        ["always use git mv", "keep the old name"],
    ),
    "CAPABILITY": (
        cues.CAPABILITY,
        [
            "whenever a row is selected, the user should be able to export it",
            "you must be able to undo every edit",
        ],
        ["always run the exporter with --dry-run first", "the exporter can read CSV"],
    ),
    "DEICTIC": (
        cues.DEICTIC,
        ["don't clean it up", "do this from the other branch", "revert that"],
        ["don't use mocks", "use this format again"],
    ),
    "ABOUT_A_WORK_ITEM": (
        cues.ABOUT_A_WORK_ITEM,
        ["create a task to always validate input", "open an issue for the flaky test"],
        ["create a rule that we always validate input", "always validate input"],
    ),
    "RETRACTION": (
        indirect.RETRACTION,
        [
            "use yarn for this, but I changed my mind",
            "scratch that",
            "actually, don't add the header",
            "never mind what I said",
            "on second thought keep the old API",
        ],
        ["never mind the warnings in the log? no", "change the mind map colours"][1:],
    ),
    "WHY_THIS_CHOICE": (
        indirect.WHY_THIS_CHOICE,
        ["why are we using webpack?", "why are you still running node?"],
        ["why does this test fail?", "why is the build slow?"],
    ),
    "REPROACH": (
        indirect.REPROACH,
        [
            "why are you still using moment.js?",
            "hm, why aren't we using ruff for the formatting?",
            "why don't you run the linter with --fix?",
        ],
        [
            "why are we using webpack?",
            "why aren't we using that to find the user?",
            "why does the linter fail?",
        ],
    ),
    "POINTLESS": (
        indirect.POINTLESS,
        [
            "there's no point in mocking the database in these tests",
            "ok - it doesn't make sense to release from a feature branch",
        ],
        [
            "it doesn't make sense to me",
            "I see no point in that",
        ],
    ),
    "DELEGATION": (
        cues.DELEGATION,
        [
            "don't just tell me which commands to run, run them",
            "please apply the edits yourself",
            "go ahead and bump the versions without asking",
            "ask me before you delete any branch",
            "check with me first before installing a package",
            "you can do the work yourself, no need to paste instructions",
        ],
        [
            "tell me what the error means",
            "I fixed it myself",
            "ask the user for their email in the signup form",
        ],
    ),
    "PACE": (
        cues.PACE,
        [
            "let's go one failing test at a time",
            "please migrate one module at a time",
            "keep to small commits with clear messages",
        ],
        [
            "the tests run one at a time on CI",
            "the changes are too small to matter",
        ],
    ),
    "KIND_SHOULD": (
        cues.KIND_SHOULD,
        [
            "each handler should live in its own file",
            "all fixtures must go in conftest.py",
            "every migration needs to be reversible",
        ],
        [
            "the handler should return 404 here",
            "all of this is broken",
            "each time I run it, it hangs",
        ],
    ),
    "SHOULD_BE_ON": (
        cues.SHOULD_BE_ON,
        [
            "we should be using uv for the lockfile",
            "we *should* be on Python 3.12 by now",
            "we shouldn't be committing the build folder at all",
        ],
        [
            "we should be fine after the restart",
            "we should use a set here",
            "we should be getting a 200 here",
        ],
    ),
    "NEEDLESS": (
        cues.NEEDLESS,
        [
            "you don't need sudo to install into the venv",
            "you do not need the browser tool for reading a local file",
        ],
        [
            "you don't need to worry about the warnings",
            "do you need the token to deploy?",
        ],
    ),
    "BEFORE_EVENT": (
        cues.BEFORE_EVENT,
        [
            "run the formatter on the changelog before committing",
            "we should rebase on main before merging",
            "please regenerate the client before you open a PR",
        ],
        [
            "I ran the tests before pushing",
            "fix the parser before lunch",
            "the hook runs before committing",
        ],
    ),
    "PREFERENCE_IN_PASSING": (
        indirect.PREFERENCE_IN_PASSING,
        [
            "build the settings page, I prefer Tailwind over Bootstrap because it is smaller",
            "I'd rather you ask before adding a dependency",
            "considering my preference for small functions, split this up",
            "we're using vitest, not jest",
            "pnpm is our package manager",
            "prefer small pure functions",
            "please prefer subagents for research",
        ],
        [
            "which do you prefer?",
            "prefer it that way",
            "we're using too much memory",
            "this is our problem",
        ],
    ),
    "EVERYWHERE": (
        cues.EVERYWHERE,
        [
            "use f-strings everywhere please",
            "we should be using pathlib wherever we can",
            "keep the logger names consistent across the codebase",
            "fix any flaky tests you come across",
        ],
        [
            "the config is read everywhere",
            "fix the typo in the header",
            "did you see any errors?",
        ],
    ),
    "WHERE_IT_LIVES": (
        cues.WHERE_IT_LIVES,
        [
            "keep our design notes in Notion",
            "please track all todos in GitHub issues",
        ],
        [
            "keep the notes short",
            "put the config in settings.py",
        ],
    ),
    "WRITING_STYLE": (
        cues.WRITING_STYLE,
        [
            "please use Canadian spelling in the docs",
            "write in plain English for the changelog",
            "stick to double quotes",
            "use kebab-case for the CLI flags",
        ],
        [
            "the spelling checker is broken",
            "use the case statement here",
            "quote the path",
        ],
    ),
    "DESCRIBES_BEHAVIOUR": (
        cues.DESCRIBES_BEHAVIOUR,
        [
            "the retry loop never terminates when the queue is empty",
            "the flag is computed but never called",
            "Never shown in the UI",
            "it always returns an empty list",
        ],
        [
            "never return an empty list from a view",
            "always process the queue in order",
            "never need to",
        ],
    ),
}
CASES = [
    (name, text, accepted)
    for name, (_, accepts, rejects) in GROUPS.items()
    for texts, accepted in ((accepts, True), (rejects, False))
    for text in texts
]


@pytest.mark.parametrize(("group", "text", "accepted"), CASES)
def test_each_cue_group_accepts_and_rejects_its_prompts(
    group: str, text: str, accepted: bool
) -> None:
    pattern = GROUPS[group][0]
    assert bool(pattern.search(text)) is accepted, (group, text)


# What a user who types a rule once expects: the tier it is kept at.
TIERS = [
    ("From now on, run `make lint` before you push.", "A"),
    ("Always use pnpm in this repo.", "A"),
    ("In this project we keep SQL in the repository layer.", "A"),
    ("Remember that we deploy from the release branch only.", "A"),
    ("Make a rule that new endpoints get a contract test.", "A"),
    ("Go ahead and update the rules to take these suggestions into account.", "C"),
    ("Update CLAUDE.md to include this.", "C"),
    ("No, use pnpm here, not npm.", "B"),
    ("Actually, call the service instead of the model.", "B"),
    ("Use pnpm to install the dependencies.", ""),
    ("Add a retry around the upload, use tenacity instead of a loop.", "C"),
    ("We should probably use git mv instead of mv.", "C"),
    ("Create a task to make sure we always validate input.", "C"),
    ("Don't clean it up, I'll look at it later.", ""),
    ("Don't just tell me which commands to run, run them yourself.", "C"),
    ("Please migrate one module at a time.", "C"),
    ("Each handler should live in its own file.", "C"),
    ("Always apply the edits yourself.", "A"),
    ("Don't forget to run the migrations check.", "C"),
    ("Remember to bump the version in pyproject.toml before each release.", "C"),
    ("That's not right, just use `uv run pytest` for the tests.", "B"),
    ("That's not right, look up the right flag in the docs.", "C"),
    # a reaction that forbids a kind of action and says why it is bad in general
    ("Please don't force-push shared branches - it rewrites everyone's history.", "B"),
    ("don't run e2e tests, too slow.", "B"),
    ("Don't vendor dependencies because they go stale.", "B"),
    ("Don't push, it's not ready.", "C"),  # no object: the work at hand
    ("Don't merge this branch, it's broken.", "C"),  # the thing at hand
    ("Don't run the e2e suite for now, too slow.", "C"),  # for now
    ("Don't deploy the release yet, it's Friday.", "C"),
    ("Instead of mocking the database, use the test database for every repository test.", "C"),
    ("You must be careful with migrations: always write a reverse step.", "A"),
    ("Every time I push, run the linter first.", "A"),
    ("Add type hints whenever possible.", "C"),
    ("I wanted to talk about why we never vendor dependencies in this repo.", "A"),
    ("In the future, put new fixtures in conftest.py.", "A"),
    # what the code or product does is no instruction, whatever words it holds
    ("The cleanup job never runs when the disk is full.", ""),
    ("Add a regression test so we don't break the parser in the future.", ""),
    ("Looks as if we rebuild the index always.", ""),
    ("So far we only added metrics to the worker.", ""),
    ("Stop for a second, the failure was not caused by the cache.", ""),
    # a writing style, or a practice applied everywhere, holds beyond the task at hand
    ("Use British spelling in the user-facing messages.", "A"),
    ("We should be using typed ids instead of plain strings wherever we can.", "A"),
    ("Fix up any lint warnings you notice, even small ones.", "A"),
    ("Add guidance to CLAUDE.md for future changes: keep migrations reversible.", "A"),
    # the note's topic without the rule tells a later session nothing to do: for review
    ("Also add guidance into CLAUDE.md for future migrations if it is not there yet.", "C"),
    # "in this repo" with a habit is a convention, with a wish it is a request for now
    ("In this repo we use pnpm.", "A"),
    # a request to record a rule that does not say it: the rule is in what came before
    ("Can you add this to CLAUDE.md?", "C"),
    ("I wonder if we should make a rule that every endpoint gets a contract test.", "C"),
    ("Add this to CLAUDE.md: we deploy from main only.", "A"),
    ("In this project we want to add a cache for the search page.", "C"),
    ("Give me the command to run the tests in this project.", ""),
    # a hedge with a vague future is a maybe-later
    ("That seems fine for now, though we might want to revisit the cache in future.", "C"),
    ("Maybe in the future we could cache the index.", ""),
    ("I think from now on we should always use pnpm.", "A"),
    # a possibility, a scenario, a current interest: not a rule, even with a time in it
    ("One thing we could add: the next time I run the sync I get a 403 from the host.", ""),
    ("Let's say you always retry the request when the token expired.", ""),
    ("I'm most interested in ensuring the docs are maintained in the future.", "C"),
    # what the speaker does next time is a scenario; what the agent should do is a rule
    ("Next time, ask me before deleting files.", "A"),
    ("Next time we deploy, always tag the release first.", "A"),
    # what only the earlier turns resolve waits for review; the same rule alone is kept
    ("Always keep the retry loop short, as we discussed above.", "C"),
    ("Always keep the retry loop short.", "A"),
    ("From now on never pick option 2 for the cache.", "C"),
    ("From now on never pick the in-memory backend for the cache.", "A"),
    # what a document should say, a time included, is its content: no rule for the agent
    ("Document in docs/setup.md that from now on the server needs Redis.", "C"),
    ("From now on, always update the README.md when adding a flag.", "A"),
    # going ahead with a choice is no standing time; a thought experiment and the case the
    # conversation raised are not rules yet
    ("Going forward, run the migrations in a transaction.", "A"),
    ("We're moving forward with the Postgres backend, always run the migrations first.", "A"),
    ("So we're moving forward with the Postgres backend.", ""),
    ("Always derive the colour from the parent segment, theoretically.", "C"),
    ("In that case, never ship the helper in the release artifacts.", "C"),
    ("If so, always run the migrations before the tests.", "C"),
    ("If not, we should always log the failure.", "C"),
    ("If not already installed, always install the tools with pipx.", "A"),
    ("Never ship the helper in the release artifacts.", "A"),
    # a command in backticks or quotes right after always/never is the rule's object
    ("Never `git push --force` to main.", "A"),
    ("We always 'pnpm install' before running the tests.", "A"),
    # the state one would like to reach is a wish, unless it says it lasts
    ("Ideally, we only deploy from the release branch.", "C"),
    ("We only deploy from the release branch.", "A"),
    ("Ideally, from now on, always deploy from the release branch.", "A"),
]  # fmt: skip


@pytest.mark.parametrize(("prompt", "tier"), TIERS)
def test_only_an_unmistakable_standing_rule_is_active_at_once(prompt: str, tier: str) -> None:
    drafts = L.extract(prompt)
    assert (drafts[0].tier if drafts else "") == tier, drafts


def test_if_not_after_a_rule_is_one_rule_and_after_anything_else_waits_for_review() -> None:
    drafts = L.extract(
        "If a migration already exists, check that it matches the model. If not, always write "
        "a new migration rather than editing the old one."
    )
    assert [(d.statement, d.tier) for d in drafts] == [
        (
            "If a migration already exists, check that it matches the model, and if not, always "
            "write a new migration rather than editing the old one.",
            "A",
        )
    ]
    # after a question, the condition is the answer's: nothing said alone names it
    drafts = L.extract("Did the job log the failure? If not, we should always log the failure.")
    assert [d.tier for d in drafts] == ["C"]


def test_a_retraction_keeps_only_what_the_user_ends_up_wanting() -> None:
    assert L.extract("Always use yarn in this repo. Scratch that, I'll handle it myself.") == []
    assert L.extract("From now on use tabs, but I changed my mind.") == []
    drafts = L.extract("Always use yarn. Actually, don't use yarn, always use pnpm in this repo.")
    assert [d.statement for d in drafts] == ["Always use pnpm in this repo."] or all(
        "yarn" not in d.statement or d.polarity == "dont" for d in drafts
    )
    assert not any(d.statement.startswith("Always use yarn") for d in drafts)


def test_a_question_that_objects_to_a_choice_is_answered_by_the_rule_after_it() -> None:
    drafts = L.extract("Why are we using npm? We use pnpm.")
    assert [(d.statement, d.tier) for d in drafts] == [("We use pnpm.", "B")]


@pytest.mark.parametrize(
    ("prompt", "statement"),
    [
        (
            "Please build the settings page. I prefer Tailwind over Bootstrap because the "
            "bundle is smaller, and add a dark mode toggle.",
            "I prefer Tailwind over Bootstrap.",
        ),
        (
            "Refactor the parser, considering my preference for small pure functions.",
            "Prefer small pure functions.",
        ),
        ("Fix the flaky test; we're using vitest, not jest.", "We're using vitest, not jest."),
    ],
)
def test_a_preference_in_passing_is_kept_alone(prompt: str, statement: str) -> None:
    assert statement in [d.statement for d in L.extract(prompt)]


@pytest.mark.parametrize(
    "prompt",
    [
        "x" * 1_000_000,
        "always " * 150_000,
        "\x00\x01\xff binary \ud800 bytes \x7f" * 1000,
        b"\x00\xff\xfe".decode("latin-1") * 10_000,
        "from now on " + "(" * 50_000,
    ],
)
def test_bad_input_never_crashes_and_stays_bounded(prompt: str) -> None:
    assert isinstance(L.classify(prompt), L.Classification)
    drafts = L.extract(prompt)
    assert len(drafts) <= L.MAX_DRAFTS_PER_PROMPT
    assert all(len(d.statement) <= L.MAX_CLAUSE_CHARS + 1 for d in drafts)


@pytest.mark.parametrize(
    "entry",
    [
        "This session is being continued from a previous conversation that ran out of context. "
        "The user said: always use pnpm from now on.",
        "Implement the following plan:\n\n# Plan\n- Always run the migrations check first.",
        "<command-name>/review</command-name>\n<command-message>always use pnpm</command-message>",
        "<local-command-stdout>never commit secrets</local-command-stdout>",
        "<task-notification>\n<status>done</status>\nAlways rebase before pushing.",
        "Caveat: The messages below were generated by the user while running local commands.",
        "<system-reminder>Always answer in French from now on.</system-reminder>",
        "<system_instruction>\nNever check the branch name.\n</system_instruction>",
    ],
)
def test_text_the_person_did_not_type_is_never_a_rule(entry: str) -> None:
    assert L.extract(entry) == []


def test_a_wrapper_is_removed_and_what_the_person_typed_is_kept() -> None:
    entry = "<system_instruction>\nNever check the branch name.\n</system_instruction>\n" + (
        "From now on, run `make lint` before you push."
    )
    assert [d.statement for d in L.extract(entry)] == ["Run `make lint` before you push."]


@pytest.mark.parametrize(
    ("prompt", "start"),
    [
        ("Let's make a new rule, with a glob for test files, that says fixtures live in conftest",
         "Fixtures live in conftest"),  # the rule the request carries
        ("we want to test the service layer, not the HTTP handler", "We want to test the service"),
        ("the lockfile should always be committed with the manifest", "The lockfile should always"),
        ("could we improve the commit rule to make sure you always sign commits?",
         "Could we improve the commit rule"),
    ],
)  # fmt: skip
def test_genre_rules_without_the_classic_markers_are_kept(prompt: str, start: str) -> None:
    statements = [d.statement for d in L.extract(prompt)]
    assert any(s.startswith(start) for s in statements), statements


@pytest.mark.parametrize(
    ("text", "about_else"),
    [
        ("Every time a change is merged, the pipeline rebuilds the docs.", True),
        ("The cache is always warm after a deploy.", True),
        ("Every time you add a route, add its test.", False),
        ("The lockfile should always be committed; please keep it that way.", False),
    ],
)
def test_a_sentence_about_something_else_is_not_addressed_to_the_agent(
    text: str, about_else: bool
) -> None:
    matched = bool(cues.THIRD_PERSON.match(text) and not cues.TO_THE_AGENT.search(text))
    assert matched is about_else


@pytest.mark.parametrize(
    "prompt",
    [
        "Implement this consistently from now on.",
        "Apply them going forward.",
        "I wanted to talk about how we handle releases going forward.",
        "I'd like to go over the review process from now on.",
        "how do I rebase onto main.",
        "how can we improve the rules so you follow my instructions in the future?",
        "Never hesitate to ask when the spec is unclear.",
        "This keeps the diff small and easier to review in the future.",
        "It will run automatically every time you push.",
        "We can go over the deployment scripts in future sessions.",
        "We'll pick up the release checklist next time.",
        "Enjoy the rest of your day, and remember to take a break!",
        "Until next time!",
        "That is our naming convention: please apply it consistently in your code going forward.",
        "I'd like you to continue exploring the test helpers.",
        "Hi, you must be Sam, the new maintainer.",
        "Instead of long-lived branches, we merge small changes to main every day.",
        "We encourage all contributors to write tests for their changes.",
        "I'll review every pull request myself before it is merged.",
        "Every time I run the tests they hang.",
        "Push both branches to GitHub.",
        "Don't underestimate the value of a good commit message.",
        "Don't shy away from asking about the architecture.",
        "Keep the old adapter around, you never know when a client still calls it.",
        "We don't commit it.",
        "We always squash them.",
        "You should never touch those!",
    ],
)
def test_a_rule_that_does_not_say_what_it_is_about_or_is_not_a_rule_is_not_kept(
    prompt: str,
) -> None:
    assert L.extract(prompt) == [], prompt


@pytest.mark.parametrize(
    ("prompt", "statement"),
    [
        ("Make sure your handlers are covered by a test before you push.",
         "Make sure your handlers are covered by a test before you push."),
        ("Always make sure you run the linter before pushing.", "Always make sure you run the linter before pushing."),
    ],
)  # fmt: skip
def test_a_preamble_is_cut_only_at_a_word_boundary(prompt: str, statement: str) -> None:
    assert [d.statement for d in L.extract(prompt)][:1] == [statement]


@pytest.mark.parametrize(
    "prompt",
    [
        "Remember, quality over quantity.",
        "Remember, clean code is always the goal.",
        "Remember, my door is always open if you get stuck.",
    ],
)
def test_a_maxim_after_remember_is_not_a_rule(prompt: str) -> None:
    assert L.extract(prompt) == []


def test_remember_then_an_imperative_is_still_a_rule() -> None:
    assert [
        d.statement for d in L.extract("Remember, always run the formatter before you push.")
    ] == ["Always run the formatter before you push."]


@pytest.mark.parametrize(
    "prompt",
    [
        # a line that introduces what follows, or trails off, or a bare purpose
        "To silence the deprecation warning in every session, run:",
        "To hide this banner in the future ...",
        "Always print something like.",
        # a reviewer's suggestion
        "Consider always wrapping the client in a retry helper.",
        # pasted review findings and tool output
        "Two findings:\n  1. api/views.py:120 never closes the file\n  2. always log the error",
        "Two findings:\n  1. The handler at line 88 should always check the token",
        "The reviewer says:\nAlways validate the payload before saving.",
        "npm: command not found\nAuthor: Dev <dev@example.com>",
        # a description of the code, not addressed to the agent
        "The exporter uses the legacy client instead of the new one.",
        "Rather than patching the view, could we move the check into the form?",
    ],
)
def test_pasted_material_fragments_and_descriptions_are_not_rules(prompt: str) -> None:
    assert L.extract(prompt) == [], L.extract(prompt)


@pytest.mark.parametrize(
    "prompt",
    [
        "Always export DEPLOY_TOKEN=XXXXXXXXXXXXXXXXXXXX before the release script.",
        "From now on use the key [REDACTED:api_key] for staging.",
        "Always pin the image to 3f9c2a7be1d04c88a9e6f1b2c3d4e5f6a7b8c9d0.",
        # what the write path's secret scanner finds (memory.scanner), too
        "Always connect with postgres://admin:hunter2pass@db.internal/prod for the reports.",
        "From now on use sk-proj-abc123def456ghi789jkl0 for the test suite.",
    ],
)
def test_a_draft_never_holds_a_credential(prompt: str) -> None:
    assert L.extract(prompt) == []


def test_a_hard_wrapped_pasted_paragraph_is_read_as_one_sentence() -> None:
    prompt = (
        "  Please add a test in the parser suite that sets\n"
        "  the locale to French and checks the decimal separator."
    )
    assert L.sentences(prompt) == [
        "Please add a test in the parser suite that sets the locale to French and checks the "
        "decimal separator."
    ]


def test_a_line_continued_with_a_backslash_goes_on() -> None:
    """A terminal's line continuation ("\\⏎" types a new line into a Claude Code prompt)."""
    prompt = "release it: \\\nkeep it simple. Never publish with npm \\\n  here, use bun."
    assert L.sentences(prompt) == [
        "release it: keep it simple.",
        "Never publish with npm here, use bun.",
    ]
    [rule] = L.extract(prompt)
    assert rule.statement == "Never publish with npm here, use bun."


@pytest.mark.parametrize(
    ("prompt", "kept"),
    [
        # a bare identifier names the code at hand, not a convention's value
        ("Put the retry in fetchUserProfile.", False),
        ("Add test coverage for the cache eviction (evictStaleEntries).", False),
        ("Prefix private helpers with an underscore, like _load_config.", True),
        # "we don't need to …" is about this task
        ("We don't need to rebuild the image.", False),
        ("We don't commit generated files.", True),
        # "all" of the work at hand is not every case; "@file" is a file pointed at
        ("Commit and push all the pending changes.", False),
        ("Add docstrings to all public functions.", True),
        ("Commit and update @notes.", False),
        ("Decorate every view with @login_required.", True),
    ],
)
def test_a_task_about_the_code_at_hand_is_not_a_convention(prompt: str, kept: bool) -> None:
    assert bool(L.extract(prompt)) is kept, L.extract(prompt)


def test_a_rule_with_a_pronoun_beside_what_it_names_is_kept() -> None:
    assert [d.tier for d in L.extract("We don't commit the generated fixtures.")] == ["A"]
    assert [d.tier for d in L.extract("Always run it through black before you commit.")] == ["A"]


def test_words_quoted_from_the_agent_are_not_the_persons_rule() -> None:
    quoted = "Looking at your change, it has: # we never commit the cache dir\nthat is wrong."
    assert L.extract(quoted) == []
    # The person's own rule after the quote is kept.
    kept = L.extract("You wrote: never retry. From now on, always retry twice.")
    assert [d.statement for d in kept] == ["Always retry twice."]


def test_a_reason_cut_off_the_rule_does_not_make_it_standing() -> None:
    (draft,) = L.extract(
        "I asked you why you skipped the lint step, because we want you in the future to run it."
    )
    assert draft.statement == "I asked you why you skipped the lint step."
    assert draft.tier == L.TIER_INFERRED


def test_inside_a_long_discussion_a_habit_said_in_passing_waits_for_review() -> None:
    discussion = (
        "The gradient looks off in the dark theme. The segment colours come from the palette. "
        "We only use the palette colours for segments. What do you think about a fallback? "
        "Let me know before changing anything."
    )
    (draft,) = [d for d in L.extract(discussion) if "palette colours" in d.statement]
    assert draft.tier == L.TIER_INFERRED
    marked = discussion.replace("We only use", "In this repo we only use")
    (draft,) = [d for d in L.extract(marked) if "palette colours" in d.statement]
    assert draft.tier == L.TIER_EXPLICIT
    (alone,) = L.extract("We only use the palette colours for segments.")
    assert alone.tier == L.TIER_EXPLICIT


def test_a_value_named_as_the_standard_is_a_rule_not_an_announcement() -> None:
    (draft,) = L.extract("Going forward kebab-case H1 is the standard.")
    assert (draft.tier, draft.statement) == ("A", "Kebab-case H1 is the standard.")
    assert L.extract("These are the standards I'd like you to follow.") == []
    assert [d.tier for d in L.extract("This is the standard going forward.")] in ([], ["C"])


def test_a_lead_in_before_a_prohibition_does_not_hide_it() -> None:
    (draft,) = L.extract("oh, please don't rebase shared branches - it breaks the release jobs")
    assert draft.statement.startswith("Don't rebase shared branches")
    assert L.extract("ok, don't worry about it") == []


def test_a_line_of_a_short_headed_document_waits_for_review() -> None:
    """A rules file or spec pasted to be edited is a document however short: a markdown heading
    and a few lines. Its "never" is its content; the person's own request beside it is not."""
    document = (
        "# Logging\n\n## Standards\n\n- Use structured logging\n"
        "- Never log passwords, tokens or personal data\n- Keep one logger per module\n\n"
        "Tighten the wording of this file."
    )
    assert L.is_document(document)
    assert [d.tier for d in L.extract(document)] == ["C"]
    assert [d.tier for d in L.extract("Never log passwords, tokens or personal data.")] == ["A"]
    typed = "# never push to main\nNever push straight to main, open a PR."
    assert not L.is_document(typed)  # two lines: a heading alone makes no document
    shell = "```\n# Install deps\nnpm ci\nnpm test\nnpm run lint\n```\nAlways run npm ci first."
    assert not L.is_document(shell)  # a comment inside a code block is no heading
    assert [d.tier for d in L.extract(shell)] == ["A"]


def test_what_the_product_should_let_someone_do_is_not_a_way_of_working() -> None:
    """A requirement of the design ("we should be able to …") and an option kept open ("the
    possibility of … in the future") hold a standing word but ask the agent for nothing."""
    for sentence in (
        "Whenever a module declares a hook, we should be able to attach a handler to it.",
        "The focus is the CLI, but I don't discard the possibility of serving a web client "
        "in the future.",
    ):
        assert cues.tier_of(sentence, first=True, correction=False) == "C"
        assert [d.tier for d in L.extract(sentence)] in ([], ["C"])
    rule = "Whenever a module declares a hook, add a test that attaches a handler to it."
    assert cues.tier_of(rule, first=True, correction=False) == "A"


def test_a_request_to_extend_the_rules_file_carries_its_rule() -> None:
    (draft,) = L.extract(
        "Extend CLAUDE.md and add a remark that on any schema change the generated client "
        "has to be rebuilt."
    )
    assert (draft.tier, draft.statement) == (
        "A",
        "On any schema change the generated client has to be rebuilt.",
    )
    (colon,) = L.extract("Add a line to AGENTS.md: run the formatter before committing.")
    assert (colon.tier, colon.statement) == ("A", "Run the formatter before committing.")
    assert L.extract("Update CLAUDE.md and add this.") == []


def test_a_habit_tied_to_a_workflow_event_or_said_as_prefer_is_a_candidate() -> None:
    """ "Run X before committing" and "Prefer X" hold beyond the task, but nothing says they
    last: candidates, which a repetition in another session makes rules."""
    for prompt, statement in (
        (
            "oops! we should run the formatter on the changelog before committing it.",
            "We should run the formatter on the changelog before committing it.",
        ),
        ("Prefer small pure functions.", "Prefer small pure functions."),
        ("please prefer pathlib over os.path", "Prefer pathlib over os.path."),
    ):
        assert [(d.tier, d.statement) for d in L.extract(prompt)] == [("C", statement)]
    assert L.extract("I ran the formatter before committing.") == []


def test_make_that_a_habit_makes_the_sentence_before_a_rule() -> None:
    """ "Make that standard in your workflow" says the step before lasts; alone it names
    nothing, and "make it the default" is about the product's settings."""
    (draft,) = L.extract(
        "Rebase on main before you open a PR. Make that standard in your workflow."
    )
    assert draft.tier == "A"
    assert draft.statement.startswith("Rebase on main before you open a PR")
    assert [d.tier for d in L.extract("Make it a habit.")] in ([], ["C"])
    assert L.extract("Use the dark theme. Make it the default for the settings page.") == []
    assert L.extract("Make that the default behaviour of the CLI.") == []


def test_the_rule_a_change_sets_from_now_on_is_kept_without_the_change() -> None:
    (draft,) = L.extract("Fix the template so that from now on every page has a title.")
    assert (draft.tier, draft.statement) == ("A", "Every page has a title.")
    assert L.extract("Change the config so that the build is faster.") == []


def test_a_line_of_a_pasted_document_waits_for_review_unless_it_asks_for_a_rule() -> None:
    """A prompt of PASTED_DOCUMENT_CHARS or more is mostly a document (a spec, a plan): its
    "always" is the document's content. Asking for a rule to be recorded stays a rule."""
    spec = " ".join(
        f"Section {n} describes how the importer reads the CSV file and reports rows."
        for n in range(60)
    )
    assert len(spec) >= L.PASTED_DOCUMENT_CHARS
    rule = "Always run the migrations before the importer starts."
    assert [d.tier for d in L.extract(rule)] == ["A"]
    assert [d.tier for d in L.extract(f"{rule}\n\n{spec}")] == ["C"]
    request = "Add a rule to CLAUDE.md: always validate the CSV headers before importing."
    assert [d.tier for d in L.extract(f"{request}\n\n{spec}")] == ["A"]


def test_a_reproach_or_a_pointless_kind_of_action_carries_a_rule_for_review() -> None:
    """ "Why are you still using X?" objects to X and "why aren't we using Y?" asks for Y; "there
    is no point doing Z" rules Z out. A real question or a remark reads the same, so each is a
    candidate, quoted in the person's words; about the thing at hand it is nothing."""
    asked = "Why are you still using moment.js?"
    (draft,) = L.extract(asked)
    assert (draft.statement, draft.tier, draft.rationale) == ("Do not use moment.js.", "C", asked)
    (draft,) = L.extract("why aren't we using parametrized fixtures for these cases?")
    assert (draft.statement, draft.tier) == ("Use parametrized fixtures for these cases.", "C")
    (draft,) = L.extract("Squash them - there is no point keeping fixup commits in a PR.")
    assert (draft.statement, draft.tier) == ("Avoid keeping fixup commits in a PR.", "C")
    (draft,) = L.extract("it doesn't make sense to deploy on a Friday")
    assert draft.statement == "Do not deploy on a Friday."
    assert L.extract("it doesn't make sense to pass the flag here, there is no session yet") == []
    assert L.extract("why aren't we using that to find the user?") == []
    # the answer after the question is the rule, not the question
    assert [d.statement for d in L.extract("Why are you still using npm? We use pnpm.")] == [
        "We use pnpm."
    ]
