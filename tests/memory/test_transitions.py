"""State transitions live on the models: each returns early when already in the target state."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from memory.models import AgentSession, Engram, LifecycleEvent
from memory.services import engrams as engram_services
from tests.memory import dashboard_data as dd

pytestmark = pytest.mark.django_db


def test_retire_and_activate_return_the_state_they_left_once(owner: Any) -> None:
    engram = dd.engram(owner, "Use uv for installs")
    now = timezone.now()
    assert engram.retire(now=now) == "active"
    assert engram.retire(now=now + timedelta(days=1)) is None
    assert Engram.objects.get(pk=engram.pk).retired_at == now
    assert engram.activate(now=now) == "retired"
    assert engram.activate(now=now) is None
    assert Engram.objects.get(pk=engram.pk).retired_at is None


def test_services_record_one_event_per_real_transition(owner: Any) -> None:
    engram = dd.engram(owner, "Use uv for installs")
    assert engram_services.engram_retire(owner=owner, engram=engram) is True
    assert engram_services.engram_retire(owner=owner, engram=engram) is False
    assert engram_services.engram_activate(owner=owner, engram=engram) is True
    assert engram_services.engram_activate(owner=owner, engram=engram) is False
    events = list(LifecycleEvent.objects.order_by("pk").values_list("event", flat=True))
    assert events == ["engram_retired", "engram_promoted"]


def test_a_retired_engram_refuses_edits_in_the_service(owner: Any) -> None:
    from memory.errors import Conflict

    engram = dd.engram(owner, "Use uv for installs")
    engram.retire(now=timezone.now())
    with pytest.raises(Conflict) as caught:
        engram_services.engram_update(owner=owner, engram=engram, changes={"statement": "x"})
    assert caught.value.code == "engram_retired"


def test_an_edit_against_a_stale_version_is_refused(owner: Any) -> None:
    from memory.errors import Conflict

    engram = dd.engram(owner, "Use uv for installs")
    with pytest.raises(Conflict) as caught:
        engram_services.engram_update(
            owner=owner, engram=engram, changes={"domain": "py"}, expected_version=4
        )
    assert (caught.value.code, caught.value.details) == ("version_conflict", {"version": 1})


def test_reopening_a_session_clears_its_end_and_attribution_once(owner: Any) -> None:
    now = timezone.now()
    session = AgentSession.objects.create(
        owner=owner, session_id="s1", ended_at=now, attributed_at=now
    )
    assert session.reopen() is True
    assert session.reopen() is False
    stored = AgentSession.objects.get(pk=session.pk)
    assert (stored.ended_at, stored.attributed_at) == (None, None)
    stale = AgentSession.objects.get(pk=session.pk)
    stale.ended_at = now  # another process's stale copy: the conditional update does nothing
    assert stale.reopen() is False


def test_an_unknown_event_name_is_a_bug_not_a_row(owner: Any) -> None:
    from memory.services.events import event_record, events_record

    with pytest.raises(ValueError, match="not a lifecycle event"):
        event_record(owner=owner, event="engram_deleted")
    with pytest.raises(ValueError, match="not a lifecycle event"):
        events_record(owner, [("engram_created", None, {}), ("typo", None, {})])
    assert not LifecycleEvent.objects.exists()


def test_every_creation_path_builds_the_same_derived_fields(owner: Any) -> None:
    """Learn, import and abstract all go through one builder: hash, search text, model id."""
    from lib.embedder import MODEL_ID
    from memory.maths import textnorm
    from memory.services import interop, review
    from memory.services.engrams import engram_learn, search_text_of

    learned = engram_learn(owner=owner, statement="  Use uv for installs  ", scope="project:x")
    imported = interop.engrams_import(
        owner=owner,
        fmt="plur-yaml",
        text="engrams:\n  - id: ENG-2026-0101-001\n    statement: '  Pin every dependency  '\n",
    )
    abstract = review.abstract_create(
        owner=owner,
        sources=[learned.engram],
        statement="Use one package manager per repository",
        structure="tooling choice",
        applies_when="installing packages",
    )
    rows = [learned.engram, Engram.objects.get(engram_id="ENG-2026-0101-001"), abstract]
    assert imported.created == 1
    for row in rows:
        row.refresh_from_db()
        assert row.statement == row.statement.strip()
        assert row.content_hash == textnorm.content_hash(row.statement)
        assert row.search_text == search_text_of(row)
        assert row.embedding_model == MODEL_ID and row.embedding is not None


@pytest.mark.sqlite
def test_a_retired_engram_with_a_live_twin_cannot_come_back(owner: Any) -> None:
    from memory.errors import Conflict
    from memory.services.supersession import engram_restore

    old = engram_services.engram_learn(owner=owner, statement="Use uv for installs").engram
    engram_services.engram_retire(owner=owner, engram=old)
    twin = engram_services.engram_learn(owner=owner, statement="Use uv for installs").engram
    assert twin.pk != old.pk
    with pytest.raises(Conflict) as refused:
        engram_services.engram_activate(owner=owner, engram=old)
    assert refused.value.code == "duplicate"
    with pytest.raises(Conflict):
        engram_restore(owner=owner, engram=old, actor="person", now=timezone.now())
    old.refresh_from_db()
    assert (old.status, Engram.objects.exclude(status="retired").get()) == ("retired", twin)
