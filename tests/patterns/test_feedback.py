"""Feedback clusters, top issues for a task, prompt evolution through review, promotion, and
recall feeding inject's consider bucket."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from memory.errors import Conflict
from memory.models import Engram, ReviewItem
from memory.services.retrieval import inject
from memory.services.review import review_decide
from patterns.models import FeedbackCluster
from patterns.services.evaluation import evaluation_request
from patterns.services.feedback import PROMPT_TASK, feedback_top, prompt_evolution_propose
from patterns.services.promotion import pattern_promote
from patterns.services.settings import settings_update
from patterns.tasks import age, evolve_prompts
from tests.patterns.helpers import make_pattern

pytestmark = pytest.mark.django_db

TASK = "Write a function that parses ISO 8601 dates"


def evaluate_bad(owner: Any, task: str = TASK, code: str = "x = 1") -> None:
    evaluation_request(owner=owner, task=task, code=code)


def test_similar_feedback_joins_one_cluster_and_surfaces_at_two(owner: Any) -> None:
    evaluate_bad(owner)
    assert feedback_top(owner=owner, task=TASK).issues == []  # one is not recurring
    evaluate_bad(owner)
    cluster = FeedbackCluster.objects.get()
    assert cluster.count == 2.0
    assert len(cluster.members) == 2
    top = feedback_top(owner=owner, task="parse an ISO date")
    assert [i.cluster.pk for i in top.issues] == [cluster.pk]
    assert "no function or class is defined" in top.prompt


def test_unrelated_feedback_starts_its_own_cluster(owner: Any) -> None:
    evaluate_bad(owner)
    cheat = "def f(n):\n" + "".join(f"    if n == {i}:\n        return {i * i}\n" for i in range(3))
    evaluate_bad(owner, code=cheat)
    assert FeedbackCluster.objects.count() == 2


def test_a_cluster_decays_ten_percent_a_week_and_stops_surfacing(owner: Any) -> None:
    evaluate_bad(owner)
    evaluate_bad(owner)
    now = timezone.now()
    assert feedback_top(owner=owner, now=now + dt.timedelta(days=6)).issues
    assert feedback_top(owner=owner, now=now + dt.timedelta(weeks=1, hours=1)).issues == []
    # New evidence joins the decayed count: 2 x 0.9 + 1 = 2.8.
    cluster = FeedbackCluster.objects.get()
    cluster.last_seen = now - dt.timedelta(weeks=1, hours=1)
    cluster.save()
    evaluate_bad(owner)
    assert FeedbackCluster.objects.get().count == pytest.approx(2.8)


def test_issues_of_another_task_are_not_returned(owner: Any, other_owner: Any) -> None:
    evaluate_bad(owner)
    evaluate_bad(owner)
    assert feedback_top(owner=owner, task="Bake sourdough bread at home").issues == []
    assert feedback_top(owner=other_owner, task=TASK).issues == []


def test_prompt_evolution_is_llm_only_and_files_a_review_item(owner: Any, settings: Any) -> None:
    evaluate_bad(owner)
    evaluate_bad(owner)
    assert prompt_evolution_propose(owner=owner) is None  # no key: nothing proposed
    assert evolve_prompts() == 0
    assert not ReviewItem.objects.filter(kind=ReviewItem.Kind.PROMPT).exists()


def test_an_approved_prompt_proposal_becomes_an_engram(
    owner: Any, fake_claude: Any, settings: Any, logged_in: Any
) -> None:
    key, settings.ANTHROPIC_API_KEY = settings.ANTHROPIC_API_KEY, ""
    evaluate_bad(owner)  # the rubric, at once: its findings cluster
    evaluate_bad(owner)
    settings.ANTHROPIC_API_KEY = key
    fake_claude.on(
        PROMPT_TASK,
        lambda body: {
            "prompt_addition": "Always define a named function and test it.",
            "rationale": "Evaluations keep finding bare scripts.",
        },
    )
    item = prompt_evolution_propose(owner=owner)
    assert item is not None
    assert item.kind == ReviewItem.Kind.PROMPT
    assert item.payload["prompt_addition"] == "Always define a named function and test it."
    # The same clusters are not proposed twice while the item is open.
    assert prompt_evolution_propose(owner=owner) is None
    assert len(fake_claude.calls(PROMPT_TASK)) == 1
    page = logged_in.get("/review/").content.decode()
    assert "Always define a named function and test it." in page
    review_decide(owner=owner, item=item, action="approve", actor="person")
    engram = Engram.objects.get(statement="Always define a named function and test it.")
    assert engram.status == Engram.Status.ACTIVE
    assert engram.type == Engram.Type.PROCEDURAL
    # Addressed: the cluster no longer surfaces until new feedback joins it.
    assert feedback_top(owner=owner).issues == []


def test_a_pattern_is_promoted_to_a_candidate_engram_in_review(
    owner: Any, other_owner: Any
) -> None:
    pattern = make_pattern(owner, design="split on whitespace and join with hyphens")
    promoted = pattern_promote(owner=owner, key=pattern.key)
    engram = Engram.objects.get(engram_id=promoted.engram_id)
    assert engram.type == Engram.Type.PROCEDURAL
    assert engram.status == Engram.Status.CANDIDATE
    assert "split on whitespace" in engram.statement
    assert ReviewItem.objects.filter(engram=engram, kind=ReviewItem.Kind.CANDIDATE).exists()
    with pytest.raises(Conflict):
        pattern_promote(owner=owner, key=pattern.key)


def test_recall_feeds_inject_consider_only_when_turned_on(owner: Any) -> None:
    pattern = make_pattern(owner, "Slugify a title for a URL", design="lower, split, hyphens")
    prompt = "slugify this blog post title for its URL"
    assert pattern.key not in inject(owner=owner, prompt=prompt).ids
    settings_update(owner=owner, feed_inject=True)
    result = inject(owner=owner, prompt=prompt)
    assert [item["id"] for item in result.consider] == [pattern.key]
    assert f"[{pattern.key}]" in result.rendered
    assert "Worked before" in result.rendered


def test_the_aging_task_twice_changes_nothing_the_second_time(owner: Any) -> None:
    pattern = make_pattern(owner, eval_score=0.2)
    type(pattern).objects.filter(pk=pattern.pk).update(
        score_anchor=timezone.now() - dt.timedelta(weeks=40)
    )
    assert age() == {"aged": 0, "retired": 1}
    assert age() == {"aged": 0, "retired": 0}


def test_the_prompt_tasks_twice_file_one_proposal(
    owner: Any, fake_claude: Any, settings: Any
) -> None:
    from patterns.tasks import evolve_prompt

    key, settings.ANTHROPIC_API_KEY = settings.ANTHROPIC_API_KEY, ""
    evaluate_bad(owner)
    evaluate_bad(owner)
    settings.ANTHROPIC_API_KEY = key
    fake_claude.on(PROMPT_TASK, lambda body: {"prompt_addition": "Test it.", "rationale": "r"})
    assert evolve_prompts() == 1
    assert evolve_prompts() == 0
    assert evolve_prompt(owner.pk) is False
    assert ReviewItem.objects.filter(kind=ReviewItem.Kind.PROMPT).count() == 1
