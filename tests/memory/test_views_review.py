"""The review page: batch, decisions in place (htmx) and without JavaScript, bulk actions."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from memory.models import Engram, LifecycleEvent, OwnerSettings, ReviewItem
from memory.services import review
from tests.memory import dashboard_data as dd

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}
K = ReviewItem.Kind


@pytest.fixture
def queue(owner: Any) -> dict[str, ReviewItem]:
    return {
        "candidate": dd.candidate(owner, "Use uv to install Python dependencies"),
        "contradiction": dd.pair(owner, K.CONTRADICTION, "Always squash", "Never squash"),
        "merge": dd.pair(owner, K.MERGE, "Lint before commit", "Run the linter first"),
        "fading": dd.fading(owner, "Restart the dev server after settings changes"),
    }


def test_review_page_and_batch_fragment(logged_in: Client, queue: dict[str, ReviewItem]) -> None:
    full = logged_in.get("/review/").content.decode()
    for title in ("New candidates", "Contradictions", "Merge proposals", "Fading"):
        assert title in full
    assert "Always squash" in full and "Never squash" in full
    assert full.count('class="side"') == 4  # both pairs side by side
    assert "approved this week" in full and "calibration items caught" in full
    assert "calibration" not in full.split('id="batch"')[1].split("calibration items caught")[1]
    fragment = logged_in.get("/review/", headers=HX).content.decode()
    assert "<html" not in fragment and fragment.lstrip().startswith('<div id="batch">')


def test_every_item_defaults_to_defer_and_has_shortcut_keys(
    logged_in: Client, queue: dict[str, ReviewItem]
) -> None:
    body = logged_in.get("/review/").content.decode()
    forms = body.split('<form method="post" action="/review/')[1:]
    item_forms = [f for f in forms if "/decide/" in f.split('"')[0]]
    assert len(item_forms) == 5  # four items and the day's calibration item
    for form in item_forms:
        first_button = form.split("<button", 1)[1]
        assert 'value="defer"' in first_button.split(">", 1)[0]
    assert 'data-key="a"' in body and 'data-key="r"' in body and 'data-key="1"' in body


def test_an_empty_queue_explains_where_items_come_from(logged_in: Client) -> None:
    body = logged_in.get("/review/").content.decode()
    assert "Nothing to review" in body
    assert not ReviewItem.objects.exists()  # no calibration item for an empty queue


def test_deciding_in_place_returns_the_item_and_the_new_summary(
    logged_in: Client, queue: dict[str, ReviewItem]
) -> None:
    logged_in.get("/review/")
    item = queue["candidate"]
    response = logged_in.post(f"/review/{item.pk}/decide/", {"action": "approve"}, headers=HX)
    assert response.status_code == HTTPStatus.OK
    body = response.content.decode()
    assert f'id="item-{item.pk}"' in body and "Approved" in body
    assert 'id="review-summary" class="review-summary" hx-swap-oob="true"' in body
    assert '<span id="review-badge" hx-swap-oob="true">' in body
    assert Engram.objects.get(pk=item.engram_id).status == Engram.Status.ACTIVE


def test_deciding_without_javascript_redirects_back(
    logged_in: Client, queue: dict[str, ReviewItem]
) -> None:
    item = queue["contradiction"]
    response = logged_in.post(f"/review/{item.pk}/decide/", {"action": "keep_old"})
    assert response.status_code == HTTPStatus.FOUND and response["Location"] == "/review/"
    assert Engram.objects.get(pk=item.engram_id).status == Engram.Status.RETIRED
    assert LifecycleEvent.objects.filter(event="review_decided").count() == 1


@pytest.mark.parametrize("htmx", [True, False])
def test_a_missing_contraindication_is_shown_by_its_field_and_changes_nothing(
    logged_in: Client, queue: dict[str, ReviewItem], htmx: bool
) -> None:
    item = queue["contradiction"]
    response = logged_in.post(
        f"/review/{item.pk}/decide/",
        {"action": "both_valid", "new_contraindication": "in monorepos"},
        headers=HX if htmx else {},
    )
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    body = response.content.decode()
    assert f'id="old-contra-error-{item.pk}"' in body
    assert 'value="in monorepos"' in body  # what was typed is kept
    assert ("<html" in body) is not htmx
    item.refresh_from_db()
    assert item.state == ReviewItem.State.PENDING
    assert Engram.objects.get(pk=item.engram_id).contraindications == []
    assert not LifecycleEvent.objects.exists()


def test_an_unknown_action_is_a_422_next_to_the_buttons(
    logged_in: Client, queue: dict[str, ReviewItem]
) -> None:
    item = queue["fading"]
    response = logged_in.post(f"/review/{item.pk}/decide/", {"action": "approve"}, headers=HX)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert f'id="action-error-{item.pk}"' in response.content.decode()


def test_a_decided_item_is_not_decided_twice(
    logged_in: Client, queue: dict[str, ReviewItem]
) -> None:
    item = queue["candidate"]
    logged_in.post(f"/review/{item.pk}/decide/", {"action": "approve"})
    again = logged_in.post(f"/review/{item.pk}/decide/", {"action": "reject"}, headers=HX)
    assert again.status_code == HTTPStatus.OK
    assert "Approved" in again.content.decode()
    assert Engram.objects.get(pk=item.engram_id).status == Engram.Status.ACTIVE


def test_another_owners_item_cannot_be_decided(logged_in: Client, other_owner: Any) -> None:
    item = dd.candidate(other_owner, "Bob's lesson")
    response = logged_in.post(f"/review/{item.pk}/decide/", {"action": "approve"})
    assert response.status_code == HTTPStatus.NOT_FOUND


def test_writing_an_abstract_from_the_page(logged_in: Client, owner: Any) -> None:
    dd.engram(owner, "Run migrations before tests", derivation_count=3)
    body = logged_in.get("/review/").content.decode()
    assert "Abstraction prompts" in body and "Learned 3 times" in body
    item = ReviewItem.objects.get(kind=K.ABSTRACTION)
    response = logged_in.post(
        f"/review/{item.pk}/decide/",
        {
            "action": "write",
            "statement": "Prepare state before testing it",
            "structure": "Before X, set up Y",
            "applies_when": "any test suite with external state",
            "visibility": "private",
        },
        headers=HX,
    )
    assert response.status_code == HTTPStatus.OK
    assert "Wrote the abstract" in response.content.decode()
    assert Engram.objects.filter(kind=Engram.Kind.ABSTRACT, status="active").count() == 1


@pytest.mark.parametrize("htmx", [True, False])
def test_defer_all_acts_on_the_batch(
    logged_in: Client, queue: dict[str, ReviewItem], htmx: bool
) -> None:
    logged_in.get("/review/")
    response = logged_in.post("/review/all/", {"action": "defer"}, headers=HX if htmx else {})
    if htmx:
        assert response.status_code == HTTPStatus.OK
        assert "Done for today" in response.content.decode()
    else:
        assert response.status_code == HTTPStatus.FOUND
    assert not ReviewItem.objects.filter(state=ReviewItem.State.PENDING).exists()


def test_approve_all_skips_items_without_an_approve_action(
    logged_in: Client, queue: dict[str, ReviewItem]
) -> None:
    logged_in.get("/review/")
    logged_in.post("/review/all/", {"action": "approve"})
    queue["candidate"].refresh_from_db()
    assert queue["candidate"].decision == "approve"
    queue["contradiction"].refresh_from_db()
    assert queue["contradiction"].state == ReviewItem.State.PENDING
    calibration = ReviewItem.objects.get(kind=K.CALIBRATION)
    assert calibration.decision == "approve"  # the rubber stamp is on record
    assert review.approval_rate(owner=calibration.owner).calibration_total == 1


def test_a_bad_bulk_action_is_refused(logged_in: Client, queue: dict[str, ReviewItem]) -> None:
    response = logged_in.post("/review/all/", {"action": "reject"}, follow=True)
    assert "must be approve or defer" in response.content.decode().lower()
    assert not LifecycleEvent.objects.exists()


def test_the_review_query_count_does_not_grow_with_the_queue(logged_in: Client, owner: Any) -> None:
    OwnerSettings.objects.create(owner=owner, review_batch_size=3)
    for n in range(3):
        dd.candidate(owner, f"Candidate {n}")
    logged_in.get("/review/")  # the first look of the day fills the batch (2 + calibration)

    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert logged_in.get("/review/").status_code == HTTPStatus.OK
        return len(ctx.captured_queries)

    small = count()
    for n in range(3, 40):
        dd.candidate(owner, f"Candidate {n}")
    assert count() == small == 10  # + where items came from, + the archived count
