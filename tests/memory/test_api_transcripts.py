"""POST/GET /api/v1/transcripts: bad input is refused with a clear error and changes nothing."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from memory.models import AgentSession, ApiToken, LearningSignal

URL = "/api/v1/transcripts"
LINE = json.dumps({"type": "user", "message": {"role": "user", "content": "Always use uv."}})


def post(client: Client, **body: Any) -> Any:
    data = {"session_id": "s1", "cwd": "/home/dev/shop", "offset": 0, "lines": [LINE], **body}
    return client.post(URL, data, content_type="application/json")


def test_lines_are_captured_and_the_offset_reported(api: Client) -> None:
    answer = post(api).json()
    assert answer["offset"] == len(LINE) + 1 and answer["scope"] == "project:shop"
    assert answer["created"] is True and answer["signal"] is not None
    assert api.get(URL, {"session_id": "s1"}).json()["offset"] == len(LINE) + 1
    again = post(api).json()  # the same lines again: nothing stored twice
    assert again["signal"] is None and LearningSignal.objects.count() == 1


def test_lines_that_do_not_start_at_the_captured_offset_store_nothing(api: Client) -> None:
    post(api)
    answer = post(api, offset=5, lines=["{}"]).json()
    assert answer["offset"] == len(LINE) + 1 and answer["signal"] is None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"session_id": "   "}, "session_id"),
        ({"offset": -1}, "offset"),
        ({"offset": 2**63}, "offset"),
        ({"lines": "not a list"}, "lines"),
        ({"lines": [1, 2]}, "lines"),
        ({"started_at": "2026-03-02T10:00:00Z", "ended_at": "2026-03-01T10:00:00Z"}, "ended_at"),
        ({"scope": "not a scope!"}, "scope"),
        ({"unknown": 1}, "unknown"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(api: Client, body: Any, field: str) -> None:
    response = post(api, **body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY, response.content
    assert field in response.content.decode()
    assert AgentSession.objects.count() == 0 and LearningSignal.objects.count() == 0


def test_it_needs_a_token_and_respects_its_scopes(owner: Any) -> None:
    assert post(Client()).status_code == HTTPStatus.UNAUTHORIZED
    _, raw = ApiToken.issue(owner=owner, name="api-only", scopes=["project:api"])
    limited = Client(headers={"Authorization": f"Bearer {raw}"})
    assert post(limited, scope="project:shop").status_code == HTTPStatus.FORBIDDEN
    assert AgentSession.objects.count() == 0


def test_an_unknown_session_is_404_and_another_owners_too(api: Client, other_api: Client) -> None:
    assert api.get(URL, {"session_id": "nope"}).status_code == HTTPStatus.NOT_FOUND
    post(other_api)
    assert api.get(URL, {"session_id": "s1"}).status_code == HTTPStatus.NOT_FOUND
