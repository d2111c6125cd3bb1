"""Concurrent learns of one statement leave one live engram (the live-hash constraint and the
write path's retry as a recurrence), on the real database."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from memory.errors import Conflict
from memory.models import Engram, Event, LifecycleEvent
from memory.services.engrams import engram_learn, engram_update
from memory.services.interop import engrams_import
from tests.memory.helpers import behind_uncommitted
from tests.memory.test_interop import PLUR_YAML

STATEMENT = "Always run the migrations check before committing."


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_four_concurrent_learns_of_one_statement_leave_one_live_engram() -> None:
    owner = get_user_model().objects.create_user(username="racer", password="racer-pass-1")
    barrier = threading.Barrier(4)
    outcomes: list[str] = []
    errors: list[BaseException] = []

    def learn() -> None:
        try:
            barrier.wait(timeout=30)
            result = engram_learn(owner=owner, statement=STATEMENT, scope="project:shop")
            outcomes.append(result.outcome)
        except BaseException as exc:  # reported below, in the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=learn) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    live = Engram.objects.filter(owner=owner).exclude(status="retired")
    assert live.count() == 1
    assert sorted(outcomes).count("recurrence") == 3
    recurrences = LifecycleEvent.objects.filter(owner=owner, event=Event.RECURRENCE_DETECTED)
    assert recurrences.count() == 3


@pytest.mark.django_db
def test_a_statement_learned_twice_in_sequence_is_a_recurrence(owner: Any) -> None:
    first = engram_learn(owner=owner, statement=STATEMENT, scope="project:shop")
    again = engram_learn(owner=owner, statement=STATEMENT, scope="project:shop")
    assert (first.outcome, again.outcome) == ("created", "recurrence")
    assert again.engram.pk == first.engram.pk


@pytest.mark.django_db
def test_editing_an_engram_into_a_live_duplicate_is_a_conflict(owner: Any) -> None:
    engram_learn(owner=owner, statement=STATEMENT, scope="project:shop")
    other = engram_learn(
        owner=owner, statement="Use pnpm in this repository.", scope="project:shop"
    )
    with pytest.raises(Conflict):
        engram_update(owner=owner, engram=other.engram, changes={"statement": STATEMENT})
    other.engram.refresh_from_db()
    assert other.engram.statement == "Use pnpm in this repository."
    assert Engram.objects.filter(owner=owner).exclude(status="retired").count() == 2


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_file_import_racing_a_learn_of_one_of_its_statements_skips_it_as_a_duplicate() -> None:
    owner = get_user_model().objects.create_user(username="racer", password="racer-pass-1")
    statement = "Run the migration linter before committing schema changes."
    learned, report = behind_uncommitted(
        lambda: engram_learn(owner=owner, statement=statement, scope="project:billing").engram,
        lambda: engrams_import(owner=owner, text=PLUR_YAML, fmt="plur-yaml"),
    )
    assert (report.total, report.created, report.duplicates) == (3, 2, 1)
    assert "ENG-2026-0129-001" not in report.ids
    live = Engram.objects.filter(owner=owner).exclude(status="retired")
    assert live.count() == 3
    assert set(live.values_list("engram_id", flat=True)) == {learned.engram_id, *report.ids}
    assert LifecycleEvent.objects.filter(owner=owner, event=Event.ENGRAM_CREATED).count() == 3
