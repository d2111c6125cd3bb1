"""Reads for the exchange pages and API, each a fixed number of queries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from exchange.models import Packet, PacketItem, Peer
from memory.models import Engram

MAX_ROWS = 200


def abstracts_for_owner(owner: Any) -> list[Engram]:
    """The owner's live abstracts (ABS-), most recently changed first; 1 query."""
    return list(
        Engram.objects.for_owner(owner)
        .live()
        .filter(kind=Engram.Kind.ABSTRACT)
        .defer("embedding", "search_text")
        .order_by("-updated_at", "-pk")[:MAX_ROWS]
    )


def abstraction_sources(owner: Any, selected: Sequence[str] = ()) -> list[Engram]:
    """Concrete engrams that may back a new abstract: the selected ones first, then recent; 1 query."""
    rows = list(
        Engram.objects.for_owner(owner)
        .live()
        .filter(kind=Engram.Kind.CONCRETE)
        .defer("embedding", "search_text")
        .order_by("-updated_at", "-pk")[:MAX_ROWS]
    )
    chosen = set(selected)
    missing = chosen - {e.engram_id for e in rows}
    if missing:
        rows += list(
            Engram.objects.for_owner(owner)
            .live()
            .filter(kind=Engram.Kind.CONCRETE, engram_id__in=missing)
            .defer("embedding", "search_text")
        )
    return sorted(rows, key=lambda e: e.engram_id not in chosen)


def incoming_packets(owner: Any) -> list[Packet]:
    """The owner's latest incoming packets with their peers; 1 query."""
    return list(Packet.objects.for_dashboard(owner)[:MAX_ROWS])


def outgoing_packets(owner: Any) -> list[Packet]:
    """The owner's latest exports; 1 query."""
    return list(
        Packet.objects.for_owner(owner)
        .outgoing()
        .defer("raw")
        .order_by("-received_at", "-pk")[:MAX_ROWS]
    )


def peers_for_owner(owner: Any) -> list[Peer]:
    """The owner's peers, undecided first, with packet counts; 1 query."""
    return list(Peer.objects.for_dashboard(owner))


def pending_peers(owner: Any) -> list[Peer]:
    """Keys waiting for a person's decision; 1 query."""
    return list(Peer.objects.for_dashboard(owner).filter(state=Peer.State.PENDING))


def items_on_trial(owner: Any) -> list[PacketItem]:
    """Imports on trial, soonest expiry first; 1 query."""
    return list(PacketItem.objects.on_trial(owner)[:MAX_ROWS])


def quarantined_items(owner: Any) -> list[PacketItem]:
    """Imports set aside when their key was revoked; 1 query."""
    return list(PacketItem.objects.quarantined(owner)[:MAX_ROWS])


def packet_items(packet: Packet) -> list[PacketItem]:
    """A packet's items in packet order, with their engrams; 1 query."""
    return list(packet.items.select_related("engram").order_by("position"))
