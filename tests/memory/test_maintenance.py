"""Maintenance: one proposal per engram from its quadrant, applied by one review decision."""

from __future__ import annotations

import io
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from memory.models import (
    AgentSession,
    Engram,
    Event,
    Injection,
    LearningDraft,
    LearningSignal,
    LifecycleEvent,
    Outcome,
    ReviewItem,
)
from memory.services import maintenance, review
from tests.memory.helpers import make_engram

pytestmark = pytest.mark.django_db


def counts(engram: Engram, **values: int) -> Engram:
    Engram.objects.filter(pk=engram.pk).update(**values)
    engram.refresh_from_db()
    return engram


def prompts(owner: Any, engram: Engram, result: str, texts: list[str]) -> None:
    for n, text in enumerate(texts):
        session = AgentSession.objects.create(owner=owner, session_id=f"{engram.pk}-{result}-{n}")
        injection = Injection.objects.create(
            owner=owner, session=session, engram=engram, bucket="directive", query=text
        )
        Outcome.objects.create(
            owner=owner, injection=injection, engram=engram, result=result, source="auto-heuristic"
        )


@pytest.fixture
def store(owner: Any) -> dict[str, Engram]:
    """One engram per quadrant (surfaced median 1), and one mostly irrelevant."""
    old = timezone.now() - timedelta(days=120)
    working = counts(
        make_engram(owner, statement="Run the migrations before the tests"),
        surfaced=20,
        followed=8,
        ignored=2,
        updated_at=old,
    )
    leech = make_engram(
        owner,
        statement="Pin dependency versions",
        trigger_context="pip install",
        extra={"anti_pattern": "unpinned requirements"},
    )
    leech = counts(leech, surfaced=20, followed=1, contradicted=5)
    gem = counts(
        make_engram(owner, statement="Tag every build with semver"), surfaced=1, followed=5
    )
    noise = counts(make_engram(owner, statement="Prefer tabs in YAML"), surfaced=1, ignored=5)
    stray = counts(
        make_engram(owner, statement="Use the billing sandbox key"), surfaced=1, irrelevant=5
    )
    prompts(owner, gem, "followed", ["cut the release for the mobile app", "mobile release notes"])
    prompts(
        owner,
        stray,
        "irrelevant",
        [
            "fix the docs typo in readme",
            "readme docs layout",
            "docs: link the readme",
            "readme badges",
            "move the docs",
        ],
    )
    return {"working": working, "leech": leech, "gem": gem, "noise": noise, "stray": stray}


def proposals(owner: Any) -> dict[str, ReviewItem]:
    items = ReviewItem.objects.filter(owner=owner, kind="maintenance").select_related("engram")
    return {item.engram.statement: item for item in items}


def test_each_quadrant_gets_its_concrete_change_without_a_key(owner: Any, store: Any) -> None:
    made = maintenance.maintain(owner=owner)
    assert len(made) == 5
    by = proposals(owner)
    working = by[store["working"].statement].payload
    assert working["change"] == "staleness_review"
    leech = by[store["leech"].statement].payload
    assert leech["change"] == "rewrite" and leech["producer"] == "heuristic"
    assert leech["fields"]["statement"] == (
        "When pip install: Pin dependency versions; never unpinned requirements."
    )
    assert leech["before"]["statement"] == "Pin dependency versions"
    assert leech["evidence"]["quadrant"] == "leech" and leech["evidence"]["outcomes"] == 6
    gem = by[store["gem"].statement].payload
    assert gem["change"] == "broaden"
    assert {"mobile", "release"} <= set(gem["fields"]["tags"])
    assert by[store["noise"].statement].payload["change"] == "retire"
    stray = by[store["stray"].statement].payload
    assert stray["change"] == "refine_keywords"
    assert any("readme" in c and "docs" in c for c in stray["fields"]["contraindications"])
    assert LifecycleEvent.objects.filter(event=Event.MAINTENANCE_PROPOSED).count() == 5


def test_claude_writes_the_rewrite_and_the_keywords_when_a_key_is_set(
    owner: Any, store: Any, fake_claude: Any
) -> None:
    fake_claude.on("maintenance.rewrite", lambda body: {"statement": "Always pin exact versions."})
    fake_claude.on("maintenance.broaden", lambda body: {"keywords": ["versioning", "changelog"]})
    fake_claude.on("maintenance.refine", lambda body: {"keywords": ["documentation"]})
    maintenance.maintain(owner=owner)
    by = proposals(owner)
    leech = by[store["leech"].statement].payload
    assert (leech["fields"]["statement"], leech["producer"]) == (
        "Always pin exact versions.",
        "llm",
    )
    assert by[store["gem"].statement].payload["fields"]["tags"][-2:] == ["versioning", "changelog"]
    assert by[store["stray"].statement].payload["fields"]["contraindications"] == [
        "not for: documentation"
    ]
    prompt = fake_claude.prompt_of(fake_claude.calls("maintenance.broaden")[0])
    assert "mobile release notes" in prompt


def test_irrelevant_where_only_the_brief_carried_it_is_not_narrowed(owner: Any) -> None:
    """The brief delivers by scope: keywords cannot narrow it, so no refine proposal; five
    irrelevant deliveries chosen by prompts' words are what narrowing needs."""
    engram = counts(
        make_engram(owner, statement="Exit with status 1 on any error"), surfaced=9, irrelevant=9
    )
    for n in range(9):
        session = AgentSession.objects.create(owner=owner, session_id=f"brief-{n}")
        injection = Injection.objects.create(
            owner=owner, session=session, engram=engram, bucket="brief", query=""
        )
        Outcome.objects.create(
            owner=owner, injection=injection, engram=engram, result="irrelevant", source="auto"
        )
    assert maintenance.maintain(owner=owner) == []
    prompts(owner, engram, "irrelevant", [f"style the login page {n}" for n in range(5)])
    Engram.objects.filter(pk=engram.pk).update(irrelevant=14)
    (item,) = maintenance.maintain(owner=owner)
    assert item.payload["change"] == "refine_keywords"
    assert item.payload["fields"]["contraindications"] == ["not for: style, login, page"]


def test_broaden_reads_the_prompts_of_the_sessions_it_was_followed_in(owner: Any) -> None:
    gem = counts(make_engram(owner, statement="Tag every build"), surfaced=1, followed=5)
    for n in range(5):
        session = AgentSession.objects.create(
            owner=owner, session_id=f"gem-{n}", prompts=[f"ship the android release {n}"]
        )
        injection = Injection.objects.create(
            owner=owner, session=session, engram=gem, bucket="brief", query=""
        )
        Outcome.objects.create(
            owner=owner, injection=injection, engram=gem, result="followed", source="auto"
        )
    (item,) = maintenance.maintain(owner=owner)
    assert item.payload["change"] == "broaden"
    assert {"android", "release", "ship"} <= set(item.payload["fields"]["tags"])


def test_a_second_run_makes_nothing_new(owner: Any, store: Any) -> None:
    assert len(maintenance.maintain(owner=owner)) == 5
    assert maintenance.maintain(owner=owner) == []
    assert ReviewItem.objects.filter(kind="maintenance").count() == 5


def test_no_proposal_for_an_engram_with_fewer_than_five_outcomes(owner: Any) -> None:
    counts(make_engram(owner, statement="A"), surfaced=30, contradicted=4)
    counts(make_engram(owner, statement="B"), surfaced=0)
    assert maintenance.maintain(owner=owner) == []


def test_a_rejected_proposal_waits_30_days_unless_the_counts_move(owner: Any, store: Any) -> None:
    maintenance.maintain(owner=owner)
    item = proposals(owner)[store["noise"].statement]
    review.review_decide(owner=owner, item=item, action="reject", actor="person:alice")
    assert maintenance.maintain(owner=owner) == []
    counts(store["noise"], ignored=9)  # 4 more outcomes: not enough
    assert maintenance.maintain(owner=owner) == []
    counts(store["noise"], ignored=10)  # 5 more: a new proposal
    assert [i.engram_id for i in maintenance.maintain(owner=owner)] == [store["noise"].pk]
    fresh = ReviewItem.objects.get(state="pending", engram=store["noise"])
    review.review_decide(owner=owner, item=fresh, action="reject", actor="person:alice")
    assert maintenance.maintain(owner=owner) == []
    later = timezone.now() + timedelta(days=31)  # the rejection is forgotten after 30 days
    assert [i.engram_id for i in maintenance.maintain(owner=owner, now=later)] == [
        store["noise"].pk
    ]


def test_approving_applies_the_change_and_keeps_the_old_text(owner: Any, store: Any) -> None:
    maintenance.maintain(owner=owner)
    by = proposals(owner)
    review.review_decide(
        owner=owner, item=by[store["leech"].statement], action="approve", actor="person:alice"
    )
    leech = Engram.objects.get(pk=store["leech"].pk)
    assert leech.statement.startswith("When pip install: Pin dependency versions")
    update = LifecycleEvent.objects.get(engram=leech, event="engram_updated")
    assert update.data["changes"]["statement"][0] == "Pin dependency versions"
    review.review_decide(
        owner=owner, item=by[store["noise"].statement], action="approve", actor="person:alice"
    )
    assert Engram.objects.get(pk=store["noise"].pk).status == "retired"
    review.review_decide(
        owner=owner, item=by[store["gem"].statement], action="approve", actor="person:alice"
    )
    assert "mobile" in Engram.objects.get(pk=store["gem"].pk).tags


def delivered(
    owner: Any,
    engram: Engram,
    results: list[str],
    *,
    when: Any = None,
    evidence: str = "",
    bucket: str = "directive",
) -> None:
    """Outcomes of sessions the engram was delivered in (one injection each, in `bucket`)."""
    for n, result in enumerate(results):
        session = AgentSession.objects.create(
            owner=owner, session_id=f"d-{engram.pk}-{AgentSession.objects.count()}-{n}"
        )
        injection = Injection.objects.create(
            owner=owner, session=session, engram=engram, bucket=bucket
        )
        Outcome.objects.create(
            owner=owner,
            injection=injection,
            engram=engram,
            result=result,
            source="auto-heuristic",
            evidence=evidence or f"ran {result} in {session.session_id}",
            created_at=when or timezone.now(),
        )


def test_escalation_then_automatic_deescalation_after_three_good_windows(owner: Any) -> None:
    leech = counts(
        make_engram(owner, statement="Pin dependency versions"),
        surfaced=20,
        followed=1,
        contradicted=5,
    )
    delivered(owner, leech, ["followed"] + ["contradicted"] * 5, evidence="pip install requests")
    counts(make_engram(owner, statement="Other"), surfaced=0)
    counts(make_engram(owner, statement="Third"), surfaced=0)
    maintenance.maintain(owner=owner)
    item = proposals(owner)[leech.statement]
    assert item.payload["change"] == "escalate"  # nothing to make explicit: the next level
    review.review_decide(owner=owner, item=item, action="approve", actor="person:alice")
    leech.refresh_from_db()
    assert leech.enforcement == "emphasised"
    assert leech.pre_escalation_effectiveness == pytest.approx(1 / 6)
    escalated = LifecycleEvent.objects.get(event="engram_escalated")
    session = AgentSession.objects.create(owner=owner, session_id="after")
    for week in range(3):
        for n in range(2):
            injection = Injection.objects.create(
                owner=owner, session=session, engram=leech, bucket="directive"
            )
            Outcome.objects.create(
                owner=owner,
                injection=injection,
                engram=leech,
                result="followed",
                source="auto-heuristic",
                created_at=escalated.created_at + timedelta(days=7 * week + 1 + n),
            )
    maintenance.maintain(owner=owner, now=escalated.created_at + timedelta(days=14, hours=1))
    leech.refresh_from_db()
    assert leech.enforcement == "emphasised"  # only two complete windows so far
    maintenance.maintain(owner=owner, now=escalated.created_at + timedelta(days=21, hours=1))
    leech.refresh_from_db()
    assert leech.enforcement == "advisory"
    event = LifecycleEvent.objects.get(event="engram_deescalated")
    assert event.data["windows"] == [1.0, 1.0, 1.0]


def test_the_review_queue_over_rest(api: Client, owner: Any, store: Any) -> None:
    maintenance.maintain(owner=owner)
    body = api.get("/api/v1/review?kind=maintenance").json()
    assert body["total"] == 5
    leech = next(i for i in body["items"] if i["engram_id"] == store["leech"].engram_id)
    assert leech["proposed"]["change"] == "rewrite"
    assert leech["evidence"]["quadrant"] == "leech"
    assert leech["actions"] == ["defer", "approve", "reject", "retire"]
    bad = api.post(
        f"/api/v1/review/{leech['id']}/decide", {"action": "merge"}, content_type="application/json"
    )
    assert bad.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert bad.json()["details"] == {"field": "action"}
    ok = api.post(
        f"/api/v1/review/{leech['id']}/decide",
        {"action": "approve", "statement": "Pin exact versions in requirements."},
        content_type="application/json",
    )
    assert ok.status_code == HTTPStatus.OK and ok.json()["state"] == "done"
    assert (
        Engram.objects.get(pk=store["leech"].pk).statement == "Pin exact versions in requirements."
    )
    again = api.post(
        f"/api/v1/review/{leech['id']}/decide",
        {"action": "approve"},
        content_type="application/json",
    )
    assert again.status_code == HTTPStatus.CONFLICT
    assert api.get("/api/v1/review?kind=maintenance").json()["total"] == 4
    assert (
        api.post(
            "/api/v1/review/999999/decide", {"action": "defer"}, content_type="application/json"
        ).status_code
        == HTTPStatus.NOT_FOUND
    )
    done = api.post(
        "/api/v1/review/decide-all", {"action": "defer"}, content_type="application/json"
    )
    assert done.status_code == HTTPStatus.OK and done.json()["decided"] >= 1


def test_another_owner_sees_none_of_the_queue(other_api: Client, owner: Any, store: Any) -> None:
    maintenance.maintain(owner=owner)
    assert other_api.get("/api/v1/review").json() == {"items": [], "total": 0}
    item = ReviewItem.objects.filter(kind="maintenance").first()
    assert item is not None
    response = other_api.post(
        f"/api/v1/review/{item.pk}/decide", {"action": "approve"}, content_type="application/json"
    )
    assert response.status_code == HTTPStatus.NOT_FOUND


def test_the_command_prints_what_it_proposed(owner: Any, store: Any) -> None:
    out = io.StringIO()
    call_command("engram_maintain", "--owner", owner.username, stdout=out)
    text = out.getvalue()
    assert "5 new maintenance proposals" in text
    assert store["leech"].engram_id in text and "rewrite" in text
    out = io.StringIO()
    call_command("engram_maintain", stdout=out)
    assert "0 new maintenance proposals" in out.getvalue()


def test_the_review_page_shows_the_proposed_diff(logged_in: Client, owner: Any, store: Any) -> None:
    maintenance.maintain(owner=owner)
    page = logged_in.get("/review/").content.decode()
    assert "Maintenance proposals" in page
    assert "<del>Pin dependency versions</del>" in page
    assert (
        "<ins>When pip install: Pin dependency versions; never unpinned requirements.</ins>" in page
    )


@pytest.mark.django_db(transaction=True)
def test_the_review_tools_over_mcp(owner: Any, store: Any, token: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    import anyio

    from memory.integrations import mcp
    from memory.models import ApiToken

    maintenance.maintain(owner=owner)
    server = mcp.build_server(ApiToken.authenticate(token))

    def call(name: str, arguments: dict[str, Any]) -> Any:
        async def run() -> Any:
            return await server.call_tool(name, arguments)

        # In a thread of its own: an earlier test (Playwright) may leave an event loop running
        # in this one.
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(anyio.run, run).result().structured_content

    listed = call("review_list", {"kind": "maintenance"})
    assert listed["total"] == 5
    noise = next(i for i in listed["items"] if i["engram_id"] == store["noise"].engram_id)
    decided = call("review_decide", {"item_id": noise["id"], "action": "approve"})
    assert decided["state"] == "done"
    assert Engram.objects.get(pk=store["noise"].pk).status == "retired"
    with pytest.raises(Exception, match="already_decided"):
        call("review_decide", {"item_id": noise["id"], "action": "approve"})


def test_the_engram_page_says_why_it_is_where_it_is(
    logged_in: Client, owner: Any, store: Any
) -> None:
    leech = counts(store["leech"], learned_at=timezone.now() - timedelta(days=30))
    session = AgentSession.objects.create(owner=owner, session_id="weeks")
    for day in (1, 2, 9):
        injection = Injection.objects.create(
            owner=owner, session=session, engram=leech, bucket="directive"
        )
        Outcome.objects.create(
            owner=owner,
            injection=injection,
            engram=leech,
            result="followed",
            source="auto-heuristic",
            created_at=leech.learned_at + timedelta(days=day),
        )
    Engram.objects.filter(pk=leech.pk).update(
        enforcement="emphasised", pre_escalation_effectiveness=0.2
    )
    from memory.services.events import event_record

    event_record(
        owner=owner,
        event=Event.ENGRAM_ESCALATED,
        engram=leech,
        actor="person:alice",
        data={"from": "advisory", "to": "emphasised"},
    )
    page = logged_in.get(f"/engrams/{leech.engram_id}/", follow=True)
    body = page.content.decode()
    assert "Effectiveness per week" in body and 'aria-labelledby="eff-title"' in body
    assert "escalated advisory → emphasised" in body
    assert "back down after 3 weeks" in body


# --- a lesson, delivered evidence, the user's own rules and the reminder rung ----------------


def leech_of(owner: Any, statement: str, **fields: Any) -> Engram:
    engram = counts(
        make_engram(owner, statement=statement, **fields), surfaced=20, followed=1, contradicted=5
    )
    for n in range(2):
        counts(make_engram(owner, statement=f"Filler rule number {n} for the median"), surfaced=0)
    return engram


@pytest.mark.parametrize(
    ("statement", "reason"),
    [
        ("Let me look at the failing test first.", "assistant text"),
        ("Can you fix the flaky test in the parser?", "a question"),
        ("Fix the login bug in auth.py", "a one-off request"),
    ],
)
def test_a_statement_that_is_no_lesson_gets_one_proposal_to_retire_it(
    owner: Any, statement: str, reason: str
) -> None:
    engram = leech_of(owner, statement)
    delivered(owner, engram, ["followed"] + ["contradicted"] * 5)
    made = maintenance.maintain(owner=owner)
    assert [m.engram_id for m in made] == [engram.pk]
    payload = made[0].payload
    assert payload["change"] == "not_a_lesson" and payload["fields"] == {"status": "retired"}
    assert made[0].reason.startswith("Not a lesson: retire.")
    assert reason.lower() in made[0].reason.lower()
    assert maintenance.maintain(owner=owner) == []  # one proposal, not one a day
    review.review_decide(owner=owner, item=made[0], action="approve", actor="person:alice")
    engram.refresh_from_db()
    assert engram.status == "retired"


@pytest.mark.parametrize(
    "statement",
    [
        "use relative paths in scripts",
        "Always run pytest with -x",
        "Restart the dev server after changing settings",
        "don't touch the implementation while exploring the data",
    ],
)
def test_a_stored_lesson_without_its_marker_is_still_a_lesson(statement: str) -> None:
    assert maintenance.lesson_of(statement) == ""


def test_a_lesson_whose_quote_states_a_rule_is_a_lesson() -> None:
    assert maintenance.lesson_of("Tag releases with semver") != ""
    quote = "From now on always tag releases with semver"
    assert maintenance.lesson_of("Tag releases with semver", quote=quote) == ""


def test_escalation_needs_five_outcomes_where_it_applied(owner: Any) -> None:
    """Irrelevant outcomes are not evidence that a rule is being ignored: emphasising it would
    push it into more sessions it does not apply to."""
    engram = leech_of(owner, "Pin dependency versions")
    delivered(owner, engram, ["irrelevant"] * 8 + ["ignored"] * 3 + ["followed"])
    assert maintenance.maintain(owner=owner) == []
    delivered(owner, engram, ["ignored"])
    (item,) = maintenance.maintain(owner=owner)
    assert item.payload["change"] == "escalate"


@pytest.mark.parametrize("source", ["user", "agent"])
def test_a_rule_that_never_applied_is_offered_for_retirement_only_when_learned(
    owner: Any, source: str
) -> None:
    """Delivered in 15 sessions by the brief, never followed, irrelevant in most: a learned rule
    is proposed for retirement; one the user stated (a style, a release rule with no occasion
    yet) gets nothing, and never a rewrite or emphasis either."""
    engram = leech_of(owner, "Always log open questions in the tracker", source=source)
    results = ["irrelevant"] * 12 + ["ignored"] * 2
    for n, result in enumerate(results):
        session = AgentSession.objects.create(owner=owner, session_id=f"never-{n}")
        injection = Injection.objects.create(
            owner=owner, session=session, engram=engram, bucket="brief", query=""
        )
        Outcome.objects.create(
            owner=owner, injection=injection, engram=engram, result=result, source="auto"
        )
    Engram.objects.filter(pk=engram.pk).update(followed=0, irrelevant=12, ignored=2, contradicted=0)
    made = maintenance.maintain(owner=owner)
    assert made == [], [m.payload for m in made]  # 14 sessions: not yet
    delivered(owner, engram, ["irrelevant"])
    Engram.objects.filter(pk=engram.pk).update(irrelevant=13)
    made = maintenance.maintain(owner=owner)
    if source == "user":
        assert made == [], [m.payload for m in made]
        return
    (item,) = made
    assert item.payload["change"] == "retire" and item.payload["fields"] == {"status": "retired"}
    assert item.reason.startswith("Learned, never followed in the 15 sessions")
    assert "did not apply in 13" in item.reason


def test_a_stated_rule_the_brief_carries_and_the_agent_misses_where_it_applies_is_emphasised(
    owner: Any,
) -> None:
    """Mostly irrelevant because the brief carries it into every session (narrowing keywords
    would change nothing), but where it applied it was missed: that is what emphasis is for."""
    engram = leech_of(owner, "Use the strong types instead of strings wherever you can")
    results = ["irrelevant"] * 14 + ["ignored"] * 5 + ["followed"]
    delivered(owner, engram, results, evidence="added a string field", bucket="brief")
    Engram.objects.filter(pk=engram.pk).update(followed=1, irrelevant=14, ignored=5, contradicted=0)
    (item,) = maintenance.maintain(owner=owner)
    assert item.payload["change"] == "escalate"
    assert item.payload["fields"] == {"enforcement": "emphasised"}
    assert item.payload["evidence"]["delivered_outcomes"] == 20
    assert len(item.payload["evidence"]["quotes"]) == 3
    assert item.reason.startswith(
        "Delivered in 20 sessions, it applied in 6 and was followed in 1 of them: escalate"
    )


def test_a_prohibitions_evidence_says_how_often_it_was_broken_not_that_it_was_never_followed(
    owner: Any,
) -> None:
    """Keeping "Never X" leaves nothing in the tool calls: the heuristic's "ignored" is no miss,
    and the proposal says how often it was broken instead of "followed in 0"."""
    engram = leech_of(owner, "Never force-push to a shared branch", polarity="dont")
    delivered(owner, engram, ["ignored"] * 4 + ["contradicted"], evidence="git push -f origin dev")
    (item,) = maintenance.maintain(owner=owner)
    assert item.payload["change"] == "escalate"
    assert item.reason.startswith(
        "Delivered in 5 sessions, it applied in 5 and was broken in 1 of them (a rule against "
        "an action leaves no trace when kept): escalate"
    )


def test_escalation_needs_five_outcomes_from_sessions_it_was_delivered_in(owner: Any) -> None:
    # The counters say leech, but only 4 outcomes come from sessions it was delivered in.
    engram = leech_of(owner, "Pin dependency versions")
    delivered(owner, engram, ["contradicted"] * 4, evidence="pip install requests")
    assert maintenance.maintain(owner=owner) == []
    delivered(owner, engram, ["ignored"], evidence="ran pip install flask unpinned")
    (item,) = maintenance.maintain(owner=owner)
    evidence = item.payload["evidence"]
    assert item.payload["change"] == "escalate" and evidence["delivered_outcomes"] == 5
    # the counts behind it, in words a person decides on
    assert item.reason.startswith(
        "Delivered in 5 sessions, it applied in 5 and was followed in 0 of them: escalate"
    )
    assert len(evidence["quotes"]) == 3
    assert evidence["quotes"][0]["evidence"] == "ran pip install flask unpinned"
    assert all(q["session"] for q in evidence["quotes"])
    html = Client()
    html.force_login(owner)
    page = html.get("/review/").content.decode()
    assert "ran pip install flask unpinned" in page


def noise_of(owner: Any, statement: str, source: str, followed: int, ignored: int) -> Engram:
    engram = counts(
        make_engram(owner, statement=statement, source=source),
        surfaced=1,
        followed=followed,
        ignored=ignored,
    )
    delivered(owner, engram, ["followed"] * followed + ["ignored"] * ignored)
    return engram


def test_retiring_a_rule_you_stated_needs_stronger_evidence(owner: Any) -> None:
    counts(make_engram(owner, statement="Filler rule one for the median"), surfaced=5)
    counts(make_engram(owner, statement="Filler rule two for the median"), surfaced=5)
    inferred = noise_of(owner, "Prefer tabs in every Makefile", "agent", 1, 5)
    yours = noise_of(owner, "Prefer spaces in every YAML file", "user", 1, 5)
    made = {m.engram_id: m for m in maintenance.maintain(owner=owner)}
    assert made[inferred.pk].payload["change"] == "retire"
    assert yours.pk not in made  # 6 outcomes: enough to retire a guess, not what you said
    # Fifteen outcomes, one followed: below USER_RETIRE_MAX_EFFECTIVENESS (0.1) → proposed,
    # when it mostly did not apply where it came.
    counts(yours, followed=1, ignored=5, irrelevant=9)
    delivered(owner, yours, ["irrelevant"] * 9)
    (item,) = maintenance.maintain(owner=owner)
    assert item.engram_id == yours.pk and item.payload["change"] == "retire"
    assert "Stored from your words as a rule" in item.reason
    assert item.payload["evidence"]["stated_by"] == "you"


def test_a_rule_you_stated_that_applied_in_half_its_sessions_is_emphasised_not_retired(
    owner: Any,
) -> None:
    """Followed once in the 9 of 18 sessions where it applied: as often applied as not, the
    agent misses it; retiring it would act against what you said."""
    counts(make_engram(owner, statement="Filler rule one for the median"), surfaced=5)
    counts(make_engram(owner, statement="Filler rule two for the median"), surfaced=5)
    yours = noise_of(owner, "Use table-driven tests for the parser cases", "user", 1, 8)
    counts(yours, irrelevant=9)
    delivered(owner, yours, ["irrelevant"] * 9)
    (item,) = maintenance.maintain(owner=owner)
    assert item.engram_id == yours.pk
    assert item.payload["change"] == "escalate"


def test_a_rule_you_stated_that_applied_but_was_ignored_is_emphasised_not_retired(
    owner: Any,
) -> None:
    counts(make_engram(owner, statement="Filler rule one for the median"), surfaced=5)
    counts(make_engram(owner, statement="Filler rule two for the median"), surfaced=5)
    yours = noise_of(owner, "Prefer spaces in every YAML file", "user", 1, 14)
    (item,) = maintenance.maintain(owner=owner)
    assert item.engram_id == yours.pk
    assert item.payload["change"] == "escalate"  # the fallback rewrite changes nothing here
    assert item.payload["fields"] == {"enforcement": "emphasised"}


def test_a_rule_you_stated_that_applied_often_and_was_never_followed_is_not_retired(
    owner: Any,
) -> None:
    """Never followed in the 7 of 15 sessions where it applied: the agent misses it, however
    often it did not apply elsewhere. A hedged line with the same counts is no such rule."""
    counts(make_engram(owner, statement="Filler rule one for the median"), surfaced=5)
    counts(make_engram(owner, statement="Filler rule two for the median"), surfaced=5)
    yours = noise_of(owner, "Prefer subagents for research tasks", "user", 0, 7)
    counts(yours, irrelevant=8)
    delivered(owner, yours, ["irrelevant"] * 8)
    hedge = noise_of(owner, "I'm most interested in keeping the docs current", "user", 0, 7)
    counts(hedge, irrelevant=8)
    delivered(owner, hedge, ["irrelevant"] * 8)
    made = {m.engram_id: m.payload["change"] for m in maintenance.maintain(owner=owner)}
    assert made[yours.pk] == "escalate"
    assert made[hedge.pk] in ("retire", "not_a_lesson")  # retired either way, never emphasised


def test_an_escalated_engram_still_below_for_three_windows_gets_a_reminder_proposal(
    owner: Any,
) -> None:
    leech = leech_of(owner, "Pin dependency versions")
    delivered(owner, leech, ["followed"] + ["contradicted"] * 5, evidence="pip install requests")
    (first,) = maintenance.maintain(owner=owner)
    assert first.payload["change"] == "escalate"
    assert first.payload["fields"] == {"enforcement": "emphasised"}
    review.review_decide(owner=owner, item=first, action="approve", actor="person:alice")
    escalated = LifecycleEvent.objects.get(event="engram_escalated").created_at
    for week in range(3):  # each window: 0 of 2 followed, below the 1/6 before escalating
        delivered(
            owner, leech, ["ignored", "contradicted"], when=escalated + timedelta(days=7 * week + 1)
        )
    counts(leech, ignored=3, contradicted=8)  # the counters the attribution keeps
    assert maintenance.maintain(owner=owner, now=escalated + timedelta(days=14, hours=1)) == []
    (item,) = maintenance.maintain(owner=owner, now=escalated + timedelta(days=21, hours=1))
    assert item.payload["change"] == "escalate"
    assert item.payload["fields"] == {"enforcement": "reminder"}
    assert "Still below" in item.reason
    review.review_decide(owner=owner, item=item, action="approve", actor="person:alice")
    leech.refresh_from_db()
    assert leech.enforcement == "reminder"
    assert leech.pre_escalation_effectiveness == pytest.approx(1 / 6)  # the first baseline
    later = escalated + timedelta(days=60)
    assert maintenance.maintain(owner=owner, now=later) == []  # the top rung: nothing further


def test_a_stored_request_to_record_a_rule_is_rewritten_to_the_rule_it_carries(owner: Any) -> None:
    engram = make_engram(
        owner, statement="Create a rule that says always run make lint before pushing."
    )
    (item,) = maintenance.maintain(owner=owner)  # no outcomes needed: the words are the fault
    assert item.engram_id == engram.pk
    assert item.payload["change"] == "rewrite" and item.payload["producer"] == "heuristic"
    assert item.payload["fields"] == {"statement": "Always run make lint before pushing."}
    assert maintenance.maintain(owner=owner) == []
    review.review_decide(owner=owner, item=item, action="approve", actor="person:alice")
    engram.refresh_from_db()
    assert engram.statement == "Always run make lint before pushing."
    assert maintenance.maintain(owner=owner) == []


def test_an_ignored_request_to_record_a_rule_is_rewritten_not_emphasised(owner: Any) -> None:
    """A leech by its outcomes: emphasising "add a rule to CLAUDE.md to …" would only ask the
    agent louder to write the rule again; the rule it carries is the change to make."""
    engram = make_engram(
        owner,
        statement="Add a rule to CLAUDE.md to check whether a new feature needs an integration "
        "test.",
    )
    delivered(owner, engram, ["followed"] + ["ignored"] * 6, evidence="no test added")
    (item,) = maintenance.maintain(owner=owner)
    assert item.payload["change"] == "rewrite"
    assert item.payload["fields"] == {
        "statement": "Check whether a new feature needs an integration test."
    }


def test_the_fallback_rewrite_of_an_ignored_request_is_the_rule_inside() -> None:
    assert (
        maintenance.rewrite_fallback(
            "Create a skill that makes sure, whenever docs change, the sitemap is updated.", "", ""
        )
        == "Whenever docs change, the sitemap is updated."
    )


def asked_in(owner: Any, engram: Engram, prompts_by_session: list[list[str]]) -> None:
    """Later sessions the engram was delivered in (and ignored), with the person's prompts."""
    for said in prompts_by_session:
        delivered(owner, engram, ["ignored"], evidence="git commit -m wip")
        session = AgentSession.objects.filter(injections__engram=engram).latest("pk")
        AgentSession.objects.filter(pk=session.pk).update(prompts=said)


def test_a_rule_the_person_later_asked_against_is_offered_for_retirement_not_emphasis(
    owner: Any, logged_in: Client
) -> None:
    """ "Do not commit anything", then "commit and push" in later sessions: emphasising the rule
    would act against what the person now asks; one proposal, retire, with their prompts."""
    engram = leech_of(owner, "Do not commit anything.", source="user")
    delivered(owner, engram, ["ignored"] * 4, evidence="git commit -m wip")
    asked_in(owner, engram, [["fix the flaky test", "commit and push"], ["can you commit this?"]])
    (item,) = maintenance.maintain(owner=owner)
    assert item.payload["action"] == "asked_against"
    assert item.payload["change"] == "retire"
    quotes = item.payload["evidence"]["quotes"]
    assert [q["evidence"] for q in quotes] == ["can you commit this?", "commit and push"]
    assert {q["result"] for q in quotes} == {"asked for it"}
    assert item.reason.startswith("You later asked for what it rules out, in 2 sessions")
    page = logged_in.get("/review/").content.decode()
    assert '<span class="pill">asked for it</span> <q>commit and push</q>' in page
    review.review_decide(owner=owner, item=item, action="approve", actor="person:alice")
    assert Engram.objects.get(pk=engram.pk).status == "retired"
    retired = LifecycleEvent.objects.get(engram=engram, event=Event.ENGRAM_RETIRED)
    assert retired.data["reason"] == "you later asked for what it rules out"


def test_one_later_request_or_one_in_the_rule_s_own_session_is_an_exception(owner: Any) -> None:
    engram = leech_of(owner, "Do not commit anything.", source="user")
    delivered(owner, engram, ["ignored"] * 4, evidence="git commit -m wip")
    asked_in(
        owner, engram, [["commit and push"], ["don't commit yet", "do we need a commit hook?"]]
    )
    # The same request in the session the rule was learned in is that task's own instruction.
    learned = AgentSession.objects.filter(injections__engram=engram).latest("pk")
    AgentSession.objects.filter(pk=learned.pk).update(prompts=["ok now commit"])
    signal = LearningSignal.objects.create(
        owner=owner, session=learned, kind="prompt", text="Do not commit anything."
    )
    LearningDraft.objects.create(
        owner=owner,
        signal=signal,
        session=learned,
        engram=engram,
        statement=engram.statement,
        tier="A",
    )
    (item,) = maintenance.maintain(owner=owner)
    assert item.payload["change"] == "escalate"


def test_an_open_proposal_to_emphasise_it_is_withdrawn_when_the_person_asks_against_it(
    owner: Any,
) -> None:
    engram = leech_of(owner, "Do not commit anything.", source="user")
    delivered(owner, engram, ["ignored"] * 5, evidence="git commit -m wip")
    (emphasis,) = maintenance.maintain(owner=owner)
    assert emphasis.payload["change"] == "escalate"
    asked_in(owner, engram, [["commit and push"], ["commit"]])
    (retire,) = maintenance.maintain(owner=owner)
    assert retire.payload["action"] == "asked_against"
    emphasis.refresh_from_db()
    assert (emphasis.state, emphasis.decision) == ("done", "withdrawn")
    assert list(ReviewItem.objects.filter(owner=owner, kind="maintenance", state="pending")) == [
        retire
    ]
    assert maintenance.maintain(owner=owner) == []  # one open proposal; nothing twice


def test_a_proposal_to_retire_it_already_waiting_is_not_replaced_every_day(owner: Any) -> None:
    # A question, asked against later: "not a lesson: retire" both times, opened once.
    engram = leech_of(owner, "Don't commit the changes?", source="user")
    delivered(owner, engram, ["ignored"] * 4, evidence="git commit -m wip")
    asked_in(owner, engram, [["commit and push"], ["commit"]])
    (item,) = maintenance.maintain(owner=owner)
    assert item.payload["change"] == "not_a_lesson"
    assert maintenance.maintain(owner=owner) == []
    item.refresh_from_db()
    assert item.state == "pending"
