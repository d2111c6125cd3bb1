"""The session-learning maths: classifier, heuristic extractor, transcript parsing, error → fix."""

from __future__ import annotations

import json

import pytest

from memory.maths import learning as L

POSITIVES = [
    ("Always use pnpm in this repo.", "instruction"),
    ("Never commit directly to main", "instruction"),
    ("From now on, write commit messages in the imperative mood.", "instruction"),
    ("Don't add comments that repeat the code.", "instruction"),
    ("Remember to run the linter before you push.", "instruction"),
    ("Make sure to update the changelog with every release.", "instruction"),
    ("I prefer small functions over long ones.", "preference"),
    ("We use ruff, not flake8.", "instruction"),
    ("No, use httpx instead of requests.", "correction"),
    ("That's wrong, the config lives in settings.toml not config.yaml.", "correction"),
    ("Could you always use tabs from now on?", "instruction"),
]
NEGATIVES = [
    "How do I always get the latest version?",
    "Why does the build never finish?",
    "Fix the login bug in auth.py",
    "Can you make sure the tests pass?",
    "Run the tests please",
    "Refactor the parser and add a test for empty input.",
    "No worries, thanks!",
    "I don't know why this fails",
    "Feel free to reach out if you have any questions.",
    "```python\n# never do this\nfor i in range(10): print(i)\n```",
    'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\n'
    "ValueError: never use this",
    "2026-01-02 10:00:01 ERROR never retrying connection to db",
    "    always_retry = True  # never change",
]


@pytest.mark.parametrize(("prompt", "kind"), POSITIVES)
def test_it_recognises_instructions_preferences_and_corrections(prompt: str, kind: str) -> None:
    verdict = L.classify(prompt)
    assert verdict.is_signal
    assert verdict.kind == kind


@pytest.mark.parametrize("prompt", NEGATIVES)
def test_it_never_fires_on_questions_tasks_code_or_logs(prompt: str) -> None:
    assert not L.classify(prompt).is_signal


def test_it_finds_a_preference_inside_a_long_prompt() -> None:
    prompt = (
        "I've been looking at the build and it's slow, and the lockfile keeps changing under "
        "me when I switch branches, so I prefer simple, minimal dependencies, how can I speed "
        "up the CI?"
    )
    drafts = L.extract(prompt)
    assert [d.statement for d in drafts] == ["I prefer simple, minimal dependencies."]
    assert drafts[0].tier == "C"  # a preference in passing is a candidate (issue #24)


def test_a_rule_after_pasted_code_is_found_and_the_code_is_not() -> None:
    prompt = (
        "Here is the failing test:\n```\nassert parse('') == []\n# always returns None\n```\n"
        "Please look at it. From now on, always add a regression test with every bug fix."
    )
    drafts = L.extract(prompt)
    assert [d.statement for d in drafts] == ["Always add a regression test with every bug fix."]


def test_the_extractor_takes_the_clause_never_the_whole_prompt() -> None:
    prompt = "No, don't use npm here. Always use pnpm in this repo, remember that."
    drafts = L.extract(prompt)
    assert [d.statement for d in drafts] == ["Don't use npm here.", "Always use pnpm in this repo."]
    assert drafts[0].polarity == "dont"
    # a correction that names no right way is a candidate (issue #24); the rule after it is not
    assert drafts[0].tier == "C"
    assert drafts[0].anti_pattern == "use npm here"
    assert drafts[1].polarity == "do"
    assert drafts[1].tier == "A"


@pytest.mark.parametrize(
    ("statement", "anti"),
    [
        ("Use j_ for attributes instead of q_.", "q_"),
        ("Prefer composition over inheritance.", "inheritance"),
        ("Never use print for logging.", "use print for logging"),
        ("Use the logger, not print.", "print"),
        ("Use pytest fixtures.", ""),
    ],
)
def test_the_anti_pattern_comes_from_not_instead_of_and_never(statement: str, anti: str) -> None:
    assert L.anti_pattern_of(statement) == anti


def test_at_most_three_drafts_per_prompt() -> None:
    prompt = " ".join(f"Always prefix module {n} names with 'm{n}_'." for n in range(6))
    assert len(L.extract(prompt)) == L.MAX_DRAFTS_PER_PROMPT


def test_an_update_needs_another_value_or_the_other_direction_on_the_same_words() -> None:
    old, new = "Use q_ for attributes.", "Use j_ for attributes instead of q_."
    assert L.is_update(new, old, cosine=0.85, new_polarity="do", old_polarity="do")
    assert not L.is_update(new, old, cosine=0.7, new_polarity="do", old_polarity="do")
    other = "Start method names with 'x_'."
    assert not L.is_update(
        "Start class names with 'y_'.", other, cosine=0.9, new_polarity="do", old_polarity="do"
    )
    assert L.is_update(
        "Never use a linter.", "Always use a linter.", cosine=0.9, new_polarity="dont",
        old_polarity="do",
    )  # fmt: skip


def _line(kind: str, content: object, **extra: object) -> str:
    return json.dumps({"type": kind, "message": {"role": kind, "content": content}, **extra})


def test_transcript_parsing_reads_every_entry_kind() -> None:
    lines = [
        _line("user", "Always use pnpm."),
        _line("assistant", [{"type": "text", "text": "Sure."}]),
        _line(
            "assistant",
            [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pnpm i"}}],
        ),
        _line(
            "user",
            [{"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": True}],
        ),
        _line("user", "<command-name>/clear</command-name>"),
        _line("user", "meta", isMeta=True),
        json.dumps({"type": "summary", "summary": "x"}),
        "not json",
        "",
    ]
    entries = L.parse_lines(lines)
    assert [e.kind for e in entries] == ["user", "assistant", "tool_use", "tool_result"]
    assert entries[0].text == "Always use pnpm."
    assert entries[2].tool == "Bash"
    assert json.loads(entries[2].tool_input) == {"command": "pnpm i"}
    assert entries[3].is_error
    assert entries[3].tool_id == "t1"
    assert entries[3].text == "boom"


def test_split_complete_leaves_a_half_written_line_for_later() -> None:
    lines, used = L.split_complete(b'{"a": 1}\n{"b": 2}\n{"c"')
    assert lines == [b'{"a": 1}', b'{"b": 2}']
    assert used == 18
    assert L.split_complete(b"partial") == ([], 0)


def test_an_error_followed_by_a_similar_success_is_a_fix() -> None:
    calls = [
        L.Call("Bash", '{"command": "npm install left-pad"}', False, "npm: command not found"),
        L.Call("Read", '{"file_path": "/x"}', True),
        L.Call("Bash", '{"command": "pnpm install left-pad"}', True),
        L.Call("Bash", '{"command": "ls"}', False, "denied"),
        L.Call("Bash", '{"command": "ls"}', True),  # the same call again: no lesson
    ]
    fixes = L.error_fixes(calls)
    assert len(fixes) == 1
    assert fixes[0].fixed == "pnpm install left-pad"
    assert fixes[0].statement == "When `npm` is not found, run `pnpm install <arg>` instead."
    assert fixes[0].error == "npm: command not found"


def test_a_dotted_name_stays_whole_in_the_anti_pattern() -> None:
    from memory.maths.learning import anti_pattern_of

    assert anti_pattern_of("Use pathlib instead of os.path.") == "os.path"
    assert anti_pattern_of("Use httpx rather than requests.get, always.") == "requests.get"


# Prompts as people write them to coding agents: rules stated with and without markers.
AGENT_RULES = [
    ("No, don't use npm here. Always use pnpm in this repo, remember that.", "Always use pnpm"),
    ("I have a lot of deps already so I prefer simple, minimal dependencies, how can I add "
     "caching?", "I prefer simple, minimal dependencies."),
    ("From now on prefix private helpers with an underscore", "Prefix private helpers"),
    ("we use black with line length 100, not 88", "We use black with line length 100, not 88."),
    ("Also, wrap every public function with the @traced decorator.", "Wrap every public"),
    ("Oh, and name test files test_<module>.py.", "Name test files test_<module>.py."),
    ("When naming fixtures, end them with _factory.", "When naming fixtures, end them"),
    ("Secondly, put type hints on all public functions; it helps mypy.", "Put type hints on all"),
    ("Always, and I mean always, include assert statements in your methods.", "Always, and I"),
    ("We primarily use Bitbucket as our version control system.", "We primarily use Bitbucket"),
    ("Also, for attribute names, ensure they all end with '_i'.", "For attribute names, ensure"),
    ("Secondly, include assert statements in your methods.", "Include assert statements"),
    ("It's imperative that you add comments to your code.", "Add comments to your code."),
    ("Firstly, forget about using pre-commit hooks.", "Forget about using pre-commit"),
    ("So, no pair programming with colleagues going forward.", "No pair programming"),
]  # fmt: skip
NOT_RULES = [
    "How should I structure the tests?",
    "Add a test for the parser.",
    "Fix the flaky test in test_api.py please",
    "Great job, you are doing really well, keep it up!",
    "Don't worry about the failing lint for now.",
    "I want to go over some coding standards we follow.",
    "I'd like you to start following a new naming convention for your method names.",
    "Consistency is key.",
    "Just remember that consistency is key.",
    "Take some time to explore the codebase first.",
    "Always happy to help.",
    "$ npm install\nnpm ERR! code ERESOLVE\nnpm ERR! peer dep missing",
    "Apply this consistently.",
    "Don't stress about it too much.",
    "I want you to create a GitHub account if you haven't already.",
    "As you know, we use Git to manage our code changes.",
    "I also recommend reading the style guide before your first review.",
    "I want you to focus on writing clean code.",
    "A profiler can't fix poor coding practices.",
    "There's always more to explore and learn.",
]


@pytest.mark.parametrize(("prompt", "start"), AGENT_RULES)
def test_rules_written_to_coding_agents_are_extracted(prompt: str, start: str) -> None:
    statements = [d.statement for d in L.extract(prompt)]
    assert any(s.startswith(start) for s in statements), statements


@pytest.mark.parametrize("prompt", NOT_RULES)
def test_questions_tasks_encouragement_and_announcements_are_not_rules(prompt: str) -> None:
    assert L.extract(prompt) == []


def test_a_rule_about_this_decorator_carries_the_sentence_that_names_it() -> None:
    prompt = "We use the '@retry' decorator from tenacity. Add this decorator to all network calls."
    drafts = L.extract(prompt)
    assert [d.statement for d in drafts] == [
        "We use the '@retry' decorator from tenacity: add this decorator to all network calls."
    ]


def test_an_announcement_before_a_colon_does_not_hide_the_rule_after_it() -> None:
    drafts = L.extract("Onto some coding guidelines: always include try statements in methods.")
    assert [d.statement for d in drafts] == ["Always include try statements in methods."]


@pytest.mark.parametrize(
    ("new", "old"),
    [
        # the same naming slot, reworded, with another value
        ("Start function argument names with 'g_' from now on.",
         "When naming function argument names, always start them with 'e_'."),
        ("Start ending your method names with '_p'.", "End all method names with '_a'."),
        ("Start method names with 'x_'.",
         "End attribute names with '_j' and start method names with 'a_'."),
        # the same role, another tool
        ("Use a Windows laptop as your primary machine.",
         "We prefer our engineers to use a Linux desktop as their primary machine."),
        ("From now on use GitLab as your main VCS.",
         "We use Bitbucket as our version control system."),
        # the same practice, the other direction
        ("Use a linter for all your Python code.", "Stop using a linter altogether."),
        ("Always use a VPN when working remotely.", "Never use a VPN when working remotely."),
        ("Set up CI/CD pipelines for every new feature.", "Do not set up CI/CD pipelines."),
        # numbers in words, and the arguments of functions named three ways
        ("Work from home no more than twice a week.",
         "Work from home no more than three days a week."),
        ("When naming the arguments of your functions, start them with 'x_'.",
         "Start all function argument names with the prefix 'g_'."),
    ],
)  # fmt: skip
def test_an_update_is_found_by_what_the_rule_is_about_not_its_words(new: str, old: str) -> None:
    assert L.is_variant(new, old)


@pytest.mark.parametrize(
    ("new", "old"),
    [
        ("Start method names with 'x_'.", "Start attribute names with 'a_'."),
        ("Start method names with 'x_'.", "End method names with '_x'."),
        ("End all function names with '_d'.", "End all function argument names with '_e'."),
        (
            "Start using PyCharm as your IDE from now on.",
            "Use your personal phone for work calls from now on.",
        ),
        ("We use a simple system of tags.", "Avoid using the ticketing system altogether."),
        ("Use pytest for tests.", "Use ruff for linting."),
        ("Never commit to main.", "Always commit small changes."),
        ("Always use pnpm in this repo.", "Always use pnpm in this repo."),
    ],
)
def test_rules_about_different_things_are_not_variants(new: str, old: str) -> None:
    assert not L.is_variant(new, old)


def test_an_engram_the_session_never_touched_is_irrelevant_not_ignored() -> None:
    from memory.maths import attribution

    rule = "Store every timestamp in UTC"
    untouched = attribution.attribute(
        statement=rule, polarity="do", inputs=["pnpm install"], context=["add a pnpm script"]
    )
    assert untouched.result == "irrelevant"
    # A prompt that mentions the topic is enough to call it ignored.
    touched = attribution.attribute(
        statement=rule,
        polarity="do",
        inputs=["pnpm install"],
        context=["log the timestamp of each build in UTC"],
    )
    assert touched.result == "ignored"
    # One shared word is not the topic: long sessions hold most words somewhere.
    grazed = attribution.attribute(
        statement=rule,
        polarity="do",
        inputs=["pnpm install"],
        context=["log the timestamp of each build", "print the UTC offset"],
    )
    assert grazed.result == "irrelevant"
    # A trigger word counts as the topic too.
    trigger = attribution.attribute(
        statement="Never force-push",
        polarity="dont",
        inputs=["git push origin main"],
        trigger_context="git push --force",
    )
    assert trigger.result == "ignored"


def test_the_prose_inside_a_command_is_no_evidence_for_or_against_a_rule() -> None:
    """A commit message or a PR description says what the agent meant, not what it did: the
    words "broken state" in one neither break "Do not commit in a broken state" nor follow
    "Use pnpm", while the command around them still counts."""
    from memory.maths import attribution

    message = (
        "git add src/session.py && git commit -m \"$(cat <<'EOF'\nfix: session state was "
        'broken on resume\nEOF\n)"'
    )
    rule = "Do not commit in a broken state."
    verdict = attribution.attribute(
        statement=rule, polarity="dont", inputs=[json.dumps({"command": message})]
    )
    assert verdict.result != "contradicted"
    pr = 'gh pr create --title "Use pnpm everywhere" --body "We use pnpm now" --base main'
    assert attribution.without_prose(json.dumps({"command": pr})) == json.dumps(
        {"command": "gh pr create --title '' --body '' --base main"}
    )
    follow = attribution.attribute(
        statement="Use `pnpm` for installs.", polarity="do", inputs=[json.dumps({"command": pr})]
    )
    assert follow.result != "followed"
    ran = attribution.attribute(
        statement="Use `pnpm` for installs.",
        polarity="do",
        inputs=[json.dumps({"command": "pnpm install && git commit -m 'deps'"})],
    )
    assert ran.result == "followed"
    code = json.dumps({"command": 'python -c "import yaml"'})
    assert attribution.without_prose(code) == code  # code in quotes stays


def test_what_the_agent_writes_about_its_work_is_no_evidence_but_what_it_runs_is() -> None:
    """A plan, a to-do list, a subagent's prompt, a review comment and a document neither break
    nor follow a rule; for a rule in plain words, code and file names are no evidence either
    (`state.go` is not "a broken state"); a rule that names code is still judged by code."""
    from memory.maths import attribution

    rule = "Never push directly to main."
    prose = [
        json.dumps({"file_path": "/w/docs/plan.md", "content": "Step 4: push directly to main"}),
        json.dumps({"todos": [{"content": "push directly to main", "status": "pending"}]}),
        json.dumps({"description": "ship", "prompt": "Push directly to main when done."}),
        json.dumps({"command": 'gh api repos/o/r/pulls/1/comments -f body="no push to main"'}),
        json.dumps({"file_path": "/w/src/git.ts", "new_string": "// push directly to main"}),
    ]
    assert attribution.attribute(statement=rule, polarity="dont", inputs=prose).result == "ignored"
    ran = [*prose, json.dumps({"command": "git push origin main"})]
    assert attribution.attribute(statement=rule, polarity="dont", inputs=ran).result == (
        "contradicted"
    )
    named = [json.dumps({"command": "git add cmd/state.go broken_test.go && git commit -m x"})]
    broken = attribution.attribute(
        statement="Do not commit in a broken state.", polarity="dont", inputs=named
    )
    assert broken.result == "ignored"
    # a trigger names where a rule applies (a folder): its paths are evidence
    guarded = attribution.attribute(
        statement="Never edit the migrations by hand.",
        polarity="dont",
        trigger_context="migrations",
        inputs=[json.dumps({"file_path": "/w/app/migrations/0007_x.py", "new_string": "x"})],
    )
    assert guarded.result == "contradicted"
    code = "Compare errors with `errors.Is`, never with ==."
    edit = json.dumps({"file_path": "/w/a.go", "new_string": "if errors.Is(err, io.EOF) {"})
    assert attribution.attribute(statement=code, polarity="do", inputs=[edit]).result == (
        "followed"
    )


def test_the_words_of_the_working_folder_are_no_evidence_of_a_topic() -> None:
    """A rule that names the project (its folder) is not touched by every absolute path the
    session's tools use, and a path is not following it."""
    from memory.maths import attribution

    rule = "Use the brand font for the word 'Apollo' whenever it appears in main headings."
    folder = "/Users/dev/code/Apollo"
    ambient = attribution.path_words(folder)
    assert {"users", "dev", "code", "apollo"} <= ambient
    backend = [f"{folder}/src/main.ts", f"{folder}/supabase/032_rls.sql"]
    prompts = ["fix the RLS policies"]
    assert (
        attribution.attribute(statement=rule, polarity="do", inputs=backend, context=prompts).result
        == "ignored"  # the folder's name and "main": two salient terms, without `ambient`
    )
    verdict = attribution.attribute(
        statement=rule, polarity="do", inputs=backend, context=prompts, ambient=ambient
    )
    assert verdict.result == "irrelevant"
    # Work on headings and the brand font still touches it.
    ui = [f"{folder}/app/page.tsx: <h1 className='font-brand'>Apollo</h1>"]
    touched = attribution.attribute(
        statement=rule,
        polarity="do",
        inputs=ui,
        context=["make the main headings bigger"],
        ambient=ambient,
    )
    assert touched.result == "ignored"


def test_close_embeddings_of_two_naming_slots_are_not_an_update() -> None:
    new, old = "End all function names with '_d'.", "End all function argument names with '_e'."
    assert not L.is_update(new, old, cosine=0.9, new_polarity="do", old_polarity="do")
    same = "End all function names with '_x'."
    assert L.is_update(same, new, cosine=0.9, new_polarity="do", old_polarity="do")


def test_a_transcript_line_never_yields_a_nul_or_a_lone_surrogate() -> None:
    line = (
        '{"type": "user", "message": {"role": "user", "content": '
        '"Always use pnpm\\u0000 here \\ud800 please"}}'
    )
    (entry,) = L.parse_line(line)
    assert entry.text == "Always use pnpm here ? please"
    entry.text.encode("utf-8")  # storable as it is


@pytest.mark.parametrize(
    ("statement", "reason"),
    [
        ("Since the user explicitly stated it, I would first confirm with them.", "assistant"),
        ("This session is being continued from a previous conversation.", "assistant"),
        ("why is the build failing?", "question"),
        ("Always keep the retry loop short, as we discussed above.", "leans on the conversation"),
        ("Never pick option 2 for the cache.", "leans on the conversation"),
        ("Add this to CLAUDE.md.", "does not say the rule"),
        ("Also add guidance into AGENTS.md for future test creation.", "does not say the rule"),
    ],
)
def test_lesson_check_refuses_what_is_not_a_lesson(statement: str, reason: str) -> None:
    check = L.lesson_check(statement)
    assert not check.ok
    assert reason in check.reason


def test_lesson_check_accepts_a_standing_rule() -> None:
    assert L.lesson_check("Always use pnpm in this repo, never npm.").ok


@pytest.mark.parametrize(
    ("prompt", "rule"),
    [
        (
            "create a rule that specifies that when fixing a bug to first always write a failing "
            "test that covers the behavior",
            "When fixing a bug, first always write a failing test that covers the behavior.",
        ),
        (
            "Add a rule to CLAUDE.md that says never commit generated files.",
            "Never commit generated files.",
        ),
        (
            "Please update AGENTS.md to say that fixtures live in tests/data.",
            "Fixtures live in tests/data.",
        ),
        (
            "Make a skill that makes sure, whenever we change the docs, the sitemap is updated.",
            "Whenever we change the docs, the sitemap is updated.",
        ),
        ("add a rule: never parse json with grep, use jq", "Never parse json with grep, use jq."),
        (
            "let's update CLAUDE.md but make sure that the agent asks before running the e2e tests",
            "The agent asks before running the e2e tests.",
        ),
        (
            "Add a rule to @CLAUDE.md to check whether a new feature needs an integration test.",
            "Check whether a new feature needs an integration test.",
        ),
    ],
)
def test_a_request_to_record_a_rule_is_stored_as_the_rule_it_carries(
    prompt: str, rule: str
) -> None:
    (draft,) = L.extract(prompt)
    assert draft.statement == rule
    assert draft.tier == L.TIER_EXPLICIT
    assert draft.rationale and draft.rationale in prompt  # the person's words stay the quote


@pytest.mark.parametrize(
    "prompt",
    [
        "update the changelog rule to specify this history process i just asked you to do",
        "Make a rule that covers it.",
        "Add a rule to CLAUDE.md to reflect this.",
    ],
)
def test_a_request_that_points_back_keeps_its_own_words(prompt: str) -> None:
    assert L.rule_inside(L.clean_clause(prompt)) == L.clean_clause(prompt)


@pytest.mark.parametrize(
    "prompt",
    ["Update the rules so that this is covered.", "go ahead and modify the rule accordingly"],
)
def test_a_bare_request_to_edit_the_rules_is_no_lesson(prompt: str) -> None:
    assert L.extract(prompt) == []


def test_a_task_that_only_names_a_file_is_not_a_rule_request() -> None:
    assert L.extract("Update the README and make sure that the tests pass.") == []


def test_an_example_after_e_g_stays_in_its_sentence() -> None:
    from memory.maths.learning.text import sentences

    assert sentences("Use relative paths (e.g. `./a.toml`, not `/x/a.toml`). Then stop.") == [
        "Use relative paths (e.g. `./a.toml`, not `/x/a.toml`).",
        "Then stop.",
    ]
    assert sentences("Prefer pnpm vs. npm here. I.e. never npm.") == [
        "Prefer pnpm vs. npm here.",
        "I.e. never npm.",
    ]
    (draft,) = L.extract("Use only relative paths rather than absolute ones (e.g. `./a.toml`).")
    assert draft.statement == "Use only relative paths rather than absolute ones (e.g. `./a.toml`)."


def test_the_heuristic_drafts_of_entries_skip_forget_requests_and_prompts_the_agent_wrote() -> None:
    """One rule for the server's capture and the import dry run (`learning.entry_drafts`)."""
    handed = "Always run the linter before you commit anything in this repository."
    entries = [
        L.Entry("user", text=handed, uuid="u-1"),  # typed before any tool call: the person's
        L.Entry("tool_use", tool_input=json.dumps({"prompt": handed}), uuid="a-1"),
        L.Entry("user", text=handed, uuid="u-2"),  # the agent's task handed back
        L.Entry("user", text="Forget the rule about tabs.", uuid="u-3"),
        L.Entry("assistant", text="Never use tabs, I will always remember that.", uuid="a-2"),
    ]
    drafts = L.entry_drafts(entries)
    assert [(d.statement, e.uuid) for d, e in drafts] == [
        ("Always run the linter before you commit anything in this repository.", "u-1")
    ]


def test_claude_codes_note_beside_a_tool_search_result_is_not_the_persons() -> None:
    """Claude Code 2.1 writes "Tool loaded." beside the result of a tool search (references to
    the tools it loaded); text beside any other tool result was typed while the tool ran."""
    search = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "tool_reference", "tool_name": "Read"}],
    }
    ran = {"type": "tool_result", "tool_use_id": "t2", "content": "ok"}
    entries = L.parse_lines(
        [
            _line("user", [search, {"type": "text", "text": "Tool loaded."}]),
            _line("user", [ran, {"type": "text", "text": "Use rg rather than grep."}]),
        ]
    )
    assert [e.kind for e in entries] == ["tool_result", "tool_result", "user"]
    assert entries[2].text == "Use rg rather than grep."


def test_a_request_for_now_spliced_before_a_standing_rule_is_cut_off() -> None:
    """ "Do the same here, we always want X": the request points back at the conversation, the
    rule after the comma stands alone."""
    (draft,) = L.extract(
        "Let's do the same in the parser as well, we always want typed ids at the boundary."
    )
    assert (draft.tier, draft.statement) == ("A", "We always want typed ids at the boundary.")


def test_what_a_contraction_leaves_is_no_term_of_a_rule() -> None:
    """ "don't" splits into "don" and "t": "don" is in every other thing a person types, so a
    rule saying "don't" is not touched by a prompt that says "don't" and "fix"."""
    from memory.maths import attribution, delivery

    rule = "Fix up any code quality issues you notice and don't leave them by the wayside."
    assert "don" not in attribution.key_terms(rule)
    assert "don" not in attribution.salient_terms(rule)
    assert delivery.terms("Don't use npm, it doesn't work and won't") == {"npm", "work"}
    inputs = ["go test ./..."]
    prompts = ["fix the flaky test, don't touch the fixtures"]
    verdict = attribution.attribute(statement=rule, polarity="do", inputs=inputs, context=prompts)
    assert verdict.result == "irrelevant"
