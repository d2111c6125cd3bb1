"""The dashboard in a real browser: log in, search, review, quadrants, no console errors."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory.models import Engram, LifecycleEvent, ReviewItem
from tests.memory import dashboard_data as dd

# Playwright's sync API runs an event loop; the ORM calls in these tests are synchronous.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "alice-pass-123"


@pytest.fixture
def store(owner: Any) -> dict[str, Any]:
    """A small store with something on every page."""
    working = dd.engram(
        owner, "Run pytest with -x before every commit", tags=["tests", "ci"], real=True
    )
    dd.with_outcomes(working, surfaced=20, followed=16, ignored=4)
    leech = dd.engram(owner, "Write a docstring for every private helper")
    dd.with_outcomes(leech, surfaced=15, followed=1, ignored=9)
    gem = dd.engram(owner, "Pin the Postgres image to a major version")
    dd.with_outcomes(gem, surfaced=2, followed=5, ignored=1)
    noise = dd.engram(owner, "Prefer tabs in Makefiles")
    dd.with_outcomes(noise, surfaced=1, ignored=6)
    for surfaced in (3, 4, 5):  # too few outcomes to classify, but they set the median (3)
        dd.with_outcomes(dd.engram(owner), surfaced=surfaced, followed=1)
    candidate = dd.candidate(owner, "Use uv to install Python dependencies")
    contradiction = dd.pair(
        owner, ReviewItem.Kind.CONTRADICTION, "Always squash merge", "Never squash merge"
    )
    fading = dd.fading(owner, "Restart the dev server after changing settings")
    session = dd.session_with(
        owner,
        [(working, "followed"), (leech, "ignored")],
        task="Fix the flaky test",
        agent="claude",
    )
    dd.episode(owner, "Deployed release 1.2 to staging", agent="claude", channel="cli")
    return {
        "working": working,
        "candidate": candidate,
        "contradiction": contradiction,
        "fading": fading,
        "session": session,
    }


@pytest.fixture
def page(browser: Any, live_server: Any, owner: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=live_server.url)
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    errors: list[str] = []
    tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.goto("/login/")
    tab.fill("#id_username", owner.username)
    tab.fill("#id_password", PASSWORD)
    tab.click("button[type=submit]")
    tab.wait_for_url(f"{live_server.url}/")
    yield tab
    context.close()
    assert errors == [], errors


def shot(tab: Any, folder: Path, name: str) -> None:
    tab.wait_for_load_state("networkidle")
    tab.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def test_every_page_renders_without_console_errors(
    page: Any, store: dict[str, Any], screenshots: Path
) -> None:
    page.goto("/")
    page.wait_for_selector("#health table")  # the lazily loaded health panel
    assert page.locator("h1").inner_text() == "Overview"
    shot(page, screenshots, "01-overview")
    working = store["working"]
    for name, url in [
        ("02-engrams", "/engrams/"),
        ("03-engram-detail", f"/engrams/{working.engram_id}/"),
        ("04-review", "/review/"),
        ("05-effectiveness", "/effectiveness/"),
        ("06-sessions", "/sessions/"),
        ("07-session-detail", f"/sessions/{store['session'].pk}/"),
        ("08-episodes", "/episodes/"),
        ("09-history", "/history/"),
        ("10-tokens", "/tokens/"),
        ("11-settings", "/settings/"),
    ]:
        response = page.goto(url)
        assert response.status == 200, url
        shot(page, screenshots, name)
    page.goto(f"/engrams/{working.engram_id}/#edit")
    assert page.locator("details#edit").get_attribute("open") is not None
    shot(page, screenshots, "12-engram-edit")


def test_search_and_open_an_engram(page: Any, store: dict[str, Any], screenshots: Path) -> None:
    page.goto("/engrams/")
    page.keyboard.press("/")  # the shortcut focuses the search box
    page.keyboard.type("pytest before commit")
    # The live search swaps the results in and pushes its query to the address bar.
    page.wait_for_url("**/engrams/?q=pytest*")
    page.locator("#results", has_text="ranked by relevance").wait_for()
    row = page.locator("#results a", has_text=store["working"].engram_id)
    shot(page, screenshots, "13-search")
    row.click()
    page.wait_for_url(f"**/engrams/{store['working'].engram_id}/")
    assert "Run pytest with -x" in page.locator("h1").inner_text()
    assert page.locator("svg.chart path.past").count() == 1


def test_review_approve_resolve_and_defer(
    page: Any, store: dict[str, Any], screenshots: Path
) -> None:
    page.goto("/review/")
    candidate = page.locator(f"#item-{store['candidate'].pk}")
    candidate.locator(".statement").click()  # select it, then decide with the keyboard
    page.keyboard.press("a")
    page.locator(f"#item-{store['candidate'].pk}.decided").wait_for()
    assert "Approved" in page.locator(f"#item-{store['candidate'].pk}").inner_text()
    assert page.locator(".review-item.current").count() == 1  # the next item is selected

    contradiction = page.locator(f"#item-{store['contradiction'].pk}")
    assert contradiction.locator(".pair .side").count() == 2  # side by side
    contradiction.get_by_role("button", name="Keep new").click()
    page.locator(f"#item-{store['contradiction'].pk}.decided").wait_for()

    page.locator(f"#item-{store['fading'].pk}").get_by_role("button", name="Defer").click()
    page.locator(f"#item-{store['fading'].pk}.decided").wait_for()
    assert "3 decided" in page.locator("#review-summary").inner_text()
    shot(page, screenshots, "14-review-decided")

    assert Engram.objects.get(pk=store["candidate"].engram_id).status == "active"
    contra = ReviewItem.objects.get(pk=store["contradiction"].pk)
    assert contra.decision == "keep_new"
    assert contra.other is not None and contra.other.status == "retired"
    fading = ReviewItem.objects.get(pk=store["fading"].pk)
    assert fading.state == "deferred" and fading.deferred_until is not None
    assert LifecycleEvent.objects.filter(event="review_decided").count() == 3


def test_the_quadrant_plot_links_to_engrams(
    page: Any, store: dict[str, Any], screenshots: Path
) -> None:
    page.goto("/effectiveness/")
    plot = page.locator("svg.scatter")
    assert plot.locator("circle.dot").count() == 4
    assert plot.locator("line.quadrant-line").count() == 2
    for label in ("Working", "Leech", "Hidden Gem", "Noise"):
        assert plot.locator("text.quadrant-label", has_text=label).count() == 1
    assert page.locator("#quadrant-working").get_by_text(store["working"].engram_id).count() == 1
    page.locator("svg.scatter circle.q-working").click()
    page.wait_for_url(f"**/engrams/{store['working'].engram_id}/")
