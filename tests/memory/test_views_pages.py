"""Dashboard pages: overview, engrams (list, search, detail, edit, actions), history, settings.

Every page has a full-page and an htmx-fragment test; list and dashboard reads pin their query
count, and the count does not grow with the number of engrams.
"""

from __future__ import annotations

from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.models import (
    ActivityDay,
    Engram,
    Injection,
    LifecycleEvent,
    OwnerSettings,
    ReviewItem,
)
from memory.services import engrams as engram_services
from memory.services import outcomes
from memory.services.events import event_record
from tests.memory import dashboard_data as dd
from tests.memory.helpers import link

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}


def get(client: Client, url: str, *, htmx: bool = False, status: int = HTTPStatus.OK) -> str:
    response = client.get(url, headers=HX if htmx else {})
    assert response.status_code == status, response.content[:2000]
    body = response.content.decode()
    assert ("<html" in body) is not htmx
    return body


def count_queries(client: Client, url: str, *, htmx: bool = False) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url, headers=HX if htmx else {})
    assert response.status_code == HTTPStatus.OK
    return len(ctx.captured_queries)


def grow(owner: Any, n: int, *, start: int = 0) -> None:
    """Add n engrams with counters, some outcomes, associations and events."""
    for i in range(start, start + n):
        row = dd.engram(owner, f"Bulk lesson {i}", tags=["bulk"], scope=f"project:p{i % 3}")
        dd.with_outcomes(row, surfaced=i % 7, followed=i % 5, ignored=3)
        event_record(owner=owner, event="engram_created", engram=row, actor="test")


# --- overview --------------------------------------------------------------------------------


def test_overview_shows_counts_quadrants_review_sessions_and_events(
    logged_in: Client, owner: Any
) -> None:
    working = dd.with_outcomes(dd.engram(owner, "Run pytest"), surfaced=9, followed=8, ignored=1)
    dd.with_outcomes(dd.engram(owner, "Write docs"), surfaced=0, ignored=6)
    dd.candidate(owner, "Use uv")
    dd.session_with(owner, [(working, "followed")], task="Fix the flaky test", agent="claude")
    event_record(owner=owner, event="engram_created", engram=working, actor="agent")
    body = get(logged_in, "/")
    assert "Strength bands" in body and "Effectiveness" in body
    assert 'href="/engrams/?status=candidate"' in body
    assert 'href="/engrams/?quadrant=working"' in body
    assert "Fix the flaky test" in body  # today's sessions
    assert "engram_created" in body  # recent lifecycle events
    assert "waiting for review" in body
    assert 'hx-get="/?panel=health"' in body and 'href="/?panel=health"' in body


def test_overview_health_panel_is_a_fragment_and_a_plain_link(logged_in: Client) -> None:
    fragment = get(logged_in, "/?panel=health", htmx=True)
    assert 'id="health"' in fragment
    for part in ("database", "worker", "broker", "embedder", "llm"):
        assert f"<td>{part}</td>" in fragment
    full = get(logged_in, "/?panel=health")
    assert "<td>worker</td>" in full


def test_health_panel_counts_the_owners_vectors_from_another_model(
    logged_in: Client, owner: Any
) -> None:
    from memory.models import Engram

    dd.engram(owner, "Prefer small pull requests")
    dd.engram(owner, "Pin dependency versions")
    assert "another model" not in get(logged_in, "/?panel=health", htmx=True)

    Engram.objects.filter(owner=owner).update(embedding_model="all-MiniLM-L6-v2-onnx-int8")
    fragment = get(logged_in, "/?panel=health", htmx=True)

    assert "2 engram(s) hold vectors from another model" in fragment
    assert "engram_reembed" in fragment


def test_a_new_owner_is_told_what_to_do_next(logged_in: Client) -> None:
    body = get(logged_in, "/")
    assert "Create a token" in body
    assert "Nothing waits for review" in body
    assert "No agent sessions today" in body
    assert "No changes recorded yet" in body


def test_the_overview_query_count_does_not_grow_with_the_store(
    logged_in: Client, owner: Any
) -> None:
    grow(owner, 3)
    small = count_queries(logged_in, "/")
    grow(owner, 30, start=3)
    # 14 + lessons captured today + the projects panel with no project active in 30 days (4)
    assert count_queries(logged_in, "/") == small == 19


# --- engram list -----------------------------------------------------------------------------


def test_engram_list_full_page_and_results_fragment(logged_in: Client, owner: Any) -> None:
    dd.engram(owner, "Run pytest with -x before committing", tags=["tests"])
    full = get(logged_in, "/engrams/")
    assert 'id="results"' in full and "Run pytest with -x" in full
    assert 'hx-get="/engrams/"' in full and 'action="/engrams/"' in full
    fragment = get(logged_in, "/engrams/?sort=id", htmx=True)
    assert fragment.lstrip().startswith('<section class="card" id="results"')
    assert "Run pytest with -x" in fragment


def test_the_empty_store_says_how_engrams_arrive(logged_in: Client) -> None:
    assert "No engrams yet" in get(logged_in, "/engrams/")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=candidate", {"candidate"}),
        ("type=procedural", {"procedural"}),
        ("scope=project:api", {"api"}),
        ("band=fading", {"fading"}),
        ("tag=deploy", {"tagged"}),
        ("quadrant=leech", {"leech"}),
        ("quadrant=working", {"working"}),
    ],
)
def test_filters_narrow_the_list(
    logged_in: Client, owner: Any, query: str, expected: set[str]
) -> None:
    names = {
        "candidate": dd.engram(owner, "Lesson candidate", status=Engram.Status.CANDIDATE),
        "procedural": dd.engram(owner, "Lesson procedural", type=Engram.Type.PROCEDURAL),
        "api": dd.engram(owner, "Lesson api", scope="project:api"),
        "fading": dd.engram(owner, "Lesson fading", band="fading"),
        "tagged": dd.engram(owner, "Lesson tagged", tags=["ops", "deploy"]),
        "leech": dd.with_outcomes(
            dd.engram(owner, "Lesson leech"), surfaced=9, followed=1, ignored=5
        ),
        "working": dd.with_outcomes(
            dd.engram(owner, "Lesson working"), surfaced=9, followed=5, ignored=1
        ),
    }
    body = get(logged_in, f"/engrams/?{query}", htmx=True)
    shown = {name for name, e in names.items() if e.engram_id in body}
    assert shown == expected


@pytest.mark.sqlite
def test_a_tag_is_matched_whole_not_as_a_substring(logged_in: Client, owner: Any) -> None:
    dd.engram(owner, "Lesson one", tags=["deployment"])
    dd.engram(owner, "Lesson two", tags=["ops", "deploy"])
    body = get(logged_in, "/engrams/?tag=deploy", htmx=True)
    assert "Lesson one" not in body and "Lesson two" in body


def test_sorting_by_surfaced(logged_in: Client, owner: Any) -> None:
    low = dd.with_outcomes(dd.engram(owner, "Rarely surfaced"), surfaced=1)
    high = dd.with_outcomes(dd.engram(owner, "Often surfaced"), surfaced=50)
    body = get(logged_in, "/engrams/?sort=surfaced", htmx=True)
    assert body.index(high.engram_id) < body.index(low.engram_id)


def test_keyset_pages_cover_every_engram_once(logged_in: Client, owner: Any) -> None:
    for i in range(30):
        dd.engram(owner, f"Paged lesson {i}", engram_id=f"ENG-2026-0202-{i:03d}")
    first = get(logged_in, "/engrams/?sort=id")
    ids = [f"ENG-2026-0202-{i:03d}" for i in range(30)]
    on_first = {i for i in ids if f">{i}<" in first}
    assert len(on_first) == 25
    cursor = first.split('rel="next"')[0].rsplit("cursor=", 1)[1].split('"')[0]
    second = get(logged_in, f"/engrams/?sort=id&cursor={cursor}", htmx=True)
    on_second = {i for i in ids if f">{i}<" in second}
    assert on_first | on_second == set(ids) and not on_first & on_second
    assert 'rel="next"' not in second and "First page" in second


def test_a_tampered_cursor_restarts_the_list(logged_in: Client, owner: Any) -> None:
    dd.engram(owner, "Lesson one")
    for cursor in ("garbage", "WyJ4IiwgMV0", "W251bGwsIG51bGxd"):
        assert "Lesson one" in get(logged_in, f"/engrams/?cursor={cursor}", htmx=True)


def test_a_bad_filter_is_reported_next_to_the_field(logged_in: Client, owner: Any) -> None:
    dd.engram(owner, "Lesson one")
    body = get(logged_in, "/engrams/?status=bogus&scope=not a scope")
    assert 'id="status-error"' in body and 'id="scope-error"' in body
    assert "Lesson one" in body  # the valid part of the query still lists


def test_the_list_only_shows_the_owners_engrams(
    logged_in: Client, owner: Any, other_owner: Any
) -> None:
    dd.engram(other_owner, "Bob's secret lesson")
    assert "Bob's secret lesson" not in get(logged_in, "/engrams/")
    assert "Bob's secret lesson" not in get(logged_in, "/engrams/?q=secret+lesson", htmx=True)


def test_the_list_query_count_does_not_grow_with_the_store(logged_in: Client, owner: Any) -> None:
    grow(owner, 3)
    urls = ["/engrams/", "/engrams/?status=active&sort=surfaced&tag=bulk&quadrant=leech"]
    small = [count_queries(logged_in, url) for url in urls]
    fragment = count_queries(logged_in, urls[0], htmx=True)
    grow(owner, 40, start=3)
    assert [count_queries(logged_in, url) for url in urls] == small == [8, 10]
    assert count_queries(logged_in, urls[0], htmx=True) == fragment == 6


@pytest.mark.sqlite
def test_live_search_ranks_with_recall_and_reads_nothing_into_strength(
    logged_in: Client, owner: Any
) -> None:
    target = dd.engram(owner, "Run database migrations before the test suite", real=True)
    other = dd.engram(owner, "Run the migrations check in CI", real=True)
    dd.engram(owner, "Prefer composition over inheritance", real=True)
    before = Engram.objects.get(pk=target.pk)
    body = get(logged_in, "/engrams/?q=migrations+before+test", htmx=True)
    assert "ranked by relevance" in body
    # `q` means what it means over REST: every word must appear; recall orders the matches.
    assert target.engram_id in body
    assert other.engram_id not in body and "Prefer composition" not in body
    both = get(logged_in, "/engrams/?q=run+migrations", htmx=True)
    assert target.engram_id in both and other.engram_id in both
    by_id = get(logged_in, "/engrams/?q=run+migrations&sort=id", htmx=True)
    assert "ranked by relevance" not in by_id and other.engram_id in by_id
    after = Engram.objects.get(pk=target.pk)
    assert (after.frequency, after.rs_anchor_at, after.last_accessed) == (
        before.frequency,
        before.rs_anchor_at,
        before.last_accessed,
    )
    assert not Injection.objects.exists()
    full = get(logged_in, "/engrams/?q=migrations&type=procedural")
    assert "Nothing matches" in full  # filters narrow the ranked results too


# --- engram detail ---------------------------------------------------------------------------


def test_engram_detail_shows_every_part(logged_in: Client, owner: Any) -> None:
    e = dd.engram(
        owner,
        "Run pytest with -x",
        rationale="Fail fast",
        tags=["tests"],
        contraindications=["when profiling"],
        derivation_count=2,
    )
    dd.with_outcomes(e, surfaced=6, followed=5, ignored=1)
    other = dd.engram(owner, "Use a virtualenv")
    link(e, other, 0.4)
    dd.session_with(owner, [(e, "followed")], task="Fix the flaky test")
    outcomes.feedback_record(owner=owner, engram=e, signal="positive", actor="agent")
    body = get(logged_in, f"/engrams/{e.engram_id}/")
    for text in (
        "Fail fast",
        "when profiling",
        "Retrieval strength",
        '<path class="series past" d="M',
        '<path class="series future" d="M',
        other.engram_id,  # associations
        "Fix the flaky test",  # injections with outcomes
        "followed",
        "feedback_received",  # history
        'name="statement"',  # edit form
        "Reinforce",
        "Mark consolidated",
        "Retire",
    ):
        assert text in body, text


def test_engram_history_pages_as_a_fragment(logged_in: Client, owner: Any) -> None:
    e = dd.engram(owner, "Run pytest with -x")
    for n in range(30):
        event_record(owner=owner, event="feedback_received", engram=e, data={"n": n})
    full = get(logged_in, f"/engrams/{e.engram_id}/")
    assert "Older events" in full
    cursor = full.split("Older events")[0].rsplit("cursor=", 1)[1].split('"')[0]
    fragment = get(logged_in, f"/engrams/{e.engram_id}/?cursor={cursor}", htmx=True)
    assert fragment.lstrip().startswith('<div id="history">')
    assert fragment.count(">feedback_received<") == 5 and "Older events" not in fragment


def test_another_owners_engram_is_not_found(logged_in: Client, other_owner: Any) -> None:
    e = dd.engram(other_owner, "Bob's lesson")
    get(logged_in, f"/engrams/{e.engram_id}/", status=HTTPStatus.NOT_FOUND)
    response = logged_in.post(f"/engrams/{e.engram_id}/retire/")
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert Engram.objects.get(pk=e.pk).status == Engram.Status.ACTIVE


def test_the_detail_query_count_does_not_grow_with_the_store(logged_in: Client, owner: Any) -> None:
    e = dd.engram(owner, "Run pytest with -x")
    url = f"/engrams/{e.engram_id}/"
    grow(owner, 3)
    small = count_queries(logged_in, url)
    grow(owner, 30, start=3)
    assert (
        count_queries(logged_in, url) == small == 19
    )  # 16 + effectiveness windows and escalation steps + where it came from


@pytest.mark.sqlite
def test_the_strength_plot_steps_at_feedback_and_decays_over_active_days(
    logged_in: Client, owner: Any
) -> None:
    from memory.selectors import strength_series

    start = timezone.now() - timedelta(days=10)
    e = dd.engram(owner, "Run pytest with -x", now=start)
    for day in range(1, 10):
        ActivityDay.objects.create(
            owner=owner, scope="global", day=(start + timedelta(days=day)).date()
        )
    past, future = strength_series(e, now=timezone.now())
    assert past[0] == (start, pytest.approx(0.7))
    assert past[-1][1] < 0.7  # decayed over the active days
    assert future[0][1] == pytest.approx(past[-1][1], abs=1e-6)
    assert future[-1][1] < future[0][1]
    outcomes.feedback_record(owner=owner, engram=e, signal="positive", actor="agent")
    e.refresh_from_db()
    past, _ = strength_series(e, now=timezone.now() + timedelta(seconds=1))
    assert max(v for _, v in past[-3:]) == pytest.approx(e.retrieval_strength)


# --- edit and actions ------------------------------------------------------------------------


def edit_data(e: Engram, **changes: Any) -> dict[str, Any]:
    data = {
        "statement": e.statement,
        "rationale": e.rationale,
        "tags": ", ".join(e.tags),
        "domain": e.domain,
        "contraindications": "\n".join(e.contraindications),
        "type": e.type,
        "scope": e.scope,
        "polarity": e.polarity or "",
        "visibility": e.visibility,
        "enforcement": e.enforcement,
        "emotional_weight": e.emotional_weight,
        "confidence": e.confidence,
        "trigger_context": e.trigger_context,
    }
    data.update(changes)
    return data


def test_editing_an_engram_records_an_event(logged_in: Client, owner: Any) -> None:
    e = dd.engram(owner, "Run pytest with -x", tags=["tests"])
    response = logged_in.post(
        f"/engrams/{e.engram_id}/edit/",
        edit_data(e, tags="tests, ci", contraindications="when profiling\n", polarity="do"),
    )
    assert response.status_code == HTTPStatus.FOUND
    e.refresh_from_db()
    assert e.tags == ["tests", "ci"] and e.contraindications == ["when profiling"]
    assert e.polarity == "do" and e.version == 2
    event = LifecycleEvent.objects.get(event="engram_updated")
    assert set(event.data["changes"]) == {"tags", "contraindications", "polarity"}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"statement": "   "}, "statement"),
        ({"scope": "not a scope"}, "scope"),
        ({"emotional_weight": "11"}, "emotional_weight"),
        ({"type": "bogus"}, "type"),
        ({"statement": "Deploy with AKIA" + "IOSFODNN7ABCDEFG"}, None),
    ],
)
def test_a_bad_edit_shows_the_error_by_the_field_and_changes_nothing(
    logged_in: Client, owner: Any, changes: dict[str, str], field: str | None
) -> None:
    e = dd.engram(owner, "Run pytest with -x")
    response = logged_in.post(f"/engrams/{e.engram_id}/edit/", edit_data(e, **changes))
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    body = response.content.decode()
    if field:
        assert f'id="{field}-error"' in body
    else:
        assert (
            "looks like a secret" in body
            and "AKIA" + "IOSFODNN7ABCDEFG" not in body.split('name="statement"')[0]
        )
    assert '<details class="card" id="edit" open>' in body
    after = Engram.objects.get(pk=e.pk)
    assert (after.statement, after.scope, after.version) == (e.statement, e.scope, 1)
    assert not LifecycleEvent.objects.exists()


def test_a_retired_engram_cannot_be_edited_from_the_dashboard(
    logged_in: Client, owner: Any
) -> None:
    e = dd.engram(owner, "Run pytest with -x")
    engram_services.engram_retire(owner=owner, engram=e, actor="person:alice")
    response = logged_in.post(f"/engrams/{e.engram_id}/edit/", edit_data(e, statement="Changed"))
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert "is retired; not edited." in response.content.decode()
    after = Engram.objects.get(pk=e.pk)
    assert (after.statement, after.version) == ("Run pytest with -x", 1)
    assert not LifecycleEvent.objects.filter(event="engram_updated").exists()


@pytest.mark.parametrize(
    ("action", "event"),
    [
        ("reinforce", "feedback_received"),
        ("retire", "engram_retired"),
        ("consolidate", "engram_consolidated"),
    ],
)
def test_engram_actions_record_events(
    logged_in: Client, owner: Any, action: str, event: str
) -> None:
    e = dd.engram(owner, "Run pytest with -x")
    response = logged_in.post(f"/engrams/{e.engram_id}/{action}/")
    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"] == f"/engrams/{e.engram_id}/"
    assert LifecycleEvent.objects.filter(event=event, engram=e).count() == 1
    assert logged_in.get(f"/engrams/{e.engram_id}/{action}/").status_code == (
        HTTPStatus.METHOD_NOT_ALLOWED
    )


def test_an_unknown_engram_action_is_not_found(logged_in: Client, owner: Any) -> None:
    e = dd.engram(owner, "Run pytest with -x")
    assert logged_in.post(f"/engrams/{e.engram_id}/delete/").status_code == HTTPStatus.NOT_FOUND


# --- history, settings, navigation ------------------------------------------------------------


def test_history_full_page_fragment_and_filter(logged_in: Client, owner: Any) -> None:
    e = dd.engram(owner, "Run pytest with -x")
    event_record(owner=owner, event="engram_created", engram=e)
    event_record(owner=owner, event="review_decided", data={"kind": "candidate", "action": "defer"})
    full = get(logged_in, "/history/")
    assert "engram_created" in full and "candidate: Defer" in full
    fragment = get(logged_in, "/history/?event=review_decided", htmx=True)
    assert fragment.lstrip().startswith('<div id="rows">')
    assert "review_decided" in fragment and "engram_created" not in fragment


def test_the_history_query_count_does_not_grow(logged_in: Client, owner: Any) -> None:
    grow(owner, 3)
    small = count_queries(logged_in, "/history/")
    grow(owner, 30, start=3)
    assert count_queries(logged_in, "/history/") == small == 4


def test_settings_save_and_show_defaults(logged_in: Client, owner: Any) -> None:
    body = get(logged_in, "/settings/")
    assert "Review batch size" in body and "15 a day" in body
    response = logged_in.post(
        "/settings/",
        {
            "review_batch_size": "8",
            "auto_defer": "on",
            "decay_base": "0.03",
            "inject_budget_tokens": "",
        },
    )
    assert response.status_code == HTTPStatus.FOUND
    prefs = OwnerSettings.objects.get(owner=owner)
    assert (prefs.review_batch_size, prefs.auto_defer, prefs.auto_approve) == (8, True, False)
    assert prefs.decay_base == 0.03 and prefs.inject_budget_tokens is None


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"review_batch_size": "0"}, "review_batch_size"),
        ({"review_batch_size": "many"}, "review_batch_size"),
        ({"decay_base": "2"}, "decay_base"),
        ({"inject_budget_tokens": "10"}, "inject_budget_tokens"),
    ],
)
def test_bad_settings_show_errors_by_the_field_and_change_nothing(
    logged_in: Client, owner: Any, data: dict[str, str], field: str
) -> None:
    OwnerSettings.objects.create(owner=owner, review_batch_size=7, decay_base=0.04)
    response = logged_in.post("/settings/", {"auto_approve": "on", **data})
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert f'id="{field}-error"' in response.content.decode()
    prefs = OwnerSettings.objects.get(owner=owner)
    assert (prefs.review_batch_size, prefs.decay_base, prefs.auto_approve) == (7, 0.04, False)


def test_the_navigation_marks_the_section_and_counts_open_review(
    logged_in: Client, owner: Any
) -> None:
    dd.candidate(owner, "Use uv")
    dd.candidate(owner, "Pin Postgres")
    ReviewItem.objects.create(owner=owner, kind=ReviewItem.Kind.CALIBRATION, payload={})
    body = get(logged_in, "/engrams/")
    assert '<a href="/engrams/" aria-current="page">Engrams</a>' in body
    assert 'title="2 items waiting">2</span>' in body
    assert 'href="/exchange/"' in body
    for url in (
        "/",
        "/review/",
        "/effectiveness/",
        "/sessions/",
        "/episodes/",
        "/tokens/",
        "/settings/",
    ):
        assert 'aria-current="page"' in get(logged_in, url)


def test_every_page_needs_a_login(db: Any) -> None:
    client = Client()
    for url in (
        "/",
        "/engrams/",
        "/review/",
        "/effectiveness/",
        "/sessions/",
        "/episodes/",
        "/settings/",
        "/history/",
    ):
        response = client.get(url)
        assert response.status_code == HTTPStatus.FOUND and "/login/" in response["Location"]


@pytest.mark.sqlite
def test_search_results_page_by_number(logged_in: Client, owner: Any) -> None:
    for n in range(30):
        dd.engram(owner, f"Deploy checklist item {n}: run the migrations")
    first = get(logged_in, "/engrams/?q=migrations", htmx=True)
    assert first.count("/engrams/ENG-") == 25
    assert 'href="?q=migrations&amp;page=2"' in first and "Best matches" in first
    second = get(logged_in, "/engrams/?q=migrations&page=2", htmx=True)
    assert second.count("/engrams/ENG-") == 5 and "page 2" in second
    links = [
        {w for w in body.split() if w.startswith('href="/engrams/ENG-')} for body in (first, second)
    ]
    assert len(links[0]) == 25 and not links[0] & links[1]


def test_a_quadrant_filter_pages_by_cursor_too(logged_in: Client, owner: Any) -> None:
    working = [
        dd.with_outcomes(dd.engram(owner, f"Working {n}"), surfaced=10 + n, followed=9, ignored=1)
        for n in range(30)
    ]
    for _ in range(31):
        dd.engram(owner)  # never surfaced: keeps the median at 0
    first = get(logged_in, "/engrams/?quadrant=working&sort=surfaced", htmx=True)
    assert "30 engrams match" in first
    cursor = first.split('rel="next"')[0].rsplit("cursor=", 1)[1].split('"')[0]
    second = get(logged_in, f"/engrams/?quadrant=working&sort=surfaced&cursor={cursor}", htmx=True)
    shown = [
        [e.engram_id for e in working if f">{e.engram_id}<" in body] for body in (first, second)
    ]
    assert len(shown[0]) == 25 and len(shown[1]) == 5
    assert not set(shown[0]) & set(shown[1])
    assert first.index(working[-1].engram_id) < first.index(working[-2].engram_id)  # most first
