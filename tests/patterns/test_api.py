"""REST API of success patterns: /api/v1/patterns."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from patterns.models import Composition, EvalRecord, FeedbackCluster, SuccessPattern
from tests.patterns.helpers import HONEST_CODE, make_pattern

pytestmark = pytest.mark.django_db

BASE = "/api/v1/patterns"


def post(client: Client, path: str, body: dict[str, Any]) -> Any:
    return client.post(BASE + path, data=body, content_type="application/json")


@pytest.mark.sqlite
def test_learn_then_recall_over_rest(api: Client) -> None:
    created = post(api, "", {"task": "Slugify a title for a URL", "eval_score": 8, "code": "x"})
    assert created.status_code == HTTPStatus.CREATED
    key = created.json()["key"]
    assert key.startswith("pat_")
    assert created.json()["outcome"] == "created"
    body = post(
        api, "/recall", {"task": "make a URL slug from a title", "limit": 3, "recency_weight": 0.5}
    ).json()
    result = body["results"][0]
    assert result["key"] == key
    assert set(result) >= {"key", "similarity", "quality_multiplier", "score"}
    # The score it was learned with is its first evaluation: 0.5 + 0.5 * 8 / 10.
    assert result["quality_multiplier"] == pytest.approx(0.9)
    assert result["score"] == pytest.approx(result["similarity"] * 0.9, abs=1e-5)


def test_a_skipped_duplicate_answers_200_with_the_existing_key(api: Client) -> None:
    first = post(api, "", {"task": "Slugify a title for a URL", "eval_score": 8}).json()
    again = post(
        api, "", {"task": "Slugify a title for a URL", "eval_score": 9, "on_duplicate": "skip"}
    )
    assert again.status_code == HTTPStatus.OK
    assert again.json()["key"] == first["key"]
    assert again.json()["outcome"] == "skipped"


@pytest.mark.parametrize(
    "body",
    [
        {"task": "", "eval_score": 5},
        {"task": "   ", "eval_score": 5},
        {"task": "a task", "eval_score": 11},
        {"task": "a task", "eval_score": -0.5},
        {"task": "a task"},
        {"task": "a task", "eval_score": 5, "on_duplicate": "merge"},
        {"task": "a task", "eval_score": 5, "unknown": 1},
    ],
)
def test_bad_learn_input_is_422_and_nothing_is_stored(api: Client, body: dict[str, Any]) -> None:
    response = post(api, "", body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json()["code"] == "validation_error"
    assert "message" in response.json()
    assert not SuccessPattern.objects.exists()


def test_recall_refuses_bad_input(api: Client) -> None:
    assert post(api, "/recall", {"task": ""}).status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert (
        post(api, "/recall", {"task": "x", "recency_weight": 2}).status_code
        == HTTPStatus.UNPROCESSABLE_ENTITY
    )
    assert post(api, "/recall", {"task": "x", "limit": 0}).status_code == 422


def test_refine_appends_a_score_and_changes_the_multiplier(api: Client, owner: Any) -> None:
    pattern = make_pattern(owner)
    response = post(api, f"/{pattern.key}/refine", {"eval_score": 4, "note": "CI pass rate .4"})
    assert response.status_code == HTTPStatus.CREATED
    assert response.json()["quality_multiplier"] == pytest.approx(0.8)  # median of 8 and 4
    assert response.json()["eval_scores"] == [8.0, 4.0]
    assert post(api, f"/{pattern.key}/refine", {"eval_score": 10.5}).status_code == 422
    assert EvalRecord.objects.count() == 2


def test_reused_adds_to_survival(api: Client, owner: Any) -> None:
    pattern = make_pattern(owner, eval_score=5.0)
    body = post(api, f"/{pattern.key}/reused", {}).json()
    assert body["reuse_count"] == 1
    assert body["success_score"] == pytest.approx(5.1, abs=1e-4)


def test_a_key_of_another_owner_is_404_everywhere(
    api: Client, other_owner: Any, owner: Any
) -> None:
    theirs = make_pattern(other_owner)
    for path, body in [
        (f"/{theirs.key}/refine", {"eval_score": 5}),
        (f"/{theirs.key}/reused", {}),
        (f"/{theirs.key}/evaluate", {}),
        (f"/{theirs.key}/promote", {}),
    ]:
        response = post(api, path, body)
        assert response.status_code == HTTPStatus.NOT_FOUND, path
        assert response.json()["code"] == "not_found"
    assert api.get(f"{BASE}/{theirs.key}").status_code == HTTPStatus.NOT_FOUND
    assert EvalRecord.objects.count() == 1  # only the score theirs was learned with
    assert SuccessPattern.objects.get(pk=theirs.pk).reuse_count == 0


def test_evaluate_without_a_key_answers_with_the_rubric_at_once(api: Client, owner: Any) -> None:
    pattern = make_pattern(owner, code=HONEST_CODE)
    response = post(api, f"/{pattern.key}/evaluate", {})
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    assert body["state"] == "done"
    assert body["source"] == "rubric"
    assert body["score"] == 10.0
    assert body["poll"] == f"{BASE}/evaluations/{body['key']}"
    assert api.get(body["poll"]).json()["key"] == body["key"]
    found = post(api, "/recall", {"task": pattern.task}).json()["results"][0]
    # Learned at 8, then a rubric 10 that counts a quarter: median(8, 6.25) = 7.125.
    assert found["quality_multiplier"] == pytest.approx(0.85625)


def test_evaluate_bare_code_flags_hard_coding(api: Client) -> None:
    code = "def f(n):\n    if n == 1:\n        return 1\n    if n == 2:\n        return 4\n"
    code += "    if n == 3:\n        return 9\n"
    body = post(api, "/evaluate", {"task": "square a number", "code": code}).json()
    assert body["pattern"] is None
    assert body["hardcoding"] == ["3 branches map a literal input straight to a literal output"]
    assert body["score"] == 4.0
    assert FeedbackCluster.objects.count() == 1


def test_evaluate_refuses_empty_code_and_too_many_judges(api: Client) -> None:
    assert post(api, "/evaluate", {"task": "t", "code": ""}).status_code == 422
    assert post(api, "/evaluate", {"task": "t", "code": "x", "n": 9}).status_code == 422
    assert not EvalRecord.objects.exists()


def test_feedback_returns_recurring_issues_for_a_task(api: Client) -> None:
    task = "Write a function that parses ISO dates"
    for _ in range(2):
        post(api, "/evaluate", {"task": task, "code": "x = 1"})
    body = api.get(f"{BASE}/feedback", {"task": "parse an ISO 8601 date string"}).json()
    assert len(body["issues"]) == 1
    assert body["issues"][0]["weight"] == pytest.approx(2.0)
    assert body["prompt"].startswith("Evaluations of similar past work")
    assert api.get(f"{BASE}/feedback", {"task": ""}).status_code == 422


def test_compose_falls_back_to_the_nearest_patterns_in_dependency_order(
    api: Client, owner: Any
) -> None:
    make_pattern(owner, "Render the invoice report as HTML", inputs=["rows"], outputs=["html"])
    make_pattern(owner, "Load the invoice CSV into rows", inputs=["csv"], outputs=["rows"])
    response = post(api, "/compose", {"task": "Invoice CSV to an HTML report", "given": ["csv"]})
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    assert body["source"] == "nearest"
    assert [s["outputs"] for s in body["stages"]] == [["rows"], ["html"]]
    assert body["valid"] is True
    assert api.get(body["poll"]).json()["key"] == body["key"]


def test_a_cyclic_pipeline_is_422_naming_the_stage_and_field(api: Client) -> None:
    stages = [
        {"name": "parse", "inputs": ["schema"], "outputs": ["rows"]},
        {"name": "infer", "inputs": ["rows"], "outputs": ["schema"]},
    ]
    response = post(api, "/compose", {"task": "load data", "stages": stages})
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    body = response.json()
    assert body["code"] == "pipeline_invalid"
    assert body["details"]["errors"][0]["stage"] == "parse"
    assert body["details"]["errors"][0]["field"] == "schema"
    assert "cycle" in body["message"]
    assert not Composition.objects.exists()


def test_a_valid_given_pipeline_is_stored(api: Client) -> None:
    stages = [
        {"name": "parse", "inputs": ["csv"], "outputs": ["rows"]},
        {"name": "render", "inputs": ["rows"], "outputs": ["html"]},
    ]
    body = post(api, "/compose", {"task": "t", "given": ["csv"], "stages": stages}).json()
    assert body["valid"] is True
    assert body["source"] == "given"


def test_list_and_settings(api: Client, owner: Any) -> None:
    make_pattern(owner)
    assert len(api.get(BASE).json()) == 1
    assert api.get(f"{BASE}/settings").json() == {"feed_inject": False}
    response = api.put(f"{BASE}/settings", {"feed_inject": True}, content_type="application/json")
    assert response.json() == {"feed_inject": True}


def test_unauthenticated_is_401(client: Client) -> None:
    response = client.post(BASE + "/recall", {"task": "x"}, content_type="application/json")
    assert response.status_code == HTTPStatus.UNAUTHORIZED
