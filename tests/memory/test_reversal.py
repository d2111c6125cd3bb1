"""A rule the person's later prompts ask against (`memory.maths.learning.reversal`), pure."""

from __future__ import annotations

import pytest

from memory.maths import learning


@pytest.mark.parametrize(
    ("statement", "verb", "terms"),
    [
        ("Do not commit anything.", "commit", ()),
        ("Next time you made changes to the code, let me commit.", "commit", ()),
        ("Don't create a PR, just a commit.", "create", ("pr",)),
        ("Don't run CI or integration tests, too slow.", "run", ("ci", "integration", "tests")),
        ("Never push sensitive data.", "push", ("sensitive", "data")),
        ("I'll tag the releases myself.", "tag", ("releases",)),
    ],
)
def test_the_action_a_rule_rules_out(statement: str, verb: str, terms: tuple[str, ...]) -> None:
    assert learning.ruled_out(statement) == learning.RuledOut(verb, terms)


@pytest.mark.parametrize(
    "statement",
    [
        "Don't forget to run the tests.",  # a rule to do something
        "Let me know when the build is green.",  # asks to be told
        "Use pnpm, not npm.",  # no action ruled out by a verb
    ],
)
def test_a_rule_that_rules_out_no_action(statement: str) -> None:
    assert learning.ruled_out(statement) is None


COMMIT = learning.RuledOut("commit", ())


@pytest.mark.parametrize(
    ("prompt", "asked"),
    [
        ("commit", "commit"),
        ("commit and push", "commit and push"),
        ("I made some changes as well. can you commit everything", "can you commit everything"),
        ("Just commit for me.", "Just commit for me."),
        ("fix the flaky test and commit", "fix the flaky test and commit"),
        ("don't commit yet", ""),  # negated
        ("do we need a commit skill too?", ""),  # the noun, in a question
        ("are the commits necessary? it would be great if it didn't commit", ""),
        ('try prompts like "make the output red and commit" in the test', ""),  # quoted
        (
            "we could write prompts that change several files in a row and commit in between",
            "",  # "and commit" deep in a long sentence describes, it does not ask
        ),
        ("commit\n" + "pasted log line\n" * 300, ""),  # a pasted document asks for nothing
    ],
)
def test_a_later_prompt_that_asks_for_the_action(prompt: str, asked: str) -> None:
    assert learning.asks_for(prompt, COMMIT) == asked


def test_a_rule_with_an_object_is_asked_against_only_with_that_object() -> None:
    action = learning.ruled_out("Don't run the integration tests, they are too slow.")
    assert action is not None
    assert learning.asks_for("run the tests", action) == ""
    assert learning.asks_for("ok, run the integration tests now", action) != ""
