"""Effectiveness, sessions and episodes pages: full page, fragment, filters, pinned queries."""

from __future__ import annotations

from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.models import Observation
from tests.memory import dashboard_data as dd

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
        assert client.get(url, headers=HX if htmx else {}).status_code == HTTPStatus.OK
    return len(ctx.captured_queries)


def quadrant_store(owner: Any, *, extra: int = 0) -> dict[str, Any]:
    """One engram per quadrant; three with too few outcomes put the median surfaced at 4."""
    rows = {
        "working": dd.with_outcomes(dd.engram(owner), surfaced=20, followed=8, ignored=2),
        "leech": dd.with_outcomes(dd.engram(owner), surfaced=15, followed=1, ignored=9),
        "hidden_gem": dd.with_outcomes(dd.engram(owner), surfaced=2, followed=5, ignored=1),
        "noise": dd.with_outcomes(dd.engram(owner), surfaced=1, ignored=6),
    }
    for surfaced in (3, 4, 5):
        rows.setdefault("insufficient", dd.with_outcomes(dd.engram(owner), surfaced=surfaced))
    for _ in range(extra):
        dd.with_outcomes(dd.engram(owner), surfaced=3, followed=3, ignored=3)
    return rows


# --- effectiveness ---------------------------------------------------------------------------


def test_effectiveness_plots_and_tables_each_quadrant(logged_in: Client, owner: Any) -> None:
    rows = quadrant_store(owner)
    body = get(logged_in, "/effectiveness/")
    assert body.count('class="dot q-') == 4  # insufficient engrams are not plotted
    assert body.count('class="quadrant-line"') == 2
    for key, engram in rows.items():
        table = body.split(f'id="quadrant-{key}"')[1].split("</section>")[0]
        assert engram.engram_id in table, key
        assert f'href="/engrams/{engram.engram_id}/"' in body
    assert "median engram (4 times)" in body


def test_a_quadrant_table_pages_as_a_fragment(logged_in: Client, owner: Any) -> None:
    for n in range(25):
        dd.with_outcomes(dd.engram(owner, f"Working {n}"), surfaced=10 + n, followed=9, ignored=1)
    for _ in range(25):
        dd.engram(owner)  # surfaced 0: keeps the median low
    full = get(logged_in, "/effectiveness/")
    assert 'hx-get="?quadrant=working&amp;page=2"' in full
    fragment = get(logged_in, "/effectiveness/?quadrant=working&page=2", htmx=True)
    assert fragment.lstrip().startswith('<section class="card quadrant" id="quadrant-working"')
    assert fragment.count("/engrams/ENG-") == 5
    assert "Previous" in fragment


def test_effectiveness_without_outcomes_says_what_to_expect(logged_in: Client, owner: Any) -> None:
    dd.engram(owner)
    assert "nothing to plot" in get(logged_in, "/effectiveness/")


def test_the_classification_is_reused_until_an_input_changes(owner: Any) -> None:
    from memory.selectors import classified

    rows = quadrant_store(owner)
    first = classified(owner)
    with CaptureQueriesContext(connection) as ctx:
        assert classified(owner) is first
    assert len(ctx.captured_queries) == 1  # the fingerprint only
    dd.with_outcomes(rows["noise"], surfaced=1, followed=6)  # noise becomes a hidden gem
    after = classified(owner)
    assert after is not first
    assert after.by_pk[rows["noise"].pk].quadrant == "hidden_gem"
    rows["working"].status = "retired"
    rows["working"].save()
    assert rows["working"].pk not in classified(owner).by_pk


def test_the_effectiveness_query_count_does_not_grow(logged_in: Client, owner: Any) -> None:
    quadrant_store(owner)
    small = count_queries(logged_in, "/effectiveness/")
    fragment = count_queries(logged_in, "/effectiveness/?quadrant=leech", htmx=True)
    quadrant_store(owner, extra=30)
    assert count_queries(logged_in, "/effectiveness/") == small == 6
    assert count_queries(logged_in, "/effectiveness/?quadrant=leech", htmx=True) == fragment == 4


# --- sessions --------------------------------------------------------------------------------


def test_sessions_list_full_page_and_fragment(logged_in: Client, owner: Any) -> None:
    a, b = dd.engram(owner, "Run pytest"), dd.engram(owner, "Write docs")
    session = dd.session_with(
        owner, [(a, "followed"), (b, "ignored")], task="Fix the flaky test", agent="claude"
    )
    Observation.objects.create(owner=owner, session=session, tool="Bash")
    full = get(logged_in, "/sessions/")
    row = full.split("Fix the flaky test")[1].split("</tr>")[0]
    numbers = [cell.split(">")[-1] for cell in row.split("</td>") if 'class="num"' in cell]
    assert numbers == ["2", "2", "1", "1"]  # injected, outcomes, followed, tool uses
    fragment = get(logged_in, "/sessions/", htmx=True)
    assert fragment.lstrip().startswith('<div id="rows">') and "Fix the flaky test" in fragment


def test_sessions_page_with_a_cursor(logged_in: Client, owner: Any) -> None:
    now = timezone.now()
    for n in range(30):
        dd.session_with(owner, [], task=f"Task {n:02d}", started_at=now - timedelta(minutes=n))
    first = get(logged_in, "/sessions/")
    assert "Task 00" in first and "Task 24" in first and "Task 25" not in first
    cursor = first.split('rel="next"')[0].rsplit("cursor=", 1)[1].split('"')[0]
    second = get(logged_in, f"/sessions/?cursor={cursor}", htmx=True)
    assert "Task 25" in second and "Task 29" in second and "Task 24" not in second


def test_session_detail_full_page_and_injections_fragment(logged_in: Client, owner: Any) -> None:
    a, b = dd.engram(owner, "Run pytest"), dd.engram(owner, "Write docs")
    session = dd.session_with(owner, [(a, "followed"), (b, None)], task="Fix the flaky test")
    full = get(logged_in, f"/sessions/{session.pk}/")
    assert "Fix the flaky test" in full and "matched a tool input" in full
    assert "after the session ends" in full  # b has no outcome yet
    fragment = get(logged_in, f"/sessions/{session.pk}/", htmx=True)
    assert fragment.lstrip().startswith('<div id="injections">')
    assert a.engram_id in fragment and b.engram_id in fragment


def test_an_empty_session_list_explains_sessions(logged_in: Client) -> None:
    assert "No sessions yet" in get(logged_in, "/sessions/")


def test_another_owners_session_is_not_found(logged_in: Client, other_owner: Any) -> None:
    session = dd.session_with(other_owner, [], task="Bob's task")
    get(logged_in, f"/sessions/{session.pk}/", status=HTTPStatus.NOT_FOUND)
    assert "Bob's task" not in get(logged_in, "/sessions/")


def test_the_sessions_query_count_does_not_grow(logged_in: Client, owner: Any) -> None:
    engrams = [dd.engram(owner) for _ in range(3)]
    session = dd.session_with(owner, [(e, "followed") for e in engrams])
    urls = ["/sessions/", f"/sessions/{session.pk}/"]
    small = [count_queries(logged_in, url) for url in urls]
    more = [dd.engram(owner) for _ in range(20)]
    for _ in range(10):
        dd.session_with(owner, [(e, "ignored") for e in more[:5]])
    for e in more:
        dd.session_with(owner, [(e, "followed")])
    assert (
        [count_queries(logged_in, url) for url in urls] == small == [4, 6]
    )  # the detail page also reads what was learned


# --- episodes --------------------------------------------------------------------------------


def test_episodes_full_page_fragment_and_filters(logged_in: Client, owner: Any) -> None:
    now = timezone.now()
    dd.episode(owner, "Deployed release 1.2", agent="claude", channel="cli", timestamp=now)
    dd.episode(owner, "Rolled back the migration", agent="codex", channel="ci", timestamp=now)
    dd.episode(owner, "Old note", agent="claude", timestamp=now - timedelta(days=40))
    full = get(logged_in, "/episodes/")
    assert "Deployed release 1.2" in full and '<option value="codex">' in full
    assert "Deployed" not in get(logged_in, "/episodes/?agent=codex", htmx=True)
    assert "Rolled back" not in get(logged_in, "/episodes/?channel=cli", htmx=True)
    assert "Deployed" in get(logged_in, "/episodes/?q=release", htmx=True)
    since = (now - timedelta(days=7)).date().isoformat()
    recent = get(logged_in, f"/episodes/?since={since}", htmx=True)
    assert "Old note" not in recent and "Deployed" in recent
    until = (now - timedelta(days=30)).date().isoformat()
    old = get(logged_in, f"/episodes/?until={until}", htmx=True)
    assert "Old note" in old and "Deployed" not in old


def test_a_backwards_range_is_an_error_by_the_field(logged_in: Client, owner: Any) -> None:
    dd.episode(owner, "Deployed release 1.2")
    response = logged_in.get("/episodes/?since=2026-03-10&until=2026-03-01")
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    body = response.content.decode()
    assert 'id="until-error"' in body and "Deployed" not in body.split('id="rows"')[1]
    bad_date = logged_in.get("/episodes/?since=yesterday", headers=HX)
    assert bad_date.status_code == HTTPStatus.UNPROCESSABLE_ENTITY


def test_episodes_page_with_a_cursor_and_explain_when_empty(logged_in: Client, owner: Any) -> None:
    assert "No episodes yet" in get(logged_in, "/episodes/")
    now = timezone.now()
    for n in range(27):
        dd.episode(owner, f"Step {n:02d}", timestamp=now - timedelta(minutes=n))
    first = get(logged_in, "/episodes/")
    cursor = first.split('rel="next"')[0].rsplit("cursor=", 1)[1].split('"')[0]
    second = get(logged_in, f"/episodes/?cursor={cursor}", htmx=True)
    assert "Step 25" in second and "Step 26" in second and "Step 24" not in second
    assert "No episode matches" in get(logged_in, "/episodes/?q=nothing", htmx=True)


def test_the_episodes_query_count_does_not_grow(logged_in: Client, owner: Any) -> None:
    for n in range(3):
        dd.episode(owner, f"Step {n}", agent="claude")
    small = count_queries(logged_in, "/episodes/?agent=claude")
    fragment = count_queries(logged_in, "/episodes/?agent=claude", htmx=True)
    for n in range(30):
        dd.episode(owner, f"More {n}", agent="claude", session=dd.session_with(owner, []))
    assert count_queries(logged_in, "/episodes/?agent=claude") == small == 6
    assert count_queries(logged_in, "/episodes/?agent=claude", htmx=True) == fragment == 3
