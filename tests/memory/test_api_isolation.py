"""Isolation: owner B's token cannot read, change or infer owner A's data through any route.

Another owner's ids answer exactly like ids that do not exist (404), never 403. The test walks
every operation of the memory router and fails if a new route is not covered here.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from memory.api.endpoints import router as memory_router
from memory.models import AgentSession, Engram, Episode, Injection, LifecycleEvent, Observation

pytestmark = pytest.mark.django_db

A_SESSION = "a-private-session"
A_STATEMENTS = [
    "Alice's deploy key rotation happens on Mondays.",
    "Alice's staging database is called hippo.",
    "Alice prefers tabs in the billing service.",
]
MISSING_ID = "ENG-1999-0101-999"


class Recorder:
    """Calls the API as one client and remembers which operations were exercised."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.seen: set[tuple[str, str]] = set()

    def __call__(self, method: str, template: str, body: Any = None, **params: str) -> Any:
        self.seen.add((method.upper(), template.split("?", 1)[0]))
        path = "/api/v1" + template.format(**params)
        if method == "GET":
            return self.client.get(path, body or {})
        if isinstance(body, str):
            return self.client.generic(method, path, body, content_type="text/plain")
        return self.client.generic(
            method, path, "" if body is None else _json(body), content_type="application/json"
        )


def _json(body: Any) -> str:
    import json

    return json.dumps(body)


def _snapshot() -> dict[str, Any]:
    engrams = list(
        Engram.objects.filter(owner__username="alice")
        .order_by("pk")
        .values_list(
            "engram_id", "status", "version", "statement", "retrieval_strength",
            "feedback_positive", "feedback_negative", "injections", "surfaced", "frequency",
            "derivation_count",
        )
    )  # fmt: skip
    session = AgentSession.objects.get(owner__username="alice", session_id=A_SESSION)
    return {
        "engrams": engrams,
        "session": (session.task, session.ended_at, session.summary),
        "injections": Injection.objects.filter(owner__username="alice").count(),
        "observations": Observation.objects.filter(owner__username="alice").count(),
        "episodes": Episode.objects.filter(owner__username="alice").count(),
        "events": LifecycleEvent.objects.filter(owner__username="alice").count(),
    }


@pytest.fixture
def alice(api: Client) -> dict[str, Any]:
    ids = []
    for statement in A_STATEMENTS:
        response = api.post(
            "/api/v1/engrams",
            {"statement": statement, "source": "user", "scope": "project:billing"},
            content_type="application/json",
        )
        ids.append(response.json()["engram"]["id"])
    api.post(
        "/api/v1/sessions",
        {"session_id": A_SESSION, "task": "rotate the deploy key", "scope": "project:billing"},
        content_type="application/json",
    )
    api.post(
        "/api/v1/episodes",
        {"summary": "Alice rotated the hippo deploy key.", "session_id": A_SESSION},
        content_type="application/json",
    )
    api.post(
        "/api/v1/observations",
        {"tool": "Bash", "input": "rotate-key hippo", "session_id": A_SESSION},
        content_type="application/json",
    )
    return {"ids": ids}


def _not_found_like_missing(
    call: Recorder, method: str, template: str, a_id: str, body: Any
) -> None:
    theirs = call(method, template, body, engram_id=a_id)
    missing = call(method, template, body, engram_id=MISSING_ID)
    assert theirs.status_code == missing.status_code == HTTPStatus.NOT_FOUND
    assert theirs.json()["code"] == missing.json()["code"] == "not_found"
    assert set(theirs.json()) == set(missing.json())


def test_owner_b_cannot_reach_owner_a_through_any_route(
    alice: dict[str, Any], other_api: Client
) -> None:
    before = _snapshot()
    a_id = alice["ids"][-1]
    call = Recorder(other_api)
    leaked = [a_id, A_SESSION, *A_STATEMENTS, "hippo"]

    def clean(response: Any, echoed: str = "") -> Any:
        text = response.content.decode()
        for secret in (s for s in leaked if s != echoed):
            assert secret not in text, f"{secret!r} leaked: {text[:300]}"
        return response

    # Engram ids: 404, and the same 404 a made-up id gets.
    _not_found_like_missing(call, "GET", "/engrams/{engram_id}", a_id, None)
    _not_found_like_missing(call, "PATCH", "/engrams/{engram_id}", a_id, {"statement": "mine"})
    _not_found_like_missing(call, "DELETE", "/engrams/{engram_id}", a_id, None)
    single = call("POST", "/feedback", {"engram_id": a_id, "signal": "negative"})
    assert single.status_code == HTTPStatus.NOT_FOUND
    several = call("POST", "/feedback", {"signals": [{"engram_id": a_id, "signal": "negative"}]})
    assert [r["status"] for r in several.json()["results"]] == [404]

    # Session ids: 404 wherever an existing session is required.
    assert call("POST", "/sessions/{session_id}/end", {}, session_id=A_SESSION).status_code == 404
    for template, body in [
        ("/recall", {"query": "deploy key", "session_id": A_SESSION}),
        ("/inject", {"prompt": "deploy key", "session_id": A_SESSION}),
        ("/episodes", {"summary": "mine", "session_id": A_SESSION}),
        ("/observations", {"tool": "Bash", "session_id": A_SESSION}),
        ("/feedback", {"engram_id": a_id, "signal": "positive", "session_id": A_SESSION}),
    ]:
        assert call("POST", template, body).status_code == HTTPStatus.NOT_FOUND, template

    # Reads see nothing of A's, even when asked for exactly A's words and scope.
    assert clean(call("GET", "/engrams")).json()["items"] == []
    assert call("GET", "/engrams", {"scope": "project:billing", "q": "hippo"}).json()["items"] == []
    assert call("GET", "/engrams", {"quadrant": "insufficient"}).json()["items"] == []
    clean(call("POST", "/recall", {"query": A_STATEMENTS[1], "include_episodes": True}))
    assert call("POST", "/recall", {"query": "hippo staging database"}).json()["results"] == []
    injected = clean(
        call("POST", "/inject", {"prompt": A_STATEMENTS[0], "scope": "project:billing"})
    )
    assert injected.json()["rendered"] == ""
    assert clean(call("GET", "/episodes", {"q": "hippo"})).json()["items"] == []
    status = clean(call("GET", "/status")).json()
    assert (status["engrams"], status["review_open"], status["sessions_today"]) == (0, 0, 0)
    assert "hippo" not in clean(call("GET", "/export")).content.decode()
    whoami = clean(call("GET", "/whoami")).json()
    assert whoami["owner"] == "bob"

    # Writes land in B's own store and reveal nothing about A's (no recurrence, no relations).
    mine = {"statement": "Bob rotates the deploy keys on Fridays.", "scope": "project:billing"}
    learned = clean(call("POST", "/engrams", mine))
    assert learned.status_code == HTTPStatus.CREATED
    assert (learned.json()["outcome"], learned.json()["related"]) == ("created", [])
    batch = clean(
        call("POST", "/engrams/batch", {"items": [{"statement": "Bob's staging db is otter."}]})
    )
    assert batch.json()["results"][0]["outcome"] == "created"
    assert batch.json()["results"][0]["related"] == []
    started = clean(
        call("POST", "/sessions", {"session_id": A_SESSION, "scope": "global"}), A_SESSION
    )
    assert started.status_code == HTTPStatus.CREATED  # B's own session with the same name
    assert "rotate the deploy key" not in started.content.decode()
    ended = clean(call("POST", "/sessions/{session_id}/end", {}, session_id=A_SESSION), A_SESSION)
    assert ended.json()["ended"] is True
    hooked = clean(
        call(
            "POST",
            "/hooks/claude-code",
            {
                "hook_event_name": "UserPromptSubmit",
                "session_id": A_SESSION,
                "cwd": "/home/alice/billing",
                "prompt": "when does the staging database deploy key rotation happen?",
            },
        )
    )
    assert hooked.status_code == HTTPStatus.OK
    assert call("POST", "/episodes", {"summary": "bob was here"}).status_code == 201
    assert call("POST", "/observations", {"tool": "Read"}).status_code == 201
    # Last, as it gives B an engram with A's id: an id A holds is not "skipped_existing" for B.
    plur = f"engrams:\n- id: {a_id}\n  statement: Bob prefers spaces.\n"
    imported = call("POST", "/import?format=plur-yaml", plur)
    assert (imported.json()["created"], imported.json()["skipped_existing"]) == (1, 0)

    assert _snapshot() == before, "owner A's data changed"
    routes = {
        (method, path)
        for path, view in memory_router.path_operations.items()
        for operation in view.operations
        for method in operation.methods
    }
    missed = routes - call.seen
    assert not missed, f"routes not covered by the isolation test: {sorted(missed)}"


def test_b_learning_the_same_words_does_not_bump_a(
    alice: dict[str, Any], other_api: Client
) -> None:
    response = other_api.post(
        "/api/v1/engrams",
        {"statement": A_STATEMENTS[0].upper(), "scope": "project:billing"},
        content_type="application/json",
    )
    assert response.json()["outcome"] == "created"
    a = Engram.objects.get(owner__username="alice", statement=A_STATEMENTS[0])
    assert a.derivation_count == 1
