"""REST API of the exchange: /api/v1/exchange/."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from exchange.models import Packet
from exchange.packet import MAX_PACKET_BYTES, parse_packet
from memory.models import ApiToken, Engram
from tests.exchange.helpers import (
    LESSONS,
    abstract_item,
    counts,
    make_abstract,
    signed,
    trust,
    wire,
)
from tests.memory.helpers import make_engram

pytestmark = pytest.mark.django_db

BASE = "/api/v1/exchange"


def post_raw(client: Client, path: str, body: bytes) -> Any:
    return client.post(BASE + path, data=body, content_type="application/json")


def test_identity_shows_key_id_and_fingerprint(api: Client) -> None:
    body = api.get(f"{BASE}/identity").json()
    assert len(body["key_id"]) == 16
    assert len(body["fingerprint"].split()) == 8
    assert body["name"] == "alice"


def test_the_exchange_needs_a_token(db: Any) -> None:
    assert Client().get(f"{BASE}/identity").status_code == HTTPStatus.UNAUTHORIZED


def test_a_token_without_the_global_scope_is_forbidden(owner: Any) -> None:
    _, raw = ApiToken.issue(owner=owner, name="narrow", scopes=["project:api"])
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    response = post_raw(client, "/packets", wire(signed([abstract_item(LESSONS[0])])))
    assert response.status_code == HTTPStatus.FORBIDDEN
    assert response.json()["code"] == "scope_forbidden"
    assert not Packet.objects.exists()


def test_abstracts_are_written_and_listed_with_fitness(api: Client, owner: Any) -> None:
    a = make_engram(owner, statement="Use transactions for migrations in project A")
    b = make_engram(owner, statement="Wrap project B schema changes in a transaction")
    response = api.post(
        f"{BASE}/abstracts",
        {
            "sources": [a.engram_id, b.engram_id],
            "statement": "Apply schema changes atomically.",
            "structure": "Change schema -> one transaction.",
            "applies_when": "Migrating a database.",
            "visibility": "public",
        },
        content_type="application/json",
    )
    assert response.status_code == HTTPStatus.CREATED, response.json()
    created = response.json()
    assert created["id"].startswith("ABS-")
    assert created["derived_from"] == [a.engram_id, b.engram_id]
    assert created["eligible"] is True
    assert 0 < created["exchange_metadata"]["fitness_score"] <= 1
    listed = api.get(f"{BASE}/abstracts").json()
    assert [row["id"] for row in listed] == [created["id"]]


def test_writing_an_abstract_checks_its_input(api: Client, owner: Any) -> None:
    a = make_engram(owner, statement="Some concrete lesson")
    cases = [
        ({"sources": ["ENG-0000-0000-999"]}, "sources"),
        ({"sources": [a.engram_id], "statement": ""}, "statement"),
    ]
    for overrides, field in cases:
        body = {
            "sources": [a.engram_id],
            "statement": "General form",
            "structure": "Shape",
            "applies_when": "Always",
            **overrides,
        }
        response = api.post(f"{BASE}/abstracts", body, content_type="application/json")
        assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
        assert response.json()["details"]["field"] == field
    assert not Engram.objects.filter(kind="ABS").exists()


def test_export_returns_a_signed_packet(api: Client, owner: Any) -> None:
    abstract = make_abstract(owner)
    response = api.post(f"{BASE}/export", {}, content_type="application/json")
    assert response.status_code == HTTPStatus.OK
    assert response["Content-Type"] == "application/json"
    packet = parse_packet(response.content)
    assert [item["id"] for item in packet["abstracts"]] == [abstract.engram_id]  # type: ignore[attr-defined]
    assert response["Content-Disposition"] == f'attachment; filename="{packet["id"]}.json"'


def test_export_of_nothing_is_a_422(api: Client) -> None:
    response = api.post(f"{BASE}/export", {"ids": ["ABS-nope"]}, content_type="application/json")
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json()["code"] == "validation_error"


def test_import_statuses(api: Client, owner: Any) -> None:
    data = wire(signed([abstract_item(LESSONS[0])]))
    quarantined = post_raw(api, "/packets", data)
    assert quarantined.status_code == HTTPStatus.ACCEPTED
    assert quarantined.json()["status"] == "quarantined"
    assert quarantined.json()["reasons"][0]["gate"] == "trusted_key"
    replay = post_raw(api, "/packets", data)
    assert replay.status_code == HTTPStatus.CONFLICT
    assert replay.json()["reasons"][0]["gate"] == "replay"
    assert replay.json()["code"] == "packet_rejected"
    trust(owner)
    accepted = post_raw(api, "/packets", wire(signed([abstract_item(LESSONS[1])])))
    assert accepted.status_code == HTTPStatus.OK
    body = accepted.json()
    assert body["status"] == "accepted"
    assert body["items"][0]["result"] == "accepted"
    assert body["items"][0]["engram"].startswith("ABS-")
    # Trusting the key ran the quarantined packet through the remaining gates too.
    listed = api.get(f"{BASE}/packets").json()
    assert [row["status"] for row in listed] == ["accepted", "accepted"]
    peers = api.get(f"{BASE}/peers").json()
    assert [peer["state"] for peer in peers] == ["trusted"]


def test_oversize_and_malformed_imports_are_refused_with_nothing_written(api: Client) -> None:
    before = counts()
    big = post_raw(api, "/packets", b"{" + b" " * MAX_PACKET_BYTES + b"}")
    assert big.status_code == HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    assert big.json()["reasons"][0]["gate"] == "size"
    bad = post_raw(api, "/packets", b"{not json")
    assert bad.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert bad.json()["reasons"][0]["gate"] == "schema"
    assert counts() == before


def test_peer_decisions_are_not_offered_to_tokens(api: Client) -> None:
    post_raw(api, "/packets", wire(signed([abstract_item(LESSONS[2])])))
    for path in ("/peers/x/trust", "/peers/trust"):
        assert api.post(BASE + path).status_code in {
            HTTPStatus.NOT_FOUND,
            HTTPStatus.METHOD_NOT_ALLOWED,
        }


def test_an_abstract_a_live_engram_already_states_is_a_duplicate_not_a_500(
    api: Client, owner: Any
) -> None:
    local = make_engram(owner, statement=LESSONS[4], embedding=None)
    trust(owner)
    data = wire(signed([abstract_item(LESSONS[4]), abstract_item(LESSONS[5])]))
    response = post_raw(api, "/packets", data)
    assert response.status_code == HTTPStatus.OK
    duplicate, accepted = response.json()["items"]
    assert (duplicate["result"], duplicate["engram"]) == ("duplicate", local.engram_id)
    assert accepted["result"] == "accepted"
