"""Peer decisions on incoming exchange: trust, reject or revoke a key, release or discard one
quarantined item (the import gates themselves are in `exchange.services.incoming`).

- Trusting a key runs its quarantined packets through the remaining gates, with the clock judged
  against the time each was received; rejecting the key rejects them.
- Revoking a trusted key quarantines that key's pending imports (on trial, or promoted and
  waiting in review): their engrams are retired until a person releases or discards them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from exchange import crypto
from exchange import fitness as fitness_maths
from exchange import packet as packet_format
from exchange.models import Packet, PacketItem, Peer
from exchange.packet import PacketError
from exchange.services.incoming import (
    MAX_NAME_CHARS,
    ImportResult,
    InvalidState,
    gates_run,
    reason_of,
    refused,
    result_store,
)
from memory.errors import Conflict
from memory.models import Engram, Event
from memory.services.engrams import InvalidInput, engram_retire, is_live_hash_conflict
from memory.services.events import event_record
from memory.validation import check_text


def _locked_peer(owner: Any, peer: Peer) -> Peer:
    return Peer.objects.select_for_update().get(pk=peer.pk, owner=owner)


def peer_trust(
    *, owner: Any, peer: Peer, actor: str = "person", now: datetime | None = None
) -> list[ImportResult]:
    """Trust a key: its quarantined packets run through the remaining gates, in arrival order,
    and its quarantined imports go back on trial. Returns the packets' results."""
    now = now or timezone.now()
    results: list[ImportResult] = []
    with transaction.atomic():
        peer = _locked_peer(owner, peer)
        previous = peer.state
        if peer.set_state(Peer.State.TRUSTED, now=now):
            event_record(
                owner=owner,
                event=Event.PEER_TRUSTED,
                actor=actor,
                data={"key_id": peer.key_id, "from": previous},
                when=now,
            )
        waiting = (
            Packet.objects.for_owner(owner)
            .incoming()
            .filter(key_id=peer.key_id, status=Packet.Status.QUARANTINED)
            .order_by("received_at", "pk")
        )
        for packet in waiting:
            # The replay gate needs no second look: the unique constraints kept any other copy
            # out. The stored bytes passed size, schema and signature; checked again, cheaply.
            try:
                data = packet_format.parse_packet(packet.raw.encode("utf-8"))
            except PacketError as exc:
                result_store(owner, packet, [], [], [], [], [reason_of(exc.gate, exc.message)], now)
                results.append(refused(exc.gate, exc.message, packet_id=packet.packet_id))
                continue
            results.append(gates_run(owner=owner, packet=packet, data=data, actor=actor, now=now))
        for item in PacketItem.objects.quarantined(owner).filter(packet__key_id=peer.key_id):
            try:
                _release(owner=owner, item=item, actor=actor, now=now)
            except Conflict:
                continue  # stays quarantined: a live engram says it; a person discards it
    return results


def peer_reject(
    *, owner: Any, peer: Peer, actor: str = "person", now: datetime | None = None
) -> int:
    """Refuse an undecided key; its quarantined packets are rejected. Returns how many."""
    now = now or timezone.now()
    with transaction.atomic():
        peer = _locked_peer(owner, peer)
        if peer.state == Peer.State.REJECTED:
            return 0
        if peer.state != Peer.State.PENDING:
            raise InvalidState(
                f"key {peer.key_id} is {peer.state}; only an undecided key is rejected"
            )
        peer.set_state(Peer.State.REJECTED, now=now)
        count = _reject_waiting(owner, peer, "the key was rejected by a person", now)
        event_record(
            owner=owner,
            event=Event.PEER_REJECTED,
            actor=actor,
            data={"key_id": peer.key_id, "packets": count},
            when=now,
        )
    return count


def peer_revoke(
    *, owner: Any, peer: Peer, actor: str = "person", now: datetime | None = None
) -> int:
    """Withdraw trust from a key; its pending imports are quarantined. Returns how many."""
    now = now or timezone.now()
    with transaction.atomic():
        peer = _locked_peer(owner, peer)
        if peer.state == Peer.State.REVOKED:
            return 0
        if peer.state != Peer.State.TRUSTED:
            raise InvalidState(f"key {peer.key_id} is {peer.state}; only a trusted key is revoked")
        peer.set_state(Peer.State.REVOKED, now=now)
        _reject_waiting(owner, peer, "the key was revoked", now)
        pending = (
            PacketItem.objects.for_owner(owner)
            .filter(
                packet__direction=Packet.Direction.IN,
                packet__key_id=peer.key_id,
                result=PacketItem.Result.ACCEPTED,
                trial__in=[PacketItem.Trial.ON_TRIAL, PacketItem.Trial.PROMOTED],
                engram__status=Engram.Status.CANDIDATE,
            )
            .select_related("engram")
        )
        count = 0
        for item in pending:
            assert item.engram is not None
            engram_retire(
                owner=owner,
                engram=item.engram,
                actor=actor,
                reason=f"key {peer.key_id} revoked: quarantined",
            )
            item.trial = PacketItem.Trial.QUARANTINED
            item.trial_decided_at = now
            item.save(update_fields=["trial", "trial_decided_at"])
            count += 1
        event_record(
            owner=owner,
            event=Event.PEER_REVOKED,
            actor=actor,
            data={"key_id": peer.key_id, "quarantined": count},
            when=now,
        )
    return count


def _reject_waiting(owner: Any, peer: Peer, why: str, now: datetime) -> int:
    """Reject every quarantined packet of a key at the trusted_key gate."""
    waiting = list(
        Packet.objects.for_owner(owner)
        .incoming()
        .filter(key_id=peer.key_id, status=Packet.Status.QUARANTINED)
    )
    for packet in waiting:
        packet.status = Packet.Status.REJECTED
        packet.gate = "trusted_key"
        packet.reasons = [reason_of("trusted_key", why, {"key_id": peer.key_id})]
        packet.processed_at = now
        packet.raw = ""
        packet.save(update_fields=["status", "gate", "reasons", "processed_at", "raw"])
        packet.items.update(result=PacketItem.Result.REJECTED, gate="trusted_key", reason=why)
    return len(waiting)


def peer_add(
    *,
    owner: Any,
    public_key: str,
    name: str = "",
    actor: str = "person",
    now: datetime | None = None,
) -> Peer:
    """Trust a key before its first packet (or again): a person pastes its public key."""
    try:
        public_raw = crypto.b64decode((public_key or "").strip())
    except ValueError as exc:
        raise InvalidInput("public_key", "must be standard padded base64") from exc
    if len(public_raw) != crypto.PUBLIC_KEY_BYTES:
        raise InvalidInput("public_key", f"must decode to {crypto.PUBLIC_KEY_BYTES} bytes")
    name = (name or "").replace("\x00", "").strip()
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInput("name", f"at most {MAX_NAME_CHARS} characters")
    check_text(name)
    key_id = crypto.key_id(public_raw)
    with transaction.atomic():
        peer, created = Peer.objects.get_or_create(
            owner=owner,
            key_id=key_id,
            defaults={"public_key": crypto.b64encode(public_raw), "name": name},
        )
        if not created and name and peer.name != name:
            peer.name = name
            peer.save(update_fields=["name"])
        peer_trust(owner=owner, peer=peer, actor=actor, now=now)
        peer.refresh_from_db()
    return peer


# --- quarantined items ----------------------------------------------------------------------


def _release(*, owner: Any, item: PacketItem, actor: str, now: datetime) -> None:
    """Put a quarantined item back on trial; Conflict (nothing written) when a live engram of
    its scope has meanwhile come to say the same thing (the live-hash constraint)."""
    engram = item.engram
    if engram is not None:
        engram.status = Engram.Status.CANDIDATE
        engram.retired_at = None
        engram.provisional_until = now + timedelta(days=fitness_maths.TRIAL_DAYS)
        engram.updated_at = now
        try:
            with transaction.atomic():
                engram.save(
                    update_fields=["status", "retired_at", "provisional_until", "updated_at"]
                )
        except IntegrityError as exc:
            if not is_live_hash_conflict(exc):
                raise
            engram.refresh_from_db()
            raise Conflict(
                f"{item.abstract_id}: a live engram already says this; discard the import.",
                code="duplicate",
            ) from None
        event_record(
            owner=owner,
            event=Event.TRIAL_RESTARTED,
            engram=engram,
            actor=actor,
            data={
                "packet": item.packet.packet_id,
                "trial_until": engram.provisional_until.isoformat(),
            },
            when=now,
        )
    item.trial = PacketItem.Trial.ON_TRIAL if engram is not None else PacketItem.Trial.RETIRED
    item.trial_decided_at = now
    item.save(update_fields=["trial", "trial_decided_at"])


def item_release(
    *, owner: Any, item: PacketItem, actor: str = "person", now: datetime | None = None
) -> PacketItem:
    """Put a quarantined import back on a fresh 30-day trial."""
    now = now or timezone.now()
    with transaction.atomic():
        item = (
            PacketItem.objects.select_for_update(of=("self",))
            .select_related("engram", "packet")
            .get(pk=item.pk, owner=owner)
        )
        if item.trial != PacketItem.Trial.QUARANTINED:
            raise InvalidState("only a quarantined import can be released")
        _release(owner=owner, item=item, actor=actor, now=now)
    return item


def item_discard(
    *, owner: Any, item: PacketItem, actor: str = "person", now: datetime | None = None
) -> PacketItem:
    """Drop a quarantined import for good (its engram stays retired)."""
    now = now or timezone.now()
    with transaction.atomic():
        item = (
            PacketItem.objects.select_for_update(of=("self",))
            .select_related("engram")
            .get(pk=item.pk, owner=owner)
        )
        if item.trial != PacketItem.Trial.QUARANTINED:
            raise InvalidState("only a quarantined import can be discarded")
        item.trial = PacketItem.Trial.RETIRED
        item.trial_decided_at = now
        item.save(update_fields=["trial", "trial_decided_at"])
        event_record(
            owner=owner,
            event=Event.IMPORT_DISCARDED,
            engram=item.engram,
            actor=actor,
            data={"item": item.pk, "abstract": item.abstract_id},
            when=now,
        )
    return item
