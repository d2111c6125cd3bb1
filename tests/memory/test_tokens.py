from __future__ import annotations

import hmac
from http import HTTPStatus
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from memory.models import ApiToken

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


def test_it_stores_only_a_hash_of_the_token(owner: Any) -> None:
    token, raw = ApiToken.issue(owner=owner, name="laptop")
    stored = ApiToken.objects.values().get(pk=token.pk)
    assert raw.startswith("eng_")
    assert all(raw not in str(value) for value in stored.values())
    assert stored["digest"] != raw and len(stored["digest"]) == 64


def test_it_authenticates_a_live_token(owner: Any, api: Client) -> None:
    response = api.get("/api/v1/whoami")
    assert response.status_code == HTTPStatus.OK
    assert response.json()["owner"] == "alice"


def test_it_rejects_a_revoked_token(owner: Any) -> None:
    token, raw = ApiToken.issue(owner=owner, name="old")
    token.revoke()
    response = Client(headers={"Authorization": f"Bearer {raw}"}).get("/api/v1/whoami")
    assert response.status_code == HTTPStatus.UNAUTHORIZED
    assert response.json()["code"] == "unauthorized"


@pytest.mark.parametrize(
    "header", ["", "Bearer", "Bearer nope", "Basic abc", "Bearer eng_" + "x" * 43]
)
def test_it_rejects_missing_or_wrong_tokens(db: Any, header: str) -> None:
    client = Client(headers={"Authorization": header} if header else {})
    response = client.get("/api/v1/whoami")
    assert response.status_code == HTTPStatus.UNAUTHORIZED


def test_it_compares_digests_in_constant_time_even_for_unknown_tokens(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, raw = ApiToken.issue(owner=owner, name="t")
    calls: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    assert ApiToken.authenticate(raw[:-1] + ("A" if raw[-1] != "A" else "B")) is None
    assert ApiToken.authenticate("eng_unknownprefix" + "z" * 30) is None
    assert ApiToken.authenticate(raw) is not None
    # Every attempt, known prefix or not, goes through one constant-time comparison.
    assert len(calls) == 3


def test_a_token_of_one_owner_acts_only_as_that_owner(
    owner: Any, other_owner: Any, api: Client, other_api: Client
) -> None:
    assert api.get("/api/v1/whoami").json()["owner"] == "alice"
    assert other_api.get("/api/v1/whoami").json()["owner"] == "bob"


def test_the_command_creates_lists_and_revokes(owner: Any) -> None:
    owner.is_superuser = True
    owner.save()
    out, err = StringIO(), StringIO()
    call_command(
        "engram_token", "create", "--name", "ci", "--scopes", "project:api", stdout=out, stderr=err
    )
    raw = out.getvalue().strip()
    token = ApiToken.authenticate(raw)
    assert token is not None and token.scopes == ["project:api"]

    out = StringIO()
    call_command("engram_token", "list", stdout=out)
    assert "ci" in out.getvalue() and raw not in out.getvalue()

    out = StringIO()
    call_command("engram_token", "revoke", str(token.pk), stdout=out)
    assert "Revoked" in out.getvalue()
    assert ApiToken.authenticate(raw) is None


def test_the_command_refuses_a_bad_scope(owner: Any) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="Not a scope"):
        call_command("engram_token", "create", "--user", "alice", "--scopes", "bogus scope")
    assert not ApiToken.objects.exists()


def test_first_run_creates_the_owner_and_a_working_token_once(db: Any) -> None:
    out = StringIO()
    call_command("engram_bootstrap", stdout=out)
    text = out.getvalue()
    raw = next(line.split(":", 1)[1].strip() for line in text.splitlines() if "API token" in line)
    assert ApiToken.authenticate(raw) is not None
    assert "Password:" in text

    again = StringIO()
    call_command("engram_bootstrap", stdout=again)
    assert "Password" not in again.getvalue() and ApiToken.objects.count() == 1
