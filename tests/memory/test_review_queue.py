"""A review a person can finish: one count, where each item came from, one-click answers that
are remembered by capture, and the 30-day archive with its restore (issue #26 item 5)."""

from __future__ import annotations

import re
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from memory.maths import learning as learning_maths
from memory.models import (
    AgentSession,
    AnsweredText,
    Engram,
    Event,
    LearningDraft,
    LearningSignal,
    LifecycleEvent,
    ReviewItem,
)
from memory.services import learning, maintenance, review, review_queue
from tests.memory import dashboard_data as dd

pytestmark = pytest.mark.django_db

QUOTE = "hmm, maybe check the staging logs in the grafana board for this bug"
STATEMENT = "Check the staging logs in the grafana board"


def captured(owner: Any, session_id: str, *, kind: str = "prompt") -> LearningDraft:
    """A tier-C lesson through the real capture write path (a candidate waiting for review)."""
    session = AgentSession.objects.create(owner=owner, session_id=session_id)
    signal = LearningSignal.objects.create(
        owner=owner, session=session, kind=kind, text=QUOTE, state="done"
    )
    draft = learning_maths.LessonDraft(
        statement=STATEMENT, polarity=None, tier="C", rationale=QUOTE
    )
    return learning.draft_write(
        signal=signal, draft=draft, producer="heuristic", forced=False, now=timezone.now()
    )


def candidate_item(engram: Engram) -> ReviewItem:
    return ReviewItem.objects.get(engram=engram, kind="candidate")


@pytest.mark.parametrize("answer", ["one_off", "wrong"])
def test_an_answer_retires_the_candidate_and_capture_does_not_take_the_text_again(
    owner: Any, answer: str
) -> None:
    first = captured(owner, "s-1")
    assert first.result == "created" and first.engram is not None
    engram = first.engram
    assert engram.status == "candidate"
    review.review_decide(
        owner=owner, item=candidate_item(engram), action=answer, actor="person:alice"
    )
    engram.refresh_from_db()
    assert engram.status == "retired"
    assert AnsweredText.objects.get(owner=owner).answer == answer
    again = captured(owner, "s-2")
    assert again.result == "rejected" and again.engram is None
    assert again.error.startswith(f"answered_{answer}")
    assert Engram.objects.filter(owner=owner).count() == 1  # no new candidate
    assert review.open_count(owner=owner) == 0


def test_another_owner_answering_the_same_text_changes_nothing_for_you(
    owner: Any, other_owner: Any
) -> None:
    theirs = captured(other_owner, "o-1")
    assert theirs.engram is not None
    review.review_decide(
        owner=other_owner, item=candidate_item(theirs.engram), action="wrong", actor="person:bob"
    )
    assert captured(owner, "s-1").result == "created"


def test_a_plain_reject_is_not_remembered(owner: Any) -> None:
    first = captured(owner, "s-1")
    assert first.engram is not None
    review.review_decide(
        owner=owner, item=candidate_item(first.engram), action="reject", actor="person:alice"
    )
    assert not AnsweredText.objects.exists()
    assert captured(owner, "s-2").result == "created"


def test_each_item_shows_its_quote_and_where_with_a_link_to_the_session(
    owner: Any, logged_in: Client
) -> None:
    for kind, session_id in (("prompt", "s-prompt"), ("error_fix", "s-fix")):
        draft = captured(owner, session_id, kind=kind)
        if kind == "error_fix":
            assert draft.result == "recurrence"  # the same text: one engram, first origin kept
    engram = Engram.objects.get(owner=owner)
    item = candidate_item(engram)
    (origin,) = review_queue.origins([item]).values()
    assert origin.where == "prompt" and origin.quote == QUOTE
    session = AgentSession.objects.get(session_id="s-prompt")
    assert origin.session_pk == session.pk
    page = logged_in.get("/review/").content.decode()
    assert QUOTE in page and "From your prompt" in page
    assert f'href="/sessions/{session.pk}/"' in page
    for label in ("Keep as a rule", "It was a one-off", "Wrong"):
        assert label in page


def test_the_same_text_twice_is_shown_once(owner: Any) -> None:
    item = dd.candidate(owner, "Use uv to install Python dependencies")
    Engram.objects.filter(pk=item.engram_id).update(
        rationale="Use uv to install Python dependencies."
    )
    item.refresh_from_db()
    (origin,) = review_queue.origins([item]).values()
    assert origin.quote == "" and origin.where == "agent"


def test_one_click_answers_and_origin_over_rest(owner: Any, api: Client) -> None:
    draft = captured(owner, "s-1")
    body = api.get("/api/v1/review?kind=candidate").json()
    (item,) = body["items"]
    assert {"one_off", "wrong", "approve"} <= set(item["actions"])
    assert item["origin"]["where"] == "prompt" and item["origin"]["quote"] == QUOTE
    assert item["origin"]["session"] == "s-1"
    answered = api.post(
        f"/api/v1/review/{item['id']}/decide",
        {"action": "one_off"},
        content_type="application/json",
    )
    assert answered.status_code == HTTPStatus.OK and answered.json()["state"] == "done"
    assert draft.engram is not None
    assert AnsweredText.objects.get(owner=owner).content_hash == draft.engram.content_hash


def test_the_one_count_is_the_same_on_the_overview_the_badge_and_the_review_page(
    owner: Any, logged_in: Client
) -> None:
    for n in range(7):
        dd.candidate(owner, f"Candidate lesson number {n}")
    review_page = logged_in.get("/review/").content.decode()  # fills today's batch (+ calibration)
    overview = logged_in.get("/").content.decode()
    expected = review.open_count(owner=owner)
    assert expected == 7
    for html in (review_page, overview):
        values = re.findall(r"data-review-count(?:=\"(\d+)\")?>(\d+)?", html)
        numbers = {int(a or b) for a, b in values}
        assert numbers == {expected}, values


# --- the 30-day archive ---------------------------------------------------------------------


def aged(item: ReviewItem, days: int) -> ReviewItem:
    ReviewItem.objects.filter(pk=item.pk).update(created_at=timezone.now() - timedelta(days=days))
    item.refresh_from_db()
    return item


def test_candidates_nobody_looked_at_for_30_days_are_archived_once(owner: Any) -> None:
    old = aged(dd.candidate(owner, "An old candidate nobody decided"), 31)
    deferred = aged(dd.candidate(owner, "An old deferred candidate"), 40)
    ReviewItem.objects.filter(pk=deferred.pk).update(state="deferred")
    recurred = aged(dd.candidate(owner, "An old candidate said again last week"), 31)
    LifecycleEvent.objects.create(
        owner=owner,
        event=Event.RECURRENCE_DETECTED,
        engram=recurred.engram,
        created_at=timezone.now() - timedelta(days=7),
    )
    young = aged(dd.candidate(owner, "A candidate from last week"), 7)
    assert review.open_count(owner=owner) == 4
    assert review_queue.archive_stale(owner=owner) == 2
    assert review_queue.archive_stale(owner=owner) == 0  # idempotent
    states = {i.pk: (i.state, i.decision) for i in ReviewItem.objects.all()}
    assert states[old.pk] == states[deferred.pk] == ("done", "archived")
    assert states[recurred.pk][0] == states[young.pk][0] == "pending"
    assert review.open_count(owner=owner) == 2
    assert Engram.objects.get(pk=old.engram_id).status == "candidate"  # nothing deleted
    assert LifecycleEvent.objects.filter(event="review_archived").count() == 2


def test_the_daily_job_archives(owner: Any) -> None:
    old = aged(dd.candidate(owner, "An old candidate nobody decided"), 31)
    maintenance.maintain_all()
    maintenance.maintain_all()
    old.refresh_from_db()
    assert old.decision == "archived"
    assert LifecycleEvent.objects.filter(event="review_archived").count() == 1


def test_an_archived_candidate_is_restored_from_the_dashboard(
    owner: Any, logged_in: Client
) -> None:
    old = aged(dd.candidate(owner, "An old candidate nobody decided"), 31)
    review_queue.archive_stale(owner=owner)
    review_page = logged_in.get("/review/").content.decode()
    assert "1 archived candidate" in review_page
    listing = logged_in.get("/review/archived/").content.decode()
    assert "An old candidate nobody decided" in listing
    response = logged_in.post(f"/review/{old.pk}/restore/")
    assert response.status_code == HTTPStatus.FOUND
    old.refresh_from_db()
    assert old.state == "pending" and old.decision == ""
    assert review.open_count(owner=owner) == 1
    assert review_queue.archive_stale(owner=owner) == 0  # its 30 days start again
    assert LifecycleEvent.objects.filter(event="review_restored").count() == 1
    again = logged_in.post(f"/review/{old.pk}/restore/", follow=True)
    assert "not archived" in again.content.decode()


def test_restore_over_rest_and_its_refusals(owner: Any, api: Client, other_api: Client) -> None:
    old = aged(dd.candidate(owner, "An old candidate nobody decided"), 31)
    fresh = dd.candidate(owner, "A fresh candidate")
    review_queue.archive_stale(owner=owner)
    assert other_api.post(f"/api/v1/review/{old.pk}/restore").status_code == HTTPStatus.NOT_FOUND
    refused = api.post(f"/api/v1/review/{fresh.pk}/restore")
    assert refused.status_code == HTTPStatus.CONFLICT
    assert refused.json()["code"] == "not_archived"
    ok = api.post(f"/api/v1/review/{old.pk}/restore")
    assert ok.status_code == HTTPStatus.OK and ok.json()["state"] == "pending"
    assert api.post("/api/v1/review/999999/restore").status_code == HTTPStatus.NOT_FOUND


# --- the engram list: who said it, tier, status, scope, provenance ---------------------------


def test_the_engram_list_filters_by_who_said_it_tier_status_and_scope(
    owner: Any, logged_in: Client
) -> None:
    yours = dd.engram(owner, "Stage files by name before git commit", source="user")
    Engram.objects.filter(pk=yours.pk).update(extra={"learning": {"tier": "A"}})
    learned = dd.engram(owner, "Run the linter before pushing", source="agent", scope="project:x")
    Engram.objects.filter(pk=learned.pk).update(extra={"learning": {"tier": "C"}})
    imported = dd.engram(owner, "Pin the Postgres image", source="import", status="candidate")

    def ids(query: str) -> set[str]:
        html = logged_in.get(f"/engrams/?{query}").content.decode()
        return set(re.findall(r"ENG-2026-0101-\d{4}", html))

    assert ids("who=you") == {yours.engram_id}
    assert ids("who=learned") == {learned.engram_id, imported.engram_id}
    assert ids("tier=C") == {learned.engram_id}
    assert ids("tier=A&who=you") == {yours.engram_id}
    assert ids("who=learned&status=candidate") == {imported.engram_id}
    assert ids("who=learned&scope=project:x") == {learned.engram_id}
    page = logged_in.get("/engrams/").content.decode()
    assert "Provenance" in page and 'class="pill said-you">you<' in page
    bad = logged_in.get("/engrams/?who=them&tier=Z")
    assert bad.status_code == HTTPStatus.OK  # reported next to the fields, nothing filtered
    assert "Select a valid choice" in bad.content.decode()


@pytest.mark.django_db(transaction=True)
def test_answers_and_restore_over_mcp(owner: Any, token: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    import anyio

    from memory.integrations import mcp
    from memory.models import ApiToken

    old = aged(dd.candidate(owner, "An old candidate nobody decided"), 31)
    fresh = dd.candidate(owner, "Check the staging logs in the grafana board")
    review_queue.archive_stale(owner=owner)
    server = mcp.build_server(ApiToken.authenticate(token))

    def call(name: str, arguments: dict[str, Any]) -> Any:
        async def run() -> Any:
            return await server.call_tool(name, arguments)

        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(anyio.run, run).result().structured_content

    restored = call("review_restore", {"item_id": old.pk})
    assert restored["state"] == "pending"
    with pytest.raises(Exception, match="not_archived"):
        call("review_restore", {"item_id": fresh.pk})
    answered = call("review_decide", {"item_id": fresh.pk, "action": "wrong"})
    assert answered["state"] == "done"
    assert AnsweredText.objects.get(owner=owner).answer == "wrong"
