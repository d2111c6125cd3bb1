"""Issue #24 item 3, the service side: a candidate the person states again in another session is
promoted to active (event `engram_promoted`, reason recurrence); "forget that rule" / "never mind
that" / "forget the rule about X" retires the rule it names, with a review item to restore it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from memory.maths import learning as L
from memory.models import (
    AgentSession,
    Engram,
    LearningDraft,
    LearningSignal,
    LifecycleEvent,
    ReviewItem,
)
from memory.services import learning, review

URL = "/api/v1/hooks/claude-code"
CANDIDATE = "Keep the changelog entries short and in the present tense."


def session(owner: Any, name: str) -> AgentSession:
    found, _ = AgentSession.objects.get_or_create(
        owner=owner, session_id=name, defaults={"scope": "project:shop"}
    )
    return found


def state(
    owner: Any,
    statement: str,
    name: str = "s1",
    tier: str = "C",
    kind: str = LearningSignal.Kind.PROMPT,
) -> LearningDraft:
    """A rule the person said in session `name` (tier C: a candidate), through draft_write."""
    signal = LearningSignal.objects.create(
        owner=owner,
        session=session(owner, name),
        kind=kind,
        text=statement,
        scope="project:shop",
        state=LearningSignal.State.DONE,
    )
    draft = L.LessonDraft(
        statement=statement,
        polarity="do",
        tier=tier,
        type="behavioral",
        anti_pattern="",
        tags=(),
        rationale=statement,
    )
    return learning.draft_write(
        signal=signal, draft=draft, producer="heuristic", forced=False, now=timezone.now()
    )


def test_a_candidate_stated_again_in_another_session_becomes_active(owner: Any) -> None:
    first = state(owner, CANDIDATE).engram
    assert first is not None and first.status == "candidate"
    assert ReviewItem.objects.filter(kind="candidate", engram=first, state="pending").exists()
    again = state(owner, CANDIDATE, name="s2")
    first.refresh_from_db()
    assert (first.status, first.source) == ("active", "user")
    assert again.engram == first
    assert again.result == "recurrence"
    event = LifecycleEvent.objects.get(event="engram_promoted", engram=first)
    assert event.data["reason"] == "recurrence"
    assert not ReviewItem.objects.filter(kind="candidate", engram=first, state="pending").exists()


def test_a_candidate_repeated_in_the_same_session_stays_a_candidate(owner: Any) -> None:
    first = state(owner, CANDIDATE).engram
    state(owner, CANDIDATE)
    assert first is not None
    first.refresh_from_db()
    assert first.status == "candidate"
    assert not LifecycleEvent.objects.filter(event="engram_promoted").exists()


def test_an_error_fix_lesson_that_recurs_is_counted_not_promoted(owner: Any) -> None:
    lesson = "When `pytest` is not found, run it from the project's virtualenv."
    first = state(owner, lesson, kind=LearningSignal.Kind.ERROR_FIX).engram
    state(owner, lesson, name="s2", kind=LearningSignal.Kind.ERROR_FIX)
    assert first is not None
    first.refresh_from_db()
    assert (first.status, first.derivation_count) == ("candidate", 2)


def test_a_candidate_the_person_now_states_as_a_rule_is_active_at_once(owner: Any) -> None:
    first = state(owner, CANDIDATE).engram
    state(owner, CANDIDATE, tier="A")
    assert first is not None
    first.refresh_from_db()
    assert first.status == "active"


def test_a_near_duplicate_in_another_session_promotes_the_candidate(owner: Any) -> None:
    first = state(owner, CANDIDATE).engram
    again = state(owner, "Keep the changelog entries short, in the present tense.", name="s2")
    assert first is not None
    first.refresh_from_db()
    if again.result != "recurrence":  # the embedder did not call them near-duplicates
        pytest.skip(f"not a near-duplicate here: {again.result}")
    assert first.status == "active"
    assert Engram.objects.filter(status="retired").count() == 1
    assert not ReviewItem.objects.filter(kind="merge", state="pending").exists()


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("Forget that rule.", L.FORGET_LAST),
        ("Okay, never mind that.", L.FORGET_JUST_SAID),
        ("Forget the rule about tabs.", "tabs"),
        ("Never mind what I said about `make lint`.", "`make lint`"),
        ("Actually, drop the ruff rule.", "ruff"),
        ("Please fix the login bug.", None),
        ("Forget the login page for now and fix the cart.", None),
        ("Never mind that, let's look at the flaky test in the cart module instead, it fails "
         "about one run in five on CI and I want to know why before the release.", None),
    ],
)  # fmt: skip
def test_a_forget_request_names_the_rule_or_the_last_one(text: str, topic: str | None) -> None:
    assert L.forget_request(text) == topic


def say(api: Client, prompt: str, name: str = "s1") -> None:
    body = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": name,
        "cwd": "/home/dev/shop",
        "prompt": prompt,
    }
    assert api.post(URL, body, content_type="application/json").status_code == 200
    for pk in LearningSignal.objects.filter(state="pending").values_list("pk", flat=True):
        learning.signal_extract(signal_pk=pk)


def test_forget_the_rule_about_x_retires_it_and_review_restores_it(api: Client, owner: Any) -> None:
    rule = state(owner, "Always indent Python with tabs.", tier="A").engram
    other = state(owner, "Always run ruff before committing.", tier="A").engram
    assert rule is not None and other is not None
    say(api, "Forget the rule about tabs.", name="s2")
    rule.refresh_from_db()
    other.refresh_from_db()
    assert (rule.status, other.status) == ("retired", "active")
    assert rule.retired_at is not None
    draft = LearningDraft.objects.get(result="forgotten")
    assert draft.engram == rule
    assert not Engram.objects.filter(statement__icontains="forget").exists()
    event = LifecycleEvent.objects.get(event="engram_retired", engram=rule)
    assert event.data == {"reason": "forget", "quote": "Forget the rule about tabs."}
    item = ReviewItem.objects.get(kind="superseded", engram=rule)
    review.review_decide(owner=owner, item=item, action="restore", actor="person")
    rule.refresh_from_db()
    assert rule.status == "active"


def test_forget_that_rule_retires_the_last_rule_of_the_session(api: Client, owner: Any) -> None:
    older = state(owner, "Always run ruff before committing.", tier="A").engram
    last = state(owner, "Always indent Python with tabs.", tier="A").engram
    assert older is not None and last is not None
    say(api, "Forget that rule.")
    older.refresh_from_db()
    last.refresh_from_db()
    assert (older.status, last.status) == ("active", "retired")


def test_never_mind_that_reaches_only_a_rule_just_stated(api: Client, owner: Any) -> None:
    rule = state(owner, "Always indent Python with tabs.", tier="A").engram
    assert rule is not None
    LearningSignal.objects.update(created_at=timezone.now() - timedelta(hours=2))
    say(api, "Never mind that.")
    rule.refresh_from_db()
    assert rule.status == "active"
    assert LearningDraft.objects.get(result="rejected").error == "forget: names no live rule"
    state(owner, "Always run ruff before committing.", tier="A")
    say(api, "Oh, never mind that!")  # the same words twice in a session are one prompt
    assert Engram.objects.get(statement="Always run ruff before committing.").status == "retired"


def test_a_topic_naming_two_rules_retires_neither(api: Client, owner: Any) -> None:
    state(owner, "Always run ruff before committing.", tier="A")
    state(owner, "Run ruff with --fix in CI.", tier="A")
    say(api, "Forget the rule about ruff.", name="s2")
    assert set(Engram.objects.values_list("status", flat=True)) == {"active"}
    assert LearningDraft.objects.get(result="rejected").error.startswith("forget: names 2 rules")


def test_a_forget_request_is_handled_once(api: Client, owner: Any) -> None:
    state(owner, "Always indent Python with tabs.", tier="A")
    say(api, "Forget the rule about tabs.", name="s2")
    pk = LearningSignal.objects.get(label="forget").pk
    assert learning.signal_extract(signal_pk=pk) == 0
    assert LearningDraft.objects.filter(result="forgotten").count() == 1


def test_the_engram_page_counts_the_times_it_was_stated(owner: Any, logged_in: Client) -> None:
    first = state(owner, CANDIDATE).engram
    state(owner, CANDIDATE, name="s2")
    assert first is not None
    html = logged_in.get(f"/engrams/{first.engram_id}/").content.decode()
    assert "stated 2 times" in html
