"""The exchange routes are documented, and a property-based run over them finds no 5xx."""

from __future__ import annotations

import os
from http import HTTPStatus
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, settings

from exchange.api import router as exchange_router
from memory.api import ratelimit
from memory.models import ApiToken
from tests.memory.helpers import make_engram

MAX_EXAMPLES = int(os.environ.get("ENGRAM_FUZZ_EXAMPLES", "8"))  # bench/fuzz.py raises it
EXCHANGE_PATHS = r"^/api/v1/exchange/"

schema = schemathesis.openapi.from_wsgi("/api/openapi.json", get_wsgi_application()).include(
    path_regex=EXCHANGE_PATHS
)


def test_every_exchange_route_is_documented(client: Client) -> None:
    response = client.get("/api/openapi.json")
    assert response.status_code == HTTPStatus.OK
    paths = response.json()["paths"]
    for path, view in exchange_router.path_operations.items():
        documented = paths["/api/v1/exchange" + path]
        for operation in view.operations:
            for method in operation.methods:
                spec = documented[method.lower()]
                assert spec.get("summary"), f"{method} {path} has no summary"
                assert spec.get("security"), f"{method} {path} is not marked as authenticated"
                statuses = {int(code) for code in spec["responses"]}
                assert {401, 403, 413, 429} <= statuses, f"{method} {path} misses errors"
                success = [s for s in statuses if s < 300]
                assert success, f"{method} {path} documents no success response"
                for code in success:
                    body = spec["responses"].get(str(code)) or spec["responses"][code]
                    assert body.get("content"), f"{method} {path} {code} has no schema"


@pytest.fixture
def _keep_test_connection() -> Any:
    # The WSGI transport is not Django's test client, which is what normally stops the end of
    # a request from closing the test transaction's connection.
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def fuzz_token(db: Any, owner: Any, settings: Any, _keep_test_connection: Any) -> str:
    settings.ENGRAM_RATE_LIMIT_PER_MINUTE = 1_000_000
    ratelimit.reset_local()
    make_engram(owner, statement="Fuzzing target: keep migrations reversible.")
    _, raw = ApiToken.issue(owner=owner, name="fuzz")
    return raw


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    database=None,
)
@pytest.mark.django_db
def test_no_input_makes_a_server_error(case: Any, fuzz_token: str) -> None:
    response = case.call(headers={"Authorization": f"Bearer {fuzz_token}"})
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:500]}"
    )
