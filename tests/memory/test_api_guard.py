"""The API guard: 401, 413 (body limit), 429 (rate limit in Redis or in-process), JSON errors."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.test import Client

from memory.api import ratelimit
from memory.models import ApiToken

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast(settings: Any) -> Any:
    ratelimit.reset_local()
    yield
    ratelimit.reset_local()


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert body["code"] == code
    assert isinstance(body["message"], str) and body["message"]
    assert set(body) <= {"code", "message", "details"}
    return body


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer eng_not-a-real-token-at-all"}, {"Authorization": "Basic x"}],
)
def test_without_a_valid_token_it_is_401(db: Any, headers: dict[str, str]) -> None:
    response = Client(headers=headers).get("/api/v1/status")
    assert_error(response, HTTPStatus.UNAUTHORIZED, "unauthorized")


def test_a_revoked_token_is_401(owner: Any) -> None:
    token, raw = ApiToken.issue(owner=owner, name="old")
    token.revoke()
    response = Client(headers={"Authorization": f"Bearer {raw}"}).get("/api/v1/status")
    assert_error(response, HTTPStatus.UNAUTHORIZED, "unauthorized")


def test_a_declared_body_over_the_limit_is_413_before_auth(db: Any, settings: Any) -> None:
    settings.ENGRAM_MAX_BODY_BYTES = 1024
    response = Client().post(
        "/api/v1/engrams", "x" * 2000, content_type="application/json"
    )  # no token: the size is refused first
    body = assert_error(response, HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "payload_too_large")
    assert body["details"] == {"limit_bytes": 1024}


def test_the_limit_is_inclusive(api: Client, settings: Any) -> None:
    settings.ENGRAM_MAX_BODY_BYTES = 1024
    head, tail = b'{"statement": "', b'"}'
    at_limit = head + b"y" * (1024 - len(head) - len(tail)) + tail
    response = api.post("/api/v1/engrams", at_limit, content_type="application/json")
    assert response.status_code == HTTPStatus.CREATED
    over = at_limit[:-2] + b'z"}'
    response = api.post("/api/v1/engrams", over, content_type="application/json")
    assert_error(response, HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "payload_too_large")


def test_a_bad_content_length_is_400(db: Any) -> None:
    response = Client().generic("POST", "/api/v1/engrams", b"{}", CONTENT_LENGTH="many")
    assert_error(response, HTTPStatus.BAD_REQUEST, "bad_request")


def _hammer(client: Client, times: int) -> list[Any]:
    return [client.get("/api/v1/whoami") for _ in range(times)]


def test_the_rate_limit_is_per_token_and_kept_in_redis(
    api: Client, other_api: Client, settings: Any
) -> None:
    assert django_settings.REDIS_URL, "this test runs with REDIS_URL set"
    settings.ENGRAM_RATE_LIMIT_PER_MINUTE = 3
    responses = _hammer(api, 4)
    assert [r.status_code for r in responses] == [200, 200, 200, 429]
    body = assert_error(responses[-1], HTTPStatus.TOO_MANY_REQUESTS, "rate_limited")
    assert body["details"]["limit_per_minute"] == 3
    assert 1 <= int(responses[-1]["Retry-After"]) <= 60
    assert other_api.get("/api/v1/whoami").status_code == HTTPStatus.OK  # its own window
    keys = redis.Redis.from_url(settings.REDIS_URL).keys(ratelimit.KEY_PREFIX + "*")
    assert keys, "the counters live in Redis"


def test_without_redis_the_rate_limit_is_counted_in_process(api: Client, settings: Any) -> None:
    settings.REDIS_URL = ""
    settings.ENGRAM_RATE_LIMIT_PER_MINUTE = 2
    assert [r.status_code for r in _hammer(api, 3)] == [200, 200, 429]


def test_an_unreachable_redis_falls_back_to_in_process_counting(api: Client, settings: Any) -> None:
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    settings.ENGRAM_RATE_LIMIT_PER_MINUTE = 2
    assert [r.status_code for r in _hammer(api, 3)] == [200, 200, 429]


def test_unknown_paths_and_methods_answer_json(api: Client) -> None:
    assert_error(api.get("/api/v1/no-such-thing"), HTTPStatus.NOT_FOUND, "not_found")
    body = assert_error(
        api.put("/api/v1/engrams"), HTTPStatus.METHOD_NOT_ALLOWED, "method_not_allowed"
    )
    assert set(body["details"]["allow"]) == {"GET", "POST"}


def test_malformed_json_is_a_json_400(api: Client) -> None:
    response = api.post("/api/v1/engrams", "{nope", content_type="application/json")
    assert_error(response, HTTPStatus.BAD_REQUEST, "bad_request")


def test_the_dashboard_is_not_guarded(logged_in: Client, settings: Any) -> None:
    settings.ENGRAM_RATE_LIMIT_PER_MINUTE = 1
    assert [logged_in.get("/").status_code for _ in range(3)] == [200, 200, 200]


def test_refusals_are_counted_on_the_token_and_logged(
    api: Client, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.REDIS_URL = ""
    settings.ENGRAM_RATE_LIMIT_PER_MINUTE = 1
    with caplog.at_level("WARNING", logger="memory.api.middleware"):
        assert [r.status_code for r in _hammer(api, 3)] == [200, 429, 429]
    from memory.models import ApiToken

    token = ApiToken.objects.get(name="test")
    assert token.refused == 2 and token.last_refused_at is not None
    assert "Rate limit: refused GET /api/v1/whoami" in caplog.text


def test_the_default_limit_carries_fifty_busy_agents() -> None:
    # 50 busy agents on one token (bench/load.py: ~200 hook calls a second), with headroom.
    assert django_settings.ENGRAM_RATE_LIMIT_PER_MINUTE >= 50 * 4 * 60 * 1.5
