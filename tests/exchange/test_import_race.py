"""An import whose new candidate collides with a concurrent learn of the same statement: the
live-hash constraint refuses the insert, and the item becomes a duplicate of the learned engram
(the rest of the packet imports), on the real database."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction

from exchange.models import PacketItem
from exchange.services.incoming import ImportResult, packet_import
from memory.models import Engram
from memory.services.engrams import engram_learn
from tests.exchange.helpers import LESSONS, abstract_item, signed, trust, wire

WAIT = 60  # seconds; a bound so a broken test fails instead of hanging


def _blocked_backends() -> int:
    """Backends of this database waiting on a lock (the import's insert, behind the learn)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return int(cursor.fetchone()[0])


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_import_racing_a_learn_of_the_same_statement_makes_a_duplicate() -> None:
    owner = get_user_model().objects.create_user(username="racer", password="racer-pass-1")
    trust(owner)
    learned = threading.Event()
    release = threading.Event()
    found: dict[str, Any] = {}
    errors: list[BaseException] = []

    def learn() -> None:
        # Holds its new row uncommitted until the import is blocked behind it on the index.
        try:
            with transaction.atomic():
                found["learned"] = engram_learn(owner=owner, statement=LESSONS[0]).engram
                learned.set()
                assert release.wait(WAIT)
        except BaseException as exc:  # reported below, in the main thread
            errors.append(exc)
            learned.set()
        finally:
            connection.close()

    def receive() -> None:
        try:
            items = [abstract_item(LESSONS[0]), abstract_item(LESSONS[1])]
            found["result"] = packet_import(owner=owner, raw=wire(signed(items)))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    learner = threading.Thread(target=learn)
    learner.start()
    assert learned.wait(WAIT)
    receiver = threading.Thread(target=receive)
    receiver.start()
    for _ in range(WAIT * 20):
        if _blocked_backends() or not receiver.is_alive():
            break
        threading.Event().wait(0.05)
    release.set()
    learner.join(WAIT)
    receiver.join(WAIT)
    assert errors == []
    result: ImportResult = found["result"]
    local: Engram = found["learned"]
    assert result.status == "accepted"
    duplicate, accepted = result.items
    assert (duplicate.result, duplicate.engram) == ("duplicate", local.engram_id)
    assert accepted.result == "accepted"
    assert Engram.objects.filter(owner=owner).exclude(status="retired").count() == 2
    assert PacketItem.objects.filter(owner=owner).count() == 2
    local.refresh_from_db()
    assert local.derivation_count == 2
