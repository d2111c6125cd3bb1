"""Typed builders for exchange tests: keys, abstracts, signed packets, and row counts."""

from __future__ import annotations

import hashlib
import itertools
from datetime import datetime
from typing import Any

from django.utils import timezone

from exchange import crypto, packet
from exchange.models import Packet, PacketItem, Peer
from memory.models import Engram, LifecycleEvent, ReviewItem
from memory.services.review import abstract_create
from tests.memory.helpers import make_engram

_serial = itertools.count(1)

# Distinct lessons, far apart in meaning, so no two are convergent duplicates of each other.
LESSONS = (
    "Run database migrations inside a transaction so a failure leaves no partial schema.",
    "Pin third-party dependency versions in a lock file to make builds reproducible.",
    "Write the failing test first, then the smallest change that makes it pass.",
    "Log the request id with every error so one user's problem can be traced end to end.",
    "Keep secrets out of the repository; read them from the environment at startup.",
    "Name branches after the issue they fix so reviewers find the context quickly.",
    "Prefer composition over inheritance when behaviour varies along several axes.",
    "Set explicit timeouts on every outbound HTTP call so one slow service cannot hang us.",
    "Measure before optimising: profile the slow path instead of guessing where time goes.",
    "Document every public command-line flag in the tool's help text.",
)


class Key:
    """A deterministic Ed25519 key for a test peer."""

    def __init__(self, seed: str) -> None:
        self.private = hashlib.sha256(seed.encode()).digest()
        self.public = crypto.public_key_from_private(self.private)
        self.key_id = crypto.key_id(self.public)
        self.public_b64 = crypto.b64encode(self.public)


ALICE = Key("alice-installation")
BOB = Key("bob-installation")


def abstract_item(statement: str | None = None, **overrides: Any) -> dict[str, object]:
    """One valid abstract for a packet (fitness 0.6 declared, well within its ceiling)."""
    n = next(_serial)
    item: dict[str, object] = {
        "id": f"ABS-2026-0301-{n:03d}",
        "statement": statement or LESSONS[n % len(LESSONS)],
        "structure": "When X happens, do Y, because Z.",
        "applies_when": "Working on a service with a database.",
        "instances": [{"domain": "backend", "derivation_count": 3}],
        "exchange_metadata": {
            "fitness_score": 0.6,
            "environmental_diversity": 2,
            "total_derivations": 3,
            "adoption_count": 3,
            "contradiction_rate": 0.1,
        },
        "provenance": {"origin": ALICE.key_id, "chain": [ALICE.key_id]},
        "license": "CC0-1.0",
    }
    item.update(overrides)
    return item


def signed(
    abstracts: list[dict[str, object]],
    *,
    key: Key = ALICE,
    name: str = "alice",
    now: datetime | None = None,
) -> dict[str, object]:
    """A packet signed by `key`."""
    return packet.build_packet(
        sender_name=name,
        private_raw=key.private,
        public_raw=key.public,
        abstracts=abstracts,
        now=now or timezone.now(),
    )


def wire(data: dict[str, object]) -> bytes:
    return packet.serialize_packet(data)


def make_abstract(
    owner: Any,
    *,
    statement: str = "Run schema changes in a transaction.",
    visibility: str = Engram.Visibility.PUBLIC,
    sources: int = 2,
) -> Engram:
    """An ABS- engram written through the review service from `sources` fresh concrete engrams."""
    concrete = [
        make_engram(owner, statement=f"{statement} (case {next(_serial)})", scope=f"project:p{i}")
        for i in range(sources)
    ]
    return abstract_create(
        owner=owner,
        sources=concrete,
        statement=statement,
        structure="Wrap each change so it commits or rolls back as one.",
        applies_when="Changing a database schema.",
        visibility=visibility,
        actor="test",
    )


def trust(owner: Any, key: Key = ALICE) -> Peer:
    from exchange.services.peers import peer_add

    return peer_add(owner=owner, public_key=key.public_b64, name="test peer")


def counts() -> dict[str, int]:
    """Rows of every table an import may write."""
    return {
        "packets": Packet.objects.count(),
        "items": PacketItem.objects.count(),
        "peers": Peer.objects.count(),
        "engrams": Engram.objects.count(),
        "events": LifecycleEvent.objects.count(),
        "reviews": ReviewItem.objects.count(),
    }
