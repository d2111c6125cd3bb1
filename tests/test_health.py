from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client, override_settings

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


def test_healthz_reports_every_part_as_json(db: Any) -> None:
    response = Client().get("/healthz")
    body = response.json()
    assert response.status_code == HTTPStatus.OK, body
    assert body["status"] == "ok"
    assert set(body["checks"]) >= {"database", "broker", "embedder", "llm"}
    assert all(body["checks"][k]["ok"] for k in ("database", "broker", "embedder"))


def test_healthz_is_503_when_the_broker_is_unreachable(db: Any) -> None:
    with override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0"):
        response = Client().get("/healthz")
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["broker"]["ok"] is False
    assert body["checks"]["database"]["ok"] is True


def test_healthz_needs_no_login_and_only_answers_get(db: Any) -> None:
    assert Client().post("/healthz").status_code == HTTPStatus.METHOD_NOT_ALLOWED
