"""REST API v1 for agents: recall, inject, feedback, sessions, episodes, observations, status,
import and export."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from memory.models import AgentSession, ApiToken, Engram, Episode, Injection, Observation, Outcome
from memory.services.sessions import outcomes_attribute

pytestmark = pytest.mark.django_db

AWS_KEY = "AKIA" + "IOSFODNN7ABCDEFG"
ENUM_LESSON = (
    "Postgres enum ADD VALUE cannot run inside a transaction; ship it in an earlier deploy."
)
GH_LESSON = "Don't pass --repo to gh inside a git checkout; gh reads the remote."


def post(client: Client, path: str, body: Any) -> Any:
    return client.post(path, body, content_type="application/json")


def learn(client: Client, statement: str, **fields: Any) -> str:
    response = post(client, "/api/v1/engrams", {"statement": statement, "source": "user", **fields})
    assert response.status_code == HTTPStatus.CREATED, response.content
    engram_id: str = response.json()["engram"]["id"]
    return engram_id


@pytest.fixture
def lessons(api: Client) -> dict[str, str]:
    return {
        "enum": learn(api, ENUM_LESSON, tags=["postgres", "migrations"]),
        "gh": learn(api, GH_LESSON, polarity="dont", tags=["gh"]),
        "bread": learn(api, "Let sourdough rise overnight in the fridge.", scope="project:bakery"),
    }


# --- recall and inject --------------------------------------------------------------------


@pytest.mark.sqlite
def test_recall_ranks_with_score_components_and_is_read_only(
    api: Client, lessons: dict[str, str]
) -> None:
    response = post(api, "/api/v1/recall", {"query": "postgres enum migration deploy"})
    assert response.status_code == HTTPStatus.OK
    results = response.json()["results"]
    assert results[0]["engram"]["id"] == lessons["enum"]
    components = results[0]["components"]
    assert set(components) >= {"lexical_rank", "dense_rank", "cosine", "fused", "rs_eff"}
    assert results[0]["score"] == pytest.approx(components["score"])
    assert response.json()["episodes"] is None
    assert not Injection.objects.exists()
    assert Engram.objects.get(engram_id=lessons["enum"]).frequency == 0


def test_recall_with_a_session_counts_as_access_and_can_include_episodes(
    api: Client, lessons: dict[str, str]
) -> None:
    session_id = post(api, "/api/v1/sessions", {"agent": "cli"}).json()["session_id"]
    post(api, "/api/v1/episodes", {"summary": "The enum migration broke the prod deploy."})
    post(api, "/api/v1/episodes", {"summary": "Lunch."})
    response = post(
        api,
        "/api/v1/recall",
        {
            "query": "enum migration",
            "session_id": session_id,
            "limit": 1,
            "mode": "lexical",
            "include_episodes": True,
        },
    )
    body = response.json()
    assert [r["engram"]["id"] for r in body["results"]] == [lessons["enum"]]
    assert body["results"][0]["components"]["dense_rank"] is None
    assert [e["summary"] for e in body["episodes"]] == ["The enum migration broke the prod deploy."]
    assert Injection.objects.get().bucket == "recall"
    assert Engram.objects.get(engram_id=lessons["enum"]).frequency == 1


@pytest.mark.sqlite
def test_inject_returns_buckets_and_a_rendered_block(api: Client, lessons: dict[str, str]) -> None:
    response = post(
        api, "/api/v1/inject", {"prompt": "Why does gh --repo fail inside my git checkout?"}
    )
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    assert set(body) == {"directives", "constraints", "consider", "spread", "rendered", "tokens"}
    assert [c["id"] for c in body["constraints"]] == [lessons["gh"]]
    assert lessons["gh"] in body["rendered"]
    assert lessons["bread"] not in body["rendered"]
    assert 0 < body["tokens"] <= 2000
    assert len(body["rendered"]) < 10_000
    assert not Injection.objects.exists()  # no session: nothing recorded


def test_inject_with_a_session_records_the_injections(api: Client, lessons: dict[str, str]) -> None:
    session_id = post(api, "/api/v1/sessions", {"scope": "project:bakery"}).json()["session_id"]
    response = post(
        api,
        "/api/v1/inject",
        {"prompt": "How long should sourdough rise?", "session_id": session_id},
    )
    assert lessons["bread"] in response.json()["rendered"]
    injection = Injection.objects.get(engram__engram_id=lessons["bread"])
    assert injection.session.session_id == session_id
    assert post(api, "/api/v1/inject", {"prompt": "x", "session_id": "nope"}).status_code == 404


@pytest.mark.sqlite
def test_inject_skips_a_context_the_engram_was_narrowed_away_from(
    api: Client, lessons: dict[str, str]
) -> None:
    prompt = {"prompt": "Why does gh --repo fail inside my git checkout of the docs site?"}
    assert lessons["gh"] in post(api, "/api/v1/inject", prompt).json()["rendered"]
    changed = api.patch(
        f"/api/v1/engrams/{lessons['gh']}",
        {"contraindications": ["not for: docs, website"]},
        content_type="application/json",
    )
    assert changed.status_code == HTTPStatus.OK, changed.content
    assert lessons["gh"] not in post(api, "/api/v1/inject", prompt).json()["rendered"]
    other = {"prompt": "Why does gh --repo fail inside my git checkout?"}
    assert lessons["gh"] in post(api, "/api/v1/inject", other).json()["rendered"]


def test_an_irrelevant_prompt_injects_nothing(api: Client, lessons: dict[str, str]) -> None:
    body = post(api, "/api/v1/inject", {"prompt": "banana bread with walnuts recipe"}).json()
    assert body["rendered"] == "" and body["tokens"] == 0


# --- feedback -----------------------------------------------------------------------------


def test_feedback_one_signal(api: Client, lessons: dict[str, str]) -> None:
    response = post(api, "/api/v1/feedback", {"engram_id": lessons["enum"], "signal": "positive"})
    assert response.status_code == HTTPStatus.OK
    result = response.json()["results"][0]
    assert result["status"] == 200
    assert result["engram"]["counters"]["feedback_positive"] == 1
    assert result["engram"]["rs"] == pytest.approx(0.75)
    missing = post(api, "/api/v1/feedback", {"engram_id": "ENG-1999-0101-001", "signal": "neutral"})
    assert missing.status_code == HTTPStatus.NOT_FOUND
    both = {"engram_id": lessons["enum"], "signal": "neutral", "signals": []}
    assert post(api, "/api/v1/feedback", both).status_code == 422
    assert post(api, "/api/v1/feedback", {"signal": "neutral"}).status_code == 422


def test_feedback_several_signals_each_answered(api: Client, lessons: dict[str, str]) -> None:
    response = post(
        api,
        "/api/v1/feedback",
        {
            "signals": [
                {"engram_id": lessons["enum"], "signal": "negative"},
                {"engram_id": "ENG-1999-0101-001", "signal": "positive"},
                {"engram_id": lessons["gh"], "signal": "followed", "session_id": "nope"},
            ]
        },
    )
    assert response.status_code == HTTPStatus.OK
    statuses = [(r["engram_id"], r["status"]) for r in response.json()["results"]]
    assert statuses == [(lessons["enum"], 200), ("ENG-1999-0101-001", 404), (lessons["gh"], 404)]
    assert Engram.objects.get(engram_id=lessons["enum"]).feedback_negative == 1


def test_explicit_feedback_overrides_automatic_attribution(
    api: Client, lessons: dict[str, str], django_capture_on_commit_callbacks: Any
) -> None:
    start = post(api, "/api/v1/sessions", {"task": "fix the enum migration in postgres"})
    session_id = start.json()["session_id"]
    assert lessons["enum"] in start.json()["injection"]["rendered"]
    signal = {"engram_id": lessons["enum"], "signal": "contradicted", "session_id": session_id}
    assert post(api, "/api/v1/feedback", signal).status_code == 200
    with django_capture_on_commit_callbacks() as callbacks:
        ended = post(api, f"/api/v1/sessions/{session_id}/end", {"summary": "done"})
    assert ended.json() == {"session_id": session_id, "ended": True, "learned": []}
    assert len(callbacks) == 1  # attribution is queued after commit
    outcomes_attribute(session_pk=AgentSession.objects.get(session_id=session_id).pk)
    outcome = Outcome.objects.get(engram__engram_id=lessons["enum"])
    assert (outcome.result, outcome.source) == ("contradicted", "agent")


# --- sessions -----------------------------------------------------------------------------


def test_a_session_starts_resumes_and_ends_once(api: Client, lessons: dict[str, str]) -> None:
    response = post(api, "/api/v1/sessions", {"task": "", "scope": "project:api", "agent": "aider"})
    assert response.status_code == HTTPStatus.CREATED
    body = response.json()
    assert body["injection"] is None
    assert (body["scope"], body["agent"]) == ("project:api", "aider")
    again = post(api, "/api/v1/sessions", {"session_id": body["session_id"], "task": "x"})
    assert again.json()["session_id"] == body["session_id"]
    assert AgentSession.objects.count() == 1

    url = f"/api/v1/sessions/{body['session_id']}/end"
    ended = post(api, url, {"engram_suggestions": ["Keep API handlers thin."]})
    assert ended.json()["ended"] is True
    learned = ended.json()["learned"]
    assert Engram.objects.get(engram_id=learned[0]["id"]).scope == "project:api"
    assert post(api, url, {}).json()["ended"] is False
    assert post(api, "/api/v1/sessions/nope/end", {}).status_code == 404


def test_a_session_in_a_forbidden_scope_is_403(owner: Any) -> None:
    _, raw = ApiToken.issue(owner=owner, name="narrow", scopes=["project:api"])
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    assert post(client, "/api/v1/sessions", {"task": "x"}).json()["code"] == "scope_forbidden"
    assert post(client, "/api/v1/sessions", {"scope": "project:api"}).status_code == 201


def test_a_secret_in_a_suggested_lesson_leaves_the_session_open(api: Client) -> None:
    session_id = post(api, "/api/v1/sessions", {}).json()["session_id"]
    url = f"/api/v1/sessions/{session_id}/end"
    response = post(api, url, {"engram_suggestions": [f"use {AWS_KEY}"]})
    assert response.json()["code"] == "secret_detected"
    assert AgentSession.objects.get().ended_at is None


# --- episodes and observations ------------------------------------------------------------


def test_episodes_are_captured_and_listed_with_filters_and_cursor(api: Client) -> None:
    session_id = post(api, "/api/v1/sessions", {}).json()["session_id"]
    for i, (agent, channel) in enumerate([("claude", "cli"), ("claude", "web"), ("aider", "cli")]):
        response = post(
            api,
            "/api/v1/episodes",
            {
                "summary": f"Event {i} happened",
                "agent": agent,
                "channel": channel,
                "session_id": session_id,
                "timestamp": f"2026-03-0{i + 1}T10:00:00Z",
            },
        )
        assert response.status_code == HTTPStatus.CREATED
        assert response.json()["id"].startswith("EP-")
    assert response.json()["session_id"] == session_id
    listed = api.get("/api/v1/episodes?agent=claude").json()["items"]
    assert [e["summary"] for e in listed] == ["Event 1 happened", "Event 0 happened"]
    ranged = api.get("/api/v1/episodes?since=2026-03-02T00:00:00Z&until=2026-03-02T23:00:00Z")
    assert [e["summary"] for e in ranged.json()["items"]] == ["Event 1 happened"]
    first = api.get("/api/v1/episodes?limit=2").json()
    rest = api.get(f"/api/v1/episodes?limit=2&cursor={first['next_cursor']}").json()
    assert [e["summary"] for e in first["items"] + rest["items"]] == [
        "Event 2 happened",
        "Event 1 happened",
        "Event 0 happened",
    ]
    assert rest["next_cursor"] is None
    assert api.get("/api/v1/episodes?q=event+2").json()["items"][0]["summary"] == "Event 2 happened"
    bad = api.get("/api/v1/episodes?since=2026-03-02T00:00:00Z&until=2026-03-01T00:00:00Z")
    assert bad.status_code == HTTPStatus.UNPROCESSABLE_ENTITY


def test_an_episode_with_a_secret_is_refused(api: Client) -> None:
    response = post(api, "/api/v1/episodes", {"summary": f"rotated {AWS_KEY}"})
    assert response.json()["code"] == "secret_detected"
    assert not Episode.objects.exists()


def test_observations_are_redacted_before_storage(api: Client) -> None:
    session_id = post(api, "/api/v1/sessions", {}).json()["session_id"]
    one = post(
        api,
        "/api/v1/observations",
        {"tool": "Bash", "input": {"command": f"export AWS_KEY={AWS_KEY}"}, "output": "ok"},
    )
    assert one.status_code == HTTPStatus.CREATED
    assert one.json()["observations"][0]["redacted"] == ["aws_access_key"]
    many = post(
        api,
        "/api/v1/observations",
        {
            "observations": [
                {"tool": "Read", "input": {"file_path": "a.py"}, "session_id": session_id},
                {"tool": "Bash", "input": "make", "output": "boom", "success": False},
            ]
        },
    )
    assert many.json()["stored"] == 2
    stored = Observation.objects.order_by("pk")
    assert AWS_KEY not in stored[0].tool_input
    assert stored[1].session.session_id == session_id
    assert stored[2].success is False
    bad = post(
        api,
        "/api/v1/observations",
        {"observations": [{"tool": "Read"}, {"tool": "Bash", "session_id": "nope"}]},
    )
    assert bad.status_code == HTTPStatus.NOT_FOUND
    assert Observation.objects.count() == 3  # all or nothing


# --- status, import, export ---------------------------------------------------------------


def test_status_counts_the_store(api: Client, lessons: dict[str, str]) -> None:
    body = api.get("/api/v1/status").json()
    assert body["engrams"] == 3
    assert body["by_status"]["active"] == 3
    assert body["token"] == {"name": "test", "scopes": ["*"]}


PLUR = """engrams:
- id: ENG-2025-0101-001
  statement: Run the linter before pushing.
  type: procedural
  scope: global
  status: active
  tags: [lint]
- id: ENG-2025-0101-002
  statement: Keep functions short.
  scope: project:api
  status: active
"""


def test_import_then_export_round_trips(api: Client) -> None:
    dry = api.post("/api/v1/import?format=plur-yaml&dry_run=true", PLUR, content_type="text/plain")
    assert dry.status_code == HTTPStatus.OK
    assert (dry.json()["created"], dry.json()["dry_run"]) == (2, True)
    assert not Engram.objects.exists()
    done = api.post("/api/v1/import", PLUR, content_type="application/yaml")
    assert done.json()["format"] == "plur-yaml"
    assert done.json()["ids"] == ["ENG-2025-0101-001", "ENG-2025-0101-002"]
    again = api.post("/api/v1/import?format=plur-yaml", PLUR, content_type="text/plain")
    assert again.json()["skipped_existing"] == 2

    exported = api.get("/api/v1/export?format=plur-yaml")
    assert exported.status_code == HTTPStatus.OK
    assert exported["Content-Type"].startswith("application/yaml")
    text = exported.content.decode()
    assert "Run the linter before pushing." in text and "ENG-2025-0101-002" in text


def test_import_rejects_bad_files_and_scope_limited_tokens(api: Client, owner: Any) -> None:
    bad = api.post("/api/v1/import?format=plur-yaml", "engrams: [1, 2", content_type="text/plain")
    assert bad.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert bad.json()["code"] == "import_rejected"
    control = api.post("/api/v1/import", "\x1bengrams: []", content_type="text/plain")
    assert control.json()["code"] == "import_rejected"  # a YAML reader error, not a 500
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    bomb = "\n".join([*lines, "engrams:", "- statement: hi", "  tags: *a8", ""])
    refused = api.post("/api/v1/import", bomb, content_type="text/plain")
    assert refused.json()["code"] == "import_rejected"  # and at once, not after the expansion
    too_long = "engrams:\n- id: ENG-" + "9" * 60 + "\n  statement: Long id.\n"
    assert api.post("/api/v1/import", too_long, content_type="text/plain").status_code == 422
    empty = api.post("/api/v1/import", "", content_type="text/plain")
    assert empty.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    secret = PLUR.replace("Keep functions short.", f"Use key {AWS_KEY}")
    assert api.post("/api/v1/import", secret, content_type="text/plain").status_code == 422
    assert api.get("/api/v1/export?format=csv").status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    _, raw = ApiToken.issue(owner=owner, name="narrow", scopes=["global"])
    narrow = Client(headers={"Authorization": f"Bearer {raw}"})
    assert narrow.get("/api/v1/export").json()["code"] == "scope_forbidden"
    assert narrow.post("/api/v1/import", PLUR, content_type="text/plain").status_code == 403
    assert not Engram.objects.exists()
