"""Trials: at expiry reinforced imports go to review, the rest retire; idempotently."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from exchange.models import PacketItem
from exchange.services.incoming import packet_import
from exchange.services.trials import trials_expire
from exchange.tasks import expire_trials
from memory.models import Engram, LifecycleEvent, ReviewItem
from memory.services.engrams import engram_activate, engram_retire
from tests.exchange.helpers import LESSONS, abstract_item, signed, trust, wire

pytestmark = pytest.mark.django_db


def _import(owner: Any, n: int) -> list[Engram]:
    trust(owner)
    now = timezone.now()
    items = [abstract_item(LESSONS[i]) for i in range(n)]
    result = packet_import(owner=owner, raw=wire(signed(items, now=now)), now=now)
    return [Engram.objects.get(engram_id=item.engram) for item in result.items]


def _set(engram: Engram, **counters: int) -> None:
    Engram.objects.filter(pk=engram.pk).update(**counters)


def test_trial_expiry_promotes_the_reinforced_and_retires_the_rest(owner: Any) -> None:
    followed, positive, outweighed, silent = _import(owner, 4)
    _set(followed, followed=2)
    _set(positive, feedback_positive=1)
    _set(outweighed, followed=1, contradicted=1, feedback_negative=1)
    later = timezone.now() + timedelta(days=31)

    assert trials_expire(owner=owner, now=later) == {"promoted": 2, "retired": 2}

    for engram in (followed, positive):
        engram.refresh_from_db()
        assert engram.status == "candidate"
        review = ReviewItem.objects.get(engram=engram)
        assert (review.kind, review.state) == ("provisional", "pending")
    for engram in (outweighed, silent):
        engram.refresh_from_db()
        assert engram.status == "retired"
        assert not ReviewItem.objects.filter(engram=engram, state="pending").exists()
    outcomes = dict(
        LifecycleEvent.objects.filter(event="trial_ended").values_list("engram_ref", "data")
    )
    assert outcomes[followed.engram_id]["outcome"] == "promote"
    assert outcomes[silent.engram_id]["outcome"] == "retire"
    assert LifecycleEvent.objects.filter(event="engram_retired").count() == 2
    assert set(PacketItem.objects.values_list("trial", flat=True)) == {"promoted", "retired"}


def test_trial_expiry_is_idempotent(owner: Any) -> None:
    [engram] = _import(owner, 1)
    _set(engram, followed=1)
    later = timezone.now() + timedelta(days=31)
    assert trials_expire(owner=owner, now=later) == {"promoted": 1}
    events = LifecycleEvent.objects.count()
    assert trials_expire(owner=owner, now=later) == {}
    assert trials_expire(owner=owner, now=later + timedelta(days=5)) == {}
    assert ReviewItem.objects.filter(kind="provisional").count() == 1
    assert LifecycleEvent.objects.count() == events


def test_nothing_expires_before_thirty_days(owner: Any) -> None:
    _import(owner, 2)
    assert trials_expire(owner=owner, now=timezone.now() + timedelta(days=29)) == {}
    assert PacketItem.objects.filter(trial="on_trial").count() == 2


def test_a_person_decision_during_the_trial_is_kept(owner: Any) -> None:
    approved, dropped = _import(owner, 2)
    engram_activate(owner=owner, engram=approved)
    engram_retire(owner=owner, engram=dropped)
    trials_expire(owner=owner, now=timezone.now() + timedelta(days=31))
    approved.refresh_from_db()
    assert approved.status == "active"
    assert not ReviewItem.objects.filter(kind="provisional").exists()
    assert not LifecycleEvent.objects.filter(event="trial_ended").exists()


def test_the_trial_task_run_twice_does_nothing_the_second_time(owner: Any) -> None:
    [engram] = _import(owner, 1)
    Engram.objects.filter(pk=engram.pk).update(
        provisional_until=timezone.now() - timedelta(minutes=1)
    )
    assert expire_trials() == {"retired": 1}
    assert expire_trials() == {}


def test_a_trial_lesson_followed_in_a_session_is_promoted_at_expiry(owner: Any) -> None:
    from memory.services.retrieval import inject
    from memory.services.sessions import (
        observation_record,
        outcomes_attribute,
        session_end,
        session_start,
    )

    (lesson,) = _import(owner, 2)[1:]  # "Pin third-party dependency versions in a lock file …"
    session = session_start(owner=owner, session_id="trial-session")
    result = inject(
        owner=owner, prompt="How do I pin dependency versions in the lock file?", session=session
    )
    assert lesson.engram_id in [item["id"] for item in result.consider]
    observation_record(
        owner=owner,
        tool="Edit",
        tool_input={
            "file_path": "requirements.lock",
            "new_string": "# third-party dependency versions pinned for reproducible builds",
        },
        session=session,
    )
    session_end(owner=owner, session=session)
    outcomes_attribute(session_pk=session.pk)
    lesson.refresh_from_db()
    assert lesson.followed == 1

    later = timezone.now() + timedelta(days=31)
    assert trials_expire(owner=owner, now=later)["promoted"] == 1
    review = ReviewItem.objects.get(engram=lesson)
    assert (review.kind, review.state) == ("provisional", "pending")
