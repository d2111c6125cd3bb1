"""An import whose new candidate collides with a concurrent learn of the same statement: the
live-hash constraint refuses the insert, and the item becomes a duplicate of the learned engram
(the rest of the packet imports), on the real database."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from exchange.models import PacketItem
from exchange.services.incoming import packet_import
from memory.models import Engram
from memory.services.engrams import engram_learn
from tests.exchange.helpers import LESSONS, abstract_item, signed, trust, wire
from tests.memory.helpers import behind_uncommitted


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_import_racing_a_learn_of_the_same_statement_makes_a_duplicate() -> None:
    owner = get_user_model().objects.create_user(username="racer", password="racer-pass-1")
    trust(owner)
    raw = wire(signed([abstract_item(LESSONS[0]), abstract_item(LESSONS[1])]))
    learned, result = behind_uncommitted(
        lambda: engram_learn(owner=owner, statement=LESSONS[0]).engram,
        lambda: packet_import(owner=owner, raw=raw),
    )
    assert result.status == "accepted"
    duplicate, accepted = result.items
    assert (duplicate.result, duplicate.engram) == ("duplicate", learned.engram_id)
    assert accepted.result == "accepted"
    assert Engram.objects.filter(owner=owner).exclude(status="retired").count() == 2
    assert PacketItem.objects.filter(owner=owner).count() == 2
    learned.refresh_from_db()
    assert learned.derivation_count == 2
