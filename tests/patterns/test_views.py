"""The success-pattern dashboard page, its fragments and its actions."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from memory.models import Engram
from patterns.models import Composition, EvalRecord, SuccessPattern
from patterns.services.settings import settings_get
from patterns.services.store import pattern_refine
from patterns.views import sparkline
from tests.patterns.helpers import HONEST_CODE, make_pattern

pytestmark = pytest.mark.django_db

URL = "/patterns/"


def test_the_empty_page_explains_itself(logged_in: Client) -> None:
    html = logged_in.get(URL).content.decode()
    assert "Two signals, kept apart" in html
    assert "No active patterns yet." in html
    assert "No evaluation feedback yet." in html
    assert "deterministic <strong>rubric</strong>" in html


@pytest.mark.sqlite
def test_the_page_lists_patterns_with_scores_and_a_sparkline(
    logged_in: Client, owner: Any, django_assert_max_num_queries: Any
) -> None:
    for i in range(3):
        pattern = make_pattern(owner, f"Task number {i} about parsing dates")
        pattern_refine(owner=owner, key=pattern.key, eval_score=4 + i)
        pattern_refine(owner=owner, key=pattern.key, eval_score=8)
    with django_assert_max_num_queries(14):
        html = logged_in.get(URL).content.decode()
    assert html.count("<polyline") == 3
    assert pattern.key in html
    assert "0.850" not in html
    assert "0.900" in html  # 0.5 + 0.5 x median(8 learned, 6, 8)/10


def test_the_patterns_fragment(logged_in: Client, owner: Any) -> None:
    make_pattern(owner)
    response = logged_in.get(URL, headers={"HX-Request": "true", "HX-Target": "patterns"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="patterns">')
    assert "<html" not in html


def test_recall_from_the_page_is_read_only(logged_in: Client, owner: Any) -> None:
    pattern = make_pattern(owner)
    response = logged_in.get(
        URL,
        {"task": "make a URL slug", "eval_weighted": "on", "recency_weight": "0"},
        headers={"HX-Request": "true", "HX-Target": "recall"},
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="recall">')
    assert pattern.key in html
    assert SuccessPattern.objects.get().reuse_count == 0


def test_learn_from_the_form(logged_in: Client) -> None:
    response = logged_in.post(
        URL + "learn/",
        {"task": "Slugify a title", "eval_score": "7", "on_duplicate": "replace_with_better"},
    )
    assert response.status_code == HTTPStatus.FOUND
    assert SuccessPattern.objects.get().success_score == 7.0


def test_a_bad_score_is_refused_next_to_its_field(logged_in: Client) -> None:
    response = logged_in.post(
        URL + "learn/", {"task": "Slugify", "eval_score": "12", "on_duplicate": "skip"}
    )
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert "less than or equal to 10" in response.content.decode()
    assert not SuccessPattern.objects.exists()


def test_actions_evaluate_reuse_refine_promote(logged_in: Client, owner: Any) -> None:
    pattern = make_pattern(owner, code=HONEST_CODE)
    base = f"{URL}{pattern.key}/"
    assert logged_in.post(base + "evaluate/").status_code == HTTPStatus.FOUND
    assert EvalRecord.objects.filter(source="rubric").count() == 1
    logged_in.post(base + "reused/")
    logged_in.post(base + "refine/", {"eval_score": "3"})
    logged_in.post(base + "promote/")
    pattern.refresh_from_db()
    assert pattern.reuse_count == 1
    assert EvalRecord.objects.count() == 3  # learned, rubric, refine
    assert Engram.objects.get(engram_id=pattern.engram_id).status == "candidate"


def test_another_owners_pattern_is_404_and_unchanged(logged_in: Client, other_owner: Any) -> None:
    theirs = make_pattern(other_owner)
    response = logged_in.post(f"{URL}{theirs.key}/reused/")
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert SuccessPattern.objects.get().reuse_count == 0


def test_compose_fragment_shows_stages(logged_in: Client, owner: Any) -> None:
    make_pattern(owner, "Load the invoice CSV into rows", inputs=["csv"], outputs=["rows"])
    response = logged_in.post(
        URL + "compose/",
        {"task": "Invoice CSV to rows", "given": "csv"},
        headers={"HX-Request": "true"},
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="compose">')
    assert "Contracts hold." in html
    assert Composition.objects.get().source == "nearest"


def test_the_inject_switch(logged_in: Client, owner: Any) -> None:
    logged_in.post(URL + "settings/", {"feed_inject": "on"})
    assert settings_get(owner).feed_inject
    logged_in.post(URL + "settings/", {})
    assert not settings_get(owner).feed_inject


def test_sparkline_points() -> None:
    assert sparkline([]) == ""
    assert sparkline([10]) == "0.0,0.0 80.0,0.0"
    assert sparkline([0, 5, 10]) == "0.0,20.0 40.0,10.0 80.0,0.0"


def test_the_page_needs_a_login(client: Client) -> None:
    assert client.get(URL).status_code == HTTPStatus.FOUND


def test_recall_on_the_page_shows_the_recurring_issues_of_similar_tasks(
    logged_in: Client, owner: Any
) -> None:
    from patterns.services.evaluation import evaluation_request

    make_pattern(owner, "Write a function that parses ISO 8601 dates")
    for _ in range(2):
        evaluation_request(owner=owner, task="Write a function that parses ISO dates", code="x=1")
    html = logged_in.get(URL, {"task": "parse an ISO date string"}).content.decode()
    assert "Recurring issues in similar tasks" in html
    assert "no function or class is defined" in html


def test_a_prompt_proposal_needs_an_llm_key(logged_in: Client) -> None:
    response = logged_in.post(URL + "propose/", follow=True)
    assert "need an LLM key" in response.content.decode()
