"""The daily review engine: batches, calibration, decisions per kind, abstraction, approval rate."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from memory.errors import DomainError
from memory.models import Engram, LifecycleEvent, OwnerSettings, ReviewItem
from memory.services import review
from tests.memory import dashboard_data as dd

pytestmark = pytest.mark.django_db

K = ReviewItem.Kind


def at(owner: Any, days: float = 0, hour: int = 10) -> datetime:
    """A moment `days` after the owner joined, at a fixed hour (local time)."""
    joined = timezone.localtime(owner.date_joined)
    return (joined + timedelta(days=days)).replace(hour=hour, minute=0, second=0, microsecond=0)


def real_items(batch: review.Batch) -> list[ReviewItem]:
    return [i for i in batch.items if i.kind != K.CALIBRATION]


def calibration_of(batch: review.Batch) -> ReviewItem:
    return next(i for i in batch.items if i.kind == K.CALIBRATION)


def decide(owner: Any, item: ReviewItem, action: str, **kw: Any) -> ReviewItem:
    return review.review_decide(owner=owner, item=item, action=action, actor="person:alice", **kw)


# --- batch ------------------------------------------------------------------------------------


def test_the_batch_is_15_in_the_first_two_weeks_then_5(owner: Any) -> None:
    for n in range(20):
        dd.candidate(owner, f"Candidate lesson {n}")
    first = review.review_batch(owner=owner, now=at(owner, days=1))
    assert first.size == 15 and len(first.items) == 15
    assert len(real_items(first)) == 14
    later = review.review_batch(owner=owner, now=at(owner, days=20))
    assert later.size == 5 and len(later.items) == 5


@pytest.mark.sqlite
def test_the_batch_size_setting_wins(owner: Any) -> None:
    OwnerSettings.objects.create(owner=owner, review_batch_size=3)
    for n in range(6):
        dd.candidate(owner, f"Candidate lesson {n}")
    batch = review.review_batch(owner=owner, now=at(owner, days=1))
    assert batch.size == 3
    assert len(batch.items) == 3
    assert batch.waiting == 4


def test_the_batch_is_stable_across_reloads_and_shuffled_per_day(owner: Any) -> None:
    items = [dd.candidate(owner, f"Candidate lesson {n}") for n in range(12)]
    now = at(owner, days=1)
    first = [i.pk for i in review.review_batch(owner=owner, now=now).items]
    again = [i.pk for i in review.review_batch(owner=owner, now=now + timedelta(hours=3)).items]
    assert first == again
    created_order = [i.pk for i in items]
    assert [pk for pk in first if pk in created_order] != sorted(
        pk for pk in first if pk in created_order
    )


@pytest.mark.sqlite
def test_deciding_does_not_pull_in_a_new_item_the_same_day(owner: Any) -> None:
    OwnerSettings.objects.create(owner=owner, review_batch_size=3)
    for n in range(6):
        dd.candidate(owner, f"Candidate lesson {n}")
    now = at(owner, days=20)
    batch = review.review_batch(owner=owner, now=now)
    decide(owner, real_items(batch)[0], "approve", now=now)
    after = review.review_batch(owner=owner, now=now + timedelta(minutes=5))
    assert len(after.items) == 2
    assert after.decided == 1
    tomorrow = review.review_batch(owner=owner, now=now + timedelta(days=1))
    assert len(tomorrow.items) == 3


def test_one_calibration_item_per_batch_and_none_for_an_empty_queue(owner: Any) -> None:
    assert review.review_batch(owner=owner, now=at(owner, days=1)).items == []
    assert not ReviewItem.objects.filter(kind=K.CALIBRATION).exists()
    dd.candidate(owner, "Use uv to install dependencies")
    batch = review.review_batch(owner=owner, now=at(owner, days=1))
    assert [i.kind for i in batch.items].count(K.CALIBRATION) == 1
    review.review_batch(owner=owner, now=at(owner, days=1, hour=15))
    assert ReviewItem.objects.filter(kind=K.CALIBRATION).count() == 1
    # It sits among the candidates, looking like one.
    assert [s.kind for s in batch.sections] == [K.CANDIDATE]


def test_calibration_reuses_a_retired_engram_and_reject_is_right(owner: Any) -> None:
    retired = dd.engram(owner, "Use Python 2.7 for new scripts", status=Engram.Status.RETIRED)
    dd.candidate(owner, "Use uv to install dependencies")
    now = at(owner, days=1)
    item = calibration_of(review.review_batch(owner=owner, now=now))
    assert item.engram == retired
    assert item.payload["statement"] == retired.statement
    decide(owner, item, "reject", now=now)
    event = LifecycleEvent.objects.get(event="review_decided")
    assert event.data["correct"] is True
    assert event.engram is None  # the retired engram's history does not give the game away
    assert review.approval_rate(owner=owner, now=now).calibration_right == 1


def test_approving_a_calibration_item_is_recorded_wrong_and_changes_nothing(owner: Any) -> None:
    retired = dd.engram(owner, "Use Python 2.7 for new scripts", status=Engram.Status.RETIRED)
    dd.candidate(owner, "Use uv to install dependencies")
    now = at(owner, days=1)
    item = calibration_of(review.review_batch(owner=owner, now=now))
    decide(owner, item, "approve", now=now)
    retired.refresh_from_db()
    assert retired.status == Engram.Status.RETIRED
    rate = review.approval_rate(owner=owner, now=now)
    assert (rate.calibration_right, rate.calibration_total) == (0, 1)


def test_without_retired_engrams_the_calibration_is_an_obsolete_statement(owner: Any) -> None:
    dd.candidate(owner, "Use uv to install dependencies")
    item = calibration_of(review.review_batch(owner=owner, now=at(owner, days=1)))
    assert item.engram is None
    assert item.payload["statement"] in review.OBSOLETE_STATEMENTS


@pytest.mark.sqlite
def test_an_undecided_calibration_expires_the_next_day(owner: Any) -> None:
    dd.candidate(owner, "Use uv to install dependencies")
    first = calibration_of(review.review_batch(owner=owner, now=at(owner, days=1)))
    second = calibration_of(review.review_batch(owner=owner, now=at(owner, days=2)))
    first.refresh_from_db()
    assert first.state == ReviewItem.State.DONE and first.decision == "expired"
    assert second.pk != first.pk


@pytest.mark.sqlite
def test_auto_defer_defers_yesterdays_leftovers_with_an_event(owner: Any) -> None:
    OwnerSettings.objects.create(owner=owner, auto_defer=True, review_batch_size=5)
    items = [dd.candidate(owner, f"Candidate lesson {n}") for n in range(3)]
    review.review_batch(owner=owner, now=at(owner, days=1))
    review.review_batch(owner=owner, now=at(owner, days=2))
    for item in items:
        item.refresh_from_db()
        assert item.state == ReviewItem.State.DEFERRED
        assert item.deferred_until is not None and item.deferred_until > at(owner, days=2)
    events = LifecycleEvent.objects.filter(event="review_decided", actor=review.AUTO_DEFER_ACTOR)
    assert events.count() == 3
    # Auto-deferred items are not the person's decisions: the approval rate ignores them.
    assert review.approval_rate(owner=owner, now=at(owner, days=2)).judged == 0
    assert len(real_items(review.review_batch(owner=owner, now=at(owner, days=3)))) == 3


def test_without_auto_defer_leftovers_stay_open(owner: Any) -> None:
    item = dd.candidate(owner, "Use uv to install dependencies")
    review.review_batch(owner=owner, now=at(owner, days=1))
    batch = review.review_batch(owner=owner, now=at(owner, days=2))
    item.refresh_from_db()
    assert item.state == ReviewItem.State.PENDING
    assert item in real_items(batch)


# --- candidates -------------------------------------------------------------------------------


def test_approving_a_candidate_activates_it_with_events(owner: Any) -> None:
    item = dd.candidate(owner, "Use uv to install dependencies")
    decide(owner, item, "approve")
    item.refresh_from_db()
    assert item.state == ReviewItem.State.DONE and item.decision == "approve"
    assert item.decided_by == owner and item.decided_at is not None
    assert item.engram is not None and item.engram.status == Engram.Status.ACTIVE
    events = list(LifecycleEvent.objects.values_list("event", flat=True).order_by("pk"))
    assert events == ["engram_promoted", "review_decided"]
    decided = LifecycleEvent.objects.get(event="review_decided")
    assert decided.data == {"item": item.pk, "kind": "candidate", "action": "approve"}


def test_rejecting_a_candidate_retires_it(owner: Any) -> None:
    item = dd.candidate(owner, "Use uv to install dependencies")
    decide(owner, item, "reject")
    item.refresh_from_db()
    assert item.engram is not None and item.engram.status == Engram.Status.RETIRED
    assert item.decision == "reject" and item.state == ReviewItem.State.DONE


def test_editing_a_candidate_updates_then_approves(owner: Any) -> None:
    item = dd.candidate(owner, "Use uv to install dependencies")
    decide(owner, item, "edit", edits={"statement": "Use uv, not pip, to install dependencies"})
    engram = Engram.objects.get(pk=item.engram_id)
    assert engram.statement == "Use uv, not pip, to install dependencies"
    assert engram.status == Engram.Status.ACTIVE and engram.version == 2
    assert {"engram_updated", "engram_promoted", "review_decided"} <= set(
        LifecycleEvent.objects.values_list("event", flat=True)
    )


def test_a_bad_edit_changes_nothing(owner: Any) -> None:
    item = dd.candidate(owner, "Use uv to install dependencies")
    with pytest.raises(DomainError) as info:
        decide(owner, item, "edit", edits={"statement": "   "})
    assert info.value.details == {"field": "statement"}
    item.refresh_from_db()
    assert item.state == ReviewItem.State.PENDING
    assert item.engram is not None and item.engram.status == Engram.Status.CANDIDATE
    assert not LifecycleEvent.objects.exists()


def test_defer_brings_the_item_back_tomorrow(owner: Any) -> None:
    item = dd.candidate(owner, "Use uv to install dependencies")
    now = at(owner, days=1)
    review.review_batch(owner=owner, now=now)
    decide(owner, item, "defer", now=now)
    item.refresh_from_db()
    assert item.state == ReviewItem.State.DEFERRED
    assert item.deferred_until == at(owner, days=2, hour=0)
    assert item not in review.review_batch(owner=owner, now=now + timedelta(hours=2)).items
    assert item in review.review_batch(owner=owner, now=at(owner, days=2)).items
    assert review.approval_rate(owner=owner, now=now).judged == 0  # a defer judges nothing


def test_an_unknown_action_and_a_decided_item_are_refused(owner: Any) -> None:
    item = dd.candidate(owner, "Use uv to install dependencies")
    with pytest.raises(DomainError) as info:
        decide(owner, item, "keep_new")
    assert info.value.kind == "invalid"
    decide(owner, item, "approve")
    with pytest.raises(DomainError) as again:
        decide(owner, item, "reject")
    assert again.value.kind == "conflict" and again.value.code == "already_decided"


def test_another_owners_item_is_not_found(owner: Any, other_owner: Any) -> None:
    item = dd.candidate(other_owner, "Use uv to install dependencies")
    with pytest.raises(DomainError) as info:
        decide(owner, item, "approve")
    assert info.value.kind == "not_found"


# --- contradictions and merges ---------------------------------------------------------------


def contradiction(owner: Any) -> ReviewItem:
    return dd.pair(owner, K.CONTRADICTION, "Always squash merge", "Never squash merge")


def test_keep_new_retires_the_old_and_activates_the_new(owner: Any) -> None:
    item = contradiction(owner)
    assert item.engram is not None and item.other is not None
    candidate_item = ReviewItem.objects.create(owner=owner, kind=K.CANDIDATE, engram=item.engram)
    decide(owner, item, "keep_new")
    new, old = Engram.objects.get(pk=item.engram.pk), Engram.objects.get(pk=item.other.pk)
    assert new.status == Engram.Status.ACTIVE and old.status == Engram.Status.RETIRED
    candidate_item.refresh_from_db()
    assert candidate_item.state == ReviewItem.State.DONE  # answered by the same decision


def test_keep_old_retires_the_new(owner: Any) -> None:
    item = contradiction(owner)
    decide(owner, item, "keep_old")
    assert Engram.objects.get(pk=item.engram_id).status == Engram.Status.RETIRED
    assert Engram.objects.get(pk=item.other_id).status == Engram.Status.ACTIVE
    item.refresh_from_db()
    assert item.decision == "keep_old" and item.state == ReviewItem.State.DONE


def test_merge_keeps_the_old_counts_a_derivation_and_records_engram_merged(owner: Any) -> None:
    item = contradiction(owner)
    decide(owner, item, "merge")
    old = Engram.objects.get(pk=item.other_id)
    assert old.derivation_count == 2 and old.status == Engram.Status.ACTIVE
    assert Engram.objects.get(pk=item.engram_id).status == Engram.Status.RETIRED
    merged = LifecycleEvent.objects.get(event="engram_merged")
    assert merged.engram == old and merged.data["merged"] == item.engram.engram_id


def test_a_merge_moves_counters_tags_and_links_to_the_survivor(owner: Any) -> None:
    from memory.models import Association

    item = contradiction(owner)
    new, old = item.engram, item.other
    assert new is not None and old is not None
    third = Engram.objects.exclude(pk__in=[new.pk, old.pk]).first() or old
    Engram.objects.filter(pk=new.pk).update(
        surfaced=4, followed=3, feedback_positive=2, tags=["ci"], derivation_count=2
    )
    Engram.objects.filter(pk=old.pk).update(surfaced=1, followed=1, tags=["lint"])
    if third.pk != old.pk:
        Association.objects.create(
            owner=owner, source=new, target=third, type="co_accessed", strength=0.3
        )
    decide(owner, item, "merge")
    survivor, loser = Engram.objects.get(pk=old.pk), Engram.objects.get(pk=new.pk)
    assert (survivor.surfaced, survivor.followed, survivor.feedback_positive) == (5, 4, 2)
    assert survivor.derivation_count == 3 and survivor.tags == ["lint", "ci"]
    assert loser.status == Engram.Status.RETIRED and loser.superseded_by_id == survivor.pk
    if third.pk != old.pk:
        assert Association.objects.filter(source=survivor, target=third).exists()
    assert not Association.objects.filter(source=loser).exists()
    merged = LifecycleEvent.objects.get(event="engram_merged")
    assert merged.data["counters"]["surfaced"] == 4


def test_both_valid_needs_both_contraindications(owner: Any) -> None:
    item = contradiction(owner)
    with pytest.raises(DomainError) as info:
        decide(owner, item, "both_valid", edits={"new_contraindication": "in monorepos"})
    assert info.value.details == {"field": "old_contraindication"}
    assert Engram.objects.get(pk=item.engram_id).contraindications == []
    assert not LifecycleEvent.objects.exists()
    decide(
        owner,
        item,
        "both_valid",
        edits={"new_contraindication": "in monorepos", "old_contraindication": "in libraries"},
    )
    new, old = Engram.objects.get(pk=item.engram_id), Engram.objects.get(pk=item.other_id)
    assert new.contraindications == ["in monorepos"] and old.contraindications == ["in libraries"]
    assert new.status == old.status == Engram.Status.ACTIVE


def test_merge_proposal_actions(owner: Any) -> None:
    merged = dd.pair(owner, K.MERGE, "Run the linter before commit", "Run linters before commit")
    kept = dd.pair(owner, K.MERGE, "Use ruff for linting", "Lint with ruff")
    rejected = dd.pair(owner, K.MERGE, "Format with black", "Use black to format")
    decide(owner, merged, "merge")
    decide(owner, kept, "keep_both")
    decide(owner, rejected, "reject")
    assert Engram.objects.get(pk=merged.other_id).derivation_count == 2
    assert Engram.objects.get(pk=kept.engram_id).status == Engram.Status.ACTIVE
    assert Engram.objects.get(pk=rejected.engram_id).status == Engram.Status.RETIRED
    assert Engram.objects.get(pk=rejected.other_id).derivation_count == 1


# --- fading -----------------------------------------------------------------------------------


def test_fading_actions(owner: Any) -> None:
    reinforce = dd.fading(owner, "Restart the dev server after changing settings")
    fade = dd.fading(owner, "Clear the cache after deploys")
    retire = dd.fading(owner, "Use the old CI runner")
    decide(owner, reinforce, "reinforce")
    decide(owner, fade, "let_fade")
    decide(owner, retire, "retire")
    woken = Engram.objects.get(pk=reinforce.engram_id)
    assert woken.status == Engram.Status.ACTIVE and woken.feedback_positive == 1
    left = Engram.objects.get(pk=fade.engram_id)
    assert left.status == Engram.Status.DORMANT and left.feedback_positive == 0
    assert Engram.objects.get(pk=retire.engram_id).status == Engram.Status.RETIRED
    assert LifecycleEvent.objects.filter(event="review_decided").count() == 3


# --- abstraction ------------------------------------------------------------------------------


@pytest.mark.sqlite
def test_abstraction_prompts_for_repeated_lessons_once(owner: Any) -> None:
    repeated = dd.engram(owner, "Run migrations before tests", derivation_count=3)
    a = dd.engram(owner, "Pin dependencies", scope="project:api")
    b = dd.engram(owner, "Pin dependencies", scope="project:web", content_hash=a.content_hash)
    dd.engram(owner, "A lesson seen once")
    assert review.abstraction_prompts_refresh(owner=owner) == 2
    assert review.abstraction_prompts_refresh(owner=owner) == 0
    prompts = {i.engram_id: i for i in ReviewItem.objects.filter(kind=K.ABSTRACTION)}
    assert set(prompts) == {repeated.pk, a.pk}
    assert prompts[a.pk].payload["sources"] == [a.engram_id, b.engram_id]
    assert prompts[a.pk].payload["scopes"] == ["project:api", "project:web"]


def test_writing_the_abstract_creates_an_abs_sibling(owner: Any) -> None:
    a = dd.engram(owner, "Pin dependencies", scope="project:api", tags=["deps"])
    dd.engram(owner, "Pin dependencies", scope="project:web", content_hash=a.content_hash)
    review.abstraction_prompts_refresh(owner=owner)
    item = ReviewItem.objects.get(kind=K.ABSTRACTION)
    decide(
        owner,
        item,
        "write",
        edits={
            "statement": "Pin every dependency to an exact version",
            "structure": "When installing X, pin X==version because upgrades break builds",
            "applies_when": "any project with third-party packages",
            "visibility": "public",
        },
    )
    abstract = Engram.objects.get(kind=Engram.Kind.ABSTRACT)
    assert abstract.engram_id.startswith("ABS-")
    assert abstract.status == Engram.Status.ACTIVE and abstract.visibility == "public"
    assert abstract.structure.startswith("When installing X")
    assert abstract.derived_from == item.payload["sources"]
    assert len(abstract.derived_from) == 2 and abstract.tags == ["deps"]
    assert abstract.embedding is not None
    assert set(
        Engram.objects.filter(kind=Engram.Kind.CONCRETE).values_list("abstract", flat=True)
    ) == {abstract.engram_id}
    decided = LifecycleEvent.objects.get(event="review_decided")
    assert decided.data["abstract"] == abstract.engram_id
    # An abstracted lesson is not prompted again.
    assert review.abstraction_prompts_refresh(owner=owner) == 0


def test_abstract_create_validates_like_every_write_path(owner: Any, other_owner: Any) -> None:
    mine = dd.engram(owner, "Pin dependencies")
    theirs = dd.engram(other_owner, "Pin dependencies")
    fields = {"statement": "Pin versions", "structure": "s", "applies_when": "always"}
    with pytest.raises(DomainError) as missing:
        review.abstract_create(owner=owner, sources=[mine], **{**fields, "structure": ""})
    assert missing.value.details == {"field": "structure"}
    with pytest.raises(DomainError) as foreign:
        review.abstract_create(owner=owner, sources=[theirs], **fields)
    assert foreign.value.details == {"field": "sources"}
    with pytest.raises(DomainError) as secret:
        review.abstract_create(
            owner=owner,
            sources=[mine],
            **{**fields, "statement": "Deploy with AKIA" + "IOSFODNN7ABCDEFG"},
        )
    assert secret.value.code == "secret_detected"
    assert not Engram.objects.filter(kind=Engram.Kind.ABSTRACT).exists()


def test_a_missing_abstract_field_leaves_the_prompt_open(owner: Any) -> None:
    dd.engram(owner, "Run migrations before tests", derivation_count=2)
    review.abstraction_prompts_refresh(owner=owner)
    item = ReviewItem.objects.get(kind=K.ABSTRACTION)
    with pytest.raises(DomainError) as info:
        decide(owner, item, "write", edits={"statement": "Migrate first", "structure": "x"})
    assert info.value.details == {"field": "applies_when"}
    item.refresh_from_db()
    assert item.state == ReviewItem.State.PENDING


# --- approval rate and bulk -------------------------------------------------------------------


def test_the_weekly_approval_rate_is_flagged_above_90_percent(owner: Any) -> None:
    items = [dd.candidate(owner, f"Candidate lesson {n}") for n in range(11)]
    now = timezone.now()
    for item in items[:10]:
        decide(owner, item, "approve")
    rate = review.approval_rate(owner=owner, now=now + timedelta(minutes=1))
    assert (rate.approvals, rate.judged, rate.rate) == (10, 10, 1.0)
    assert rate.flagged
    decide(owner, items[10], "reject")
    rate = review.approval_rate(owner=owner, now=now + timedelta(minutes=1))
    assert rate.rate == pytest.approx(10 / 11) and rate.flagged
    assert not review.approval_rate(owner=owner, now=now + timedelta(days=8)).judged


def test_a_few_approvals_are_shown_but_not_flagged(owner: Any) -> None:
    for n in range(3):
        decide(owner, dd.candidate(owner, f"Candidate lesson {n}"), "approve")
    rate = review.approval_rate(owner=owner)
    assert rate.rate == 1.0 and not rate.flagged


def test_approve_all_and_defer_all_act_on_todays_batch_only(owner: Any) -> None:
    OwnerSettings.objects.create(owner=owner, review_batch_size=4)
    for n in range(5):
        dd.candidate(owner, f"Candidate lesson {n}")
    contra = contradiction(owner)
    now = at(owner, days=1)
    batch = review.review_batch(owner=owner, now=now)
    in_batch = {i.pk for i in batch.items}
    approved = review.review_decide_all(owner=owner, action="approve", actor="p", now=now)
    assert approved == len([i for i in batch.items if "approve" in review.ACTIONS[i.kind]])
    outside = ReviewItem.objects.exclude(pk__in=in_batch).filter(kind=K.CANDIDATE)
    assert all(i.state == ReviewItem.State.PENDING for i in outside)
    if contra.pk in in_batch:  # a contradiction has no "approve": it stays for a real decision
        contra.refresh_from_db()
        assert contra.state == ReviewItem.State.PENDING
    remaining = len(review.review_batch(owner=owner, now=now).items)
    deferred = review.review_decide_all(owner=owner, action="defer", actor="p", now=now)
    assert deferred == remaining
    assert review.review_batch(owner=owner, now=now).items == []
    with pytest.raises(DomainError):
        review.review_decide_all(owner=owner, action="reject", actor="p", now=now)


def test_the_open_count_leaves_out_calibration_and_deferred_items(owner: Any) -> None:
    first = dd.candidate(owner, "Use uv to install dependencies")
    dd.candidate(owner, "Pin the Postgres image")
    review.review_batch(owner=owner)
    assert review.open_count(owner=owner) == 2
    decide(owner, first, "defer")
    assert review.open_count(owner=owner) == 1
