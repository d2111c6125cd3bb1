"""The OpenAPI document is complete, and a property-based run over it finds no 5xx."""

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

from memory.api import ratelimit
from memory.api.endpoints import router as memory_router
from memory.models import ApiToken
from memory.search import legs as search
from memory.services.engrams import engram_learn

MAX_EXAMPLES = int(os.environ.get("ENGRAM_FUZZ_EXAMPLES", "8"))
# The exchange app owns and fuzzes its own routes.
MEMORY_PATHS = r"^/api/v1/(?!exchange/)"

PHASES = os.environ.get("ENGRAM_FUZZ_PHASES", "fuzzing").split(",")
config = schemathesis.config.SchemathesisConfig.from_dict(
    {
        "phases": {
            name: {"enabled": name in PHASES}
            for name in ("examples", "coverage", "fuzzing", "stateful")
        }
    }
)
schema = schemathesis.openapi.from_wsgi(
    "/api/openapi.json", get_wsgi_application(), config=config
).include(path_regex=MEMORY_PATHS)


def _document(client: Client) -> dict[str, Any]:
    response = client.get("/api/openapi.json")
    assert response.status_code == HTTPStatus.OK
    document: dict[str, Any] = response.json()
    return document


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        for value in node.values():
            found |= _refs(value)
        return found
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node)) if node else set()
    return set()


def test_every_route_is_documented_with_its_schemas(client: Client) -> None:
    document = _document(client)
    paths = document["paths"]
    for path, view in memory_router.path_operations.items():
        documented = paths["/api/v1" + path]
        for operation in view.operations:
            for method in operation.methods:
                spec = documented[method.lower()]
                assert spec.get("summary"), f"{method} {path} has no summary"
                assert spec.get("security"), f"{method} {path} is not marked as authenticated"
                statuses = {int(code) for code in spec["responses"]}
                assert {401, 413, 429} <= statuses, f"{method} {path} misses error responses"
                success = [s for s in statuses if s < 300]
                assert len(success) == 1, f"{method} {path} documents no success response"
                body = (
                    spec["responses"][str(success[0])]
                    if str(success[0]) in spec["responses"]
                    else spec["responses"][success[0]]
                )
                assert body.get("content"), f"{method} {path} has no response schema"
    schemas = document["components"]["schemas"]
    for ref in _refs(document):
        assert ref.startswith("#/components/schemas/")
        assert ref.rsplit("/", 1)[1] in schemas, f"dangling {ref}"
    assert {"EngramIn", "EngramOut", "EngramPatch", "ErrorOut", "HookIn", "HookOut"} <= set(schemas)
    assert document["components"]["securitySchemes"]["TokenAuth"]["scheme"] == "bearer"


def test_the_docs_page_is_served(client: Client) -> None:
    response = client.get("/api/docs")
    assert response.status_code == HTTPStatus.OK
    assert b"openapi.json" in response.content


@pytest.fixture
def _keep_test_connection() -> Any:
    # The WSGI transport is not Django's test client, which is what normally stops the end of
    # a request from closing the test transaction's connection.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def fuzz_token(db: Any, owner: Any, django_settings: Any, _keep_test_connection: Any) -> str:
    django_settings.ENGRAM_RATE_LIMIT_PER_MINUTE = 1_000_000
    ratelimit.reset_local()
    search.dense_index_clear()
    engram_learn(owner=owner, statement="Fuzzing target: keep migrations reversible.")
    _, raw = ApiToken.issue(owner=owner, name="fuzz")
    return raw


@pytest.fixture
def django_settings(settings: Any) -> Any:
    return settings


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
    # A 503 an operation documents (POST /intelligence without an LLM key) is its answer.
    documented = str(response.status_code) in case.operation.definition.raw.get("responses", {})
    if response.status_code == 503 and documented:
        assert response.json()["code"] == "llm_unavailable"
        return
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:500]}"
    )
