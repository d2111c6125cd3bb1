"""REST API v1, engrams: learn, batch, list (filters, keyset pages, quadrants), get, patch, retire."""

from __future__ import annotations

import base64
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from memory.models import ApiToken, Engram, LifecycleEvent

pytestmark = pytest.mark.django_db

AWS_KEY = "AKIA" + "IOSFODNN7ABCDEFG"


def post(client: Client, path: str, body: Any) -> Any:
    return client.post(path, body, content_type="application/json")


def patch(client: Client, path: str, body: Any) -> Any:
    return client.patch(path, body, content_type="application/json")


def learn(client: Client, statement: str, **fields: Any) -> dict[str, Any]:
    response = post(client, "/api/v1/engrams", {"statement": statement, **fields})
    assert response.status_code == HTTPStatus.CREATED, response.content
    engram: dict[str, Any] = response.json()["engram"]
    return engram


def scoped_client(owner: Any, *scopes: str) -> Client:
    _, raw = ApiToken.issue(owner=owner, name="scoped", scopes=list(scopes))
    return Client(headers={"Authorization": f"Bearer {raw}"})


# --- learn --------------------------------------------------------------------------------


def test_learn_returns_201_with_the_engram_its_outcome_and_related(api: Client) -> None:
    response = post(
        api,
        "/api/v1/engrams",
        {
            "statement": "Run `pytest -x` before committing.",
            "rationale": "A red build blocks everyone.",
            "tags": ["testing"],
            "scope": "project:api",
            "source": "user",
        },
    )
    assert response.status_code == HTTPStatus.CREATED
    body = response.json()
    assert body["outcome"] == "created"
    assert body["related"] == []
    engram = body["engram"]
    assert engram["id"].startswith("ENG-")
    assert engram["status"] == "active"  # the user said so
    assert engram["scope"] == "project:api"
    assert engram["tags"] == ["testing"]
    assert engram["rs"] == pytest.approx(0.7)
    assert engram["counters"]["injections"] == 0
    assert set(engram) >= {
        "id", "statement", "rationale", "type", "scope", "status", "polarity", "visibility",
        "tags", "domain", "entities", "contraindications", "emotional_weight", "confidence",
        "band", "rs", "storage_strength", "consolidated", "enforcement", "derivation_count",
        "counters", "created_at", "updated_at", "version", "source",
    }  # fmt: skip


def test_learning_the_same_statement_again_is_a_recurrence(api: Client) -> None:
    first = learn(api, "Prefer composition over inheritance.")
    response = post(api, "/api/v1/engrams", {"statement": "prefer composition over inheritance"})
    assert response.status_code == HTTPStatus.CREATED
    assert response.json()["outcome"] == "recurrence"
    assert response.json()["engram"]["id"] == first["id"]
    assert response.json()["engram"]["derivation_count"] == 2


def test_a_secret_is_422_with_its_categories_and_nothing_is_stored(api: Client) -> None:
    response = post(api, "/api/v1/engrams", {"statement": f"Deploy with key {AWS_KEY}"})
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    body = response.json()
    assert body["code"] == "secret_detected"
    assert body["details"] == {"categories": ["aws_access_key"]}
    assert AWS_KEY not in response.content.decode()
    assert not Engram.objects.exists()


def test_learning_into_a_scope_the_token_may_not_use_is_403(owner: Any) -> None:
    client = scoped_client(owner, "project:api")
    response = post(client, "/api/v1/engrams", {"statement": "Tabs", "scope": "project:web"})
    assert response.status_code == HTTPStatus.FORBIDDEN
    assert response.json()["code"] == "scope_forbidden"
    assert learn(client, "Spaces", scope="project:api")["scope"] == "project:api"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"statement": "x", "colour": "red"}, "colour"),
        ({"statement": "x", "emotional_weight": 11}, "emotional_weight"),
        ({"statement": "x", "type": "mystical"}, "type"),
        ({"statement": ""}, "statement"),
        ({"statement": "x", "valid_from": "not a date"}, "valid_from"),
        ({"statement": "x", "scope": "galaxy:far"}, "scope"),
        ({"statement": "x", "tags": "not-a-list"}, "tags"),
    ],
)
def test_bad_input_is_422_never_500(api: Client, body: dict[str, Any], field: str) -> None:
    response = post(api, "/api/v1/engrams", body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    payload = response.json()
    assert payload["code"] == "validation_error"
    assert field in response.content.decode()


def test_nul_characters_and_lone_surrogates_are_cleaned_not_a_500(api: Client) -> None:
    raw = '{"statement": "Keep \\u0000 logs \\ud800 short", "tags": ["a\\u0000b"]}'
    response = api.post("/api/v1/engrams", raw, content_type="application/json")
    assert response.status_code == HTTPStatus.CREATED
    engram = response.json()["engram"]
    assert "\x00" not in engram["statement"]
    assert engram["tags"] == ["ab"]


def test_a_date_out_of_range_is_422(api: Client) -> None:
    response = post(
        api, "/api/v1/engrams", {"statement": "x", "valid_from": "9999-12-31T23:59:59-05:00"}
    )
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY


# --- batch --------------------------------------------------------------------------------


def test_batch_answers_each_item_on_its_own(owner: Any) -> None:
    client = scoped_client(owner, "global", "project:api")
    response = post(
        client,
        "/api/v1/engrams/batch",
        {
            "items": [
                {"statement": "Use UTC in the database."},
                {"statement": f"Key {AWS_KEY}"},
                {"statement": "Cache the build", "scope": "project:web"},
                {"statement": "Name migrations after what they do.", "scope": "project:api"},
            ]
        },
    )
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    assert (body["learned"], body["failed"]) == (2, 2)
    by_index = {r["index"]: r for r in body["results"]}
    assert by_index[0]["status"] == 201 and by_index[0]["outcome"] == "created"
    assert by_index[1]["status"] == 422 and by_index[1]["error"]["code"] == "secret_detected"
    assert by_index[2]["status"] == 403 and by_index[2]["error"]["code"] == "scope_forbidden"
    assert by_index[3]["engram"]["scope"] == "project:api"
    assert Engram.objects.count() == 2


def test_a_batch_over_500_items_is_422(api: Client) -> None:
    items = [{"statement": f"lesson {i}"} for i in range(501)]
    response = post(api, "/api/v1/engrams/batch", {"items": items})
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert not Engram.objects.exists()


# --- list ---------------------------------------------------------------------------------


def _ids(response: Any) -> list[str]:
    assert response.status_code == HTTPStatus.OK, response.content
    return [item["id"] for item in response.json()["items"]]


@pytest.mark.sqlite
def test_list_filters_combine(api: Client, owner: Any) -> None:
    a = learn(api, "Use `ruff` to lint.", tags=["lint", "python"], scope="project:api")
    b = learn(api, "Deploy on Tuesdays.", type="procedural", tags=["deploy"])
    c = learn(api, "Write changelog entries.", tags=["docs"])
    Engram.objects.filter(engram_id=c["id"]).update(status="retired", band="dormant")
    Engram.objects.filter(engram_id=b["id"]).update(band="fading")

    assert set(_ids(api.get("/api/v1/engrams"))) == {a["id"], b["id"]}  # retired left out
    assert _ids(api.get("/api/v1/engrams?status=retired")) == [c["id"]]
    assert _ids(api.get("/api/v1/engrams?scope=project:api")) == [a["id"]]
    assert _ids(api.get("/api/v1/engrams?type=procedural")) == [b["id"]]
    assert _ids(api.get("/api/v1/engrams?tag=python")) == [a["id"]]
    assert _ids(api.get("/api/v1/engrams?tag=pyth")) == []
    assert _ids(api.get("/api/v1/engrams?band=fading")) == [b["id"]]
    assert _ids(api.get("/api/v1/engrams?q=RUFF")) == [a["id"]]
    assert _ids(api.get("/api/v1/engrams?q=deploy+tuesdays")) == [b["id"]]
    assert _ids(api.get("/api/v1/engrams?q=deploy+ruff")) == []
    assert api.get("/api/v1/engrams?status=zombie").status_code == 422


@pytest.mark.sqlite
def test_list_pages_with_an_opaque_keyset_cursor(api: Client) -> None:
    topics = ["logging", "caching", "deploys", "naming", "reviews"]
    made = [learn(api, f"A lesson about {topic}.")["id"] for topic in topics]
    base = timezone.now()
    for offset, engram_id in enumerate(made):
        # Two share an updated_at, so the pk breaks the tie.
        when = base - timedelta(minutes=min(offset, 3))
        Engram.objects.filter(engram_id=engram_id).update(updated_at=when)
    seen: list[str] = []
    cursor = ""
    for _ in range(4):
        url = "/api/v1/engrams?limit=2" + (f"&cursor={cursor}" if cursor else "")
        body = api.get(url).json()
        seen += [item["id"] for item in body["items"]]
        cursor = body["next_cursor"]
        if not cursor:
            break
    # Newest change first, each exactly once; the two with one updated_at by pk, descending.
    assert seen == [*made[:3], made[4], made[3]]
    assert api.get("/api/v1/engrams?cursor=not-a-cursor").json()["code"] == "validation_error"
    huge = base64.urlsafe_b64encode(b'["2026-01-01T00:00:00+00:00", 100000000000000000000]')
    assert api.get(f"/api/v1/engrams?cursor={huge.decode()}").status_code == 422


@pytest.mark.sqlite
def test_list_by_quadrant_uses_the_owner_wide_classification(api: Client) -> None:
    statements = [
        "Run database migrations in a separate deploy.",
        "Prefer small pull requests.",
        "Log in UTC with ISO timestamps.",
        "Keep secrets in the vault, never in env files.",
    ]
    ids = [learn(api, text, source="user")["id"] for text in statements]
    assert Engram.objects.filter(status="active").count() == 4
    counters = [
        {"surfaced": 10, "followed": 5, "ignored": 0},  # working
        {"surfaced": 10, "followed": 0, "ignored": 5},  # leech
        {"surfaced": 0, "followed": 5, "ignored": 0},  # hidden gem
        {"surfaced": 0, "followed": 0, "ignored": 1},  # insufficient
    ]
    for engram_id, values in zip(ids, counters, strict=True):
        Engram.objects.filter(engram_id=engram_id).update(**values)
    assert _ids(api.get("/api/v1/engrams?quadrant=working")) == [ids[0]]
    assert _ids(api.get("/api/v1/engrams?quadrant=leech")) == [ids[1]]
    assert _ids(api.get("/api/v1/engrams?quadrant=hidden_gem")) == [ids[2]]
    assert _ids(api.get("/api/v1/engrams?quadrant=noise")) == []
    page = api.get("/api/v1/engrams?quadrant=insufficient&limit=1").json()
    assert [i["id"] for i in page["items"]] == [ids[3]] and page["next_cursor"] is None


# --- one engram ---------------------------------------------------------------------------


def test_get_patch_and_retire_one_engram(api: Client) -> None:
    engram = learn(api, "Pin dependencies.", source="user")
    url = f"/api/v1/engrams/{engram['id']}"
    assert api.get(url).json()["statement"] == "Pin dependencies."

    response = patch(api, url, {"statement": "Pin every dependency.", "tags": ["deps"]})
    assert response.status_code == HTTPStatus.OK
    assert response.json()["version"] == 2
    assert response.json()["tags"] == ["deps"]
    assert LifecycleEvent.objects.filter(event="engram_updated").count() == 1

    response = patch(api, url, {"polarity": "do", "rationale": None})
    assert response.json()["polarity"] == "do"
    assert patch(api, url, {"polarity": None}).json()["polarity"] is None

    response = api.delete(url)
    assert response.json() == {"id": engram["id"], "status": "retired", "changed": True}
    assert api.delete(url).json()["changed"] is False
    assert api.get(url).json()["status"] == "retired"


def test_patch_refuses_a_stale_version_and_a_retired_engram_with_409(api: Client) -> None:
    engram = learn(api, "Squash before merge.")
    url = f"/api/v1/engrams/{engram['id']}"
    response = patch(api, url, {"statement": "Rebase before merge.", "version": 7})
    assert response.status_code == HTTPStatus.CONFLICT
    assert response.json() == {
        "code": "version_conflict",
        "message": f"{engram['id']} is at version 1, not 7.",
        "details": {"version": 1},
    }
    assert patch(api, url, {"statement": "Rebase first.", "version": 1}).status_code == 200
    api.delete(url)
    assert patch(api, url, {"domain": "git"}).json()["code"] == "engram_retired"


def test_patch_into_a_forbidden_scope_is_403(owner: Any) -> None:
    client = scoped_client(owner, "project:api")
    engram = learn(client, "Document endpoints.", scope="project:api")
    response = patch(client, f"/api/v1/engrams/{engram['id']}", {"scope": "global"})
    assert response.status_code == HTTPStatus.FORBIDDEN
    assert Engram.objects.get().scope == "project:api"


def test_a_token_does_not_see_engrams_outside_its_scopes(api: Client, owner: Any) -> None:
    inside = learn(api, "Inside lesson", scope="project:api")
    outside = learn(api, "Outside lesson", scope="project:web")
    client = scoped_client(owner, "project:api")
    assert _ids(client.get("/api/v1/engrams")) == [inside["id"]]
    response = client.get(f"/api/v1/engrams/{outside['id']}")
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response.json()["code"] == "not_found"
    assert client.delete(f"/api/v1/engrams/{outside['id']}").status_code == 404
    assert client.get("/api/v1/engrams/ENG%00x").status_code == 404
    assert Engram.objects.get(engram_id=outside["id"]).status != "retired"
