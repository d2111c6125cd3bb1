from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from memory.models import ApiToken

pytestmark = pytest.mark.django_db


def test_the_dashboard_needs_a_login(db: Any) -> None:
    response = Client().get("/")
    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"].startswith("/login/")


def test_login_page_logs_in(owner: Any) -> None:
    client = Client()
    assert client.get("/login/").status_code == HTTPStatus.OK
    response = client.post("/login/", {"username": "alice", "password": "alice-pass-123"})
    assert response.status_code == HTTPStatus.FOUND
    assert client.get("/").status_code == HTTPStatus.OK


def test_home_says_what_to_do_next(logged_in: Client) -> None:
    body = logged_in.get("/").content.decode()
    assert "Connect an agent" in body
    assert "Create a token" in body
    assert "review" in body.lower()


def test_token_page_full_and_fragment(logged_in: Client, owner: Any) -> None:
    ApiToken.issue(owner=owner, name="laptop")
    full = logged_in.get("/tokens/")
    assert full.status_code == HTTPStatus.OK
    assert "<html" in full.content.decode() and "laptop" in full.content.decode()
    fragment = logged_in.get("/tokens/", headers={"HX-Request": "true"})
    assert "<html" not in fragment.content.decode()
    assert 'id="token-rows"' in fragment.content.decode() and "laptop" in fragment.content.decode()


def test_creating_a_token_shows_it_once(logged_in: Client, owner: Any) -> None:
    response = logged_in.post("/tokens/new/", {"name": "agent", "scopes": "*"})
    body = response.content.decode()
    token = ApiToken.objects.get(name="agent")
    shown = body.split('id="new-token">', 1)[1].split("<", 1)[0]
    assert ApiToken.authenticate(shown) == token
    assert shown not in logged_in.get("/tokens/").content.decode()


def test_a_bad_token_form_shows_the_error_by_the_field_and_creates_nothing(
    logged_in: Client,
) -> None:
    response = logged_in.post("/tokens/new/", {"name": "x", "scopes": "nonsense scope"})
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert 'id="scopes-error"' in response.content.decode()
    assert not ApiToken.objects.exists()


def test_revoking_from_the_dashboard(logged_in: Client, owner: Any) -> None:
    token, raw = ApiToken.issue(owner=owner, name="old")
    response = logged_in.post(f"/tokens/{token.pk}/revoke/")
    assert response.status_code == HTTPStatus.FOUND
    assert ApiToken.authenticate(raw) is None


def test_one_owner_cannot_revoke_another_owners_token(logged_in: Client, other_owner: Any) -> None:
    token, raw = ApiToken.issue(owner=other_owner, name="bobs")
    assert logged_in.post(f"/tokens/{token.pk}/revoke/").status_code == HTTPStatus.NOT_FOUND
    assert ApiToken.authenticate(raw) is not None


def test_the_tokens_page_shows_rate_limit_refusals(logged_in: Client, owner: Any) -> None:
    from django.utils import timezone

    token, _ = ApiToken.issue(owner=owner, name="busy-laptop")
    ApiToken.objects.filter(pk=token.pk).update(refused=7, last_refused_at=timezone.now())
    page = logged_in.get("/tokens/").content.decode()
    assert "Refused" in page and '<span class="bad">7</span>' in page
