"""Incoming exchange: every import gate of DESIGN in order, quarantine, and peer decisions.

Gates (exchange.packet.GATES): size, schema, signature (stateless, exchange.packet), then
trusted key, replay, clock, and per item scan, fitness, source cap, convergent duplicate.

- A packet refused at size, schema, signature, a blocked key or replay writes nothing at all.
- An unknown (or still undecided) key quarantines the packet: it is stored with its raw bytes
  and its items as `pending`, and waits. Trusting the key runs it through the remaining gates,
  with the clock judged against the time it was received; rejecting the key rejects it.
- Revoking a trusted key quarantines that key's pending imports (on trial, or promoted and
  waiting in review): their engrams are retired until a person releases or discards them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from exchange import fitness as fitness_maths
from exchange import packet as packet_format
from exchange.models import Packet, PacketItem, Peer
from exchange.packet import PacketError
from memory import scanner
from memory.errors import Conflict
from memory.maths import textnorm
from memory.models import Engram, Event, IdSequence
from memory.search.legs import nearest
from memory.services.activity import activity_mark
from memory.services.engrams import (
    embed_texts,
    engram_build,
    is_live_hash_conflict,
)
from memory.services.events import event_record
from memory.validation import PromptInjectionDetected, SecretDetected, check_text

ACCEPTED = "accepted"
QUARANTINED = "quarantined"
REJECTED = "rejected"
IMPORT_SCOPE = "global"
MAX_NAME_CHARS = 200


class InvalidState(Conflict):
    def __init__(self, message: str) -> None:
        super().__init__(message, code="invalid_state")


@dataclass
class ItemOutcome:
    """What the gates decided for one abstract of a packet."""

    id: str
    result: str  # pending | accepted | duplicate | rejected
    gate: str = ""
    reason: str = ""
    engram: str = ""

    def as_dict(self) -> dict[str, str]:
        out = {"id": self.id, "result": self.result}
        if self.gate:
            out["gate"] = self.gate
        if self.reason:
            out["reason"] = self.reason
        if self.engram:
            out["engram"] = self.engram
        return out


@dataclass
class ImportResult:
    """The outcome of one import: status, the reasons (each naming its gate), and the items."""

    status: str  # accepted | quarantined | rejected
    reasons: list[dict[str, object]] = field(default_factory=list)
    items: list[ItemOutcome] = field(default_factory=list)
    packet_id: str = ""
    packet: Packet | None = None

    @property
    def gate(self) -> str:
        """The first gate that refused or held the packet ("" when it went through cleanly)."""
        return str(self.reasons[0]["gate"]) if self.reasons else ""

    def as_dict(self) -> dict[str, object]:
        return {
            "status": self.status,
            "packet": self.packet_id or None,
            "reasons": self.reasons,
            "items": [item.as_dict() for item in self.items],
        }


def reason_of(
    gate: str, message: str, details: Mapping[str, object] | None = None, **extra: str
) -> dict[str, object]:
    out: dict[str, object] = {"gate": gate, **extra, "message": message}
    if details:
        out["details"] = dict(details)
    return out


def refused(
    gate: str, message: str, details: Mapping[str, object] | None = None, packet_id: str = ""
) -> ImportResult:
    return ImportResult(REJECTED, [reason_of(gate, message, details)], [], packet_id)


# --- the gates ------------------------------------------------------------------------------


def import_fitness(metadata: Mapping[str, Any]) -> float:
    """The fitness an incoming abstract is judged by: its declared score, capped by its parts.

    We cannot see a peer's retrieval strengths or the abstract's age, so the declared
    fitness_score is taken, but never above what its declared adoption, diversity and
    contradiction rate could reach with RS_avg and age at their best.
    """
    ceiling = fitness_maths.fitness(
        adoption=float(metadata["adoption_count"]),
        diversity=float(metadata["environmental_diversity"]),
        rs_avg=1.0,
        age_days=fitness_maths.AGE_SATURATION_DAYS,
        contradiction_rate=float(metadata["contradiction_rate"]),
    )
    return min(float(metadata["fitness_score"]), ceiling)


def _item_texts(abstract: Mapping[str, Any]) -> list[str]:
    """Every free text of an abstract that could carry a secret or an instruction."""
    provenance = abstract["provenance"]
    return [
        abstract["statement"],
        abstract["structure"],
        abstract["applies_when"],
        abstract["license"],
        provenance["origin"],
        *provenance["chain"],
        *(instance["domain"] for instance in abstract["instances"]),
    ]


def _safe_statement(text: str) -> str:
    """The statement as stored on a PacketItem: secrets redacted, never kept in clear."""
    return scanner.redact_secrets(text)[0]


def _seen(owner: Any, packet_id: str, digest: str, *, exclude_pk: int | None = None) -> bool:
    qs = (
        Packet.objects.for_owner(owner).incoming().filter(Q(packet_id=packet_id) | Q(digest=digest))
    )
    if exclude_pk is not None:
        qs = qs.exclude(pk=exclude_pk)
    return qs.exists()


def _replay(packet_id: str) -> ImportResult:
    return refused(
        "replay",
        f"packet {packet_id} (or one with the same digest) was received before",
        {"packet_id": packet_id},
        packet_id,
    )


def packet_import(
    *, owner: Any, raw: bytes, actor: str = "person", now: datetime | None = None
) -> ImportResult:
    """Run a received packet through every import gate in order; see the module docstring."""
    now = now or timezone.now()
    try:
        data = packet_format.parse_packet(raw)
    except PacketError as exc:
        return refused(exc.gate, exc.message, exc.details)
    packet_id = str(data["id"])
    sender: dict[str, Any] = data["sender"]  # type: ignore[assignment]
    key_id = sender["key_id"]
    digest = packet_format.packet_digest(data)
    with transaction.atomic():
        # The peer row is locked for the whole import, so two packets from one key cannot both
        # pass the source cap on the same count.
        peer = Peer.objects.select_for_update().filter(owner=owner, key_id=key_id).first()
        if peer is not None and peer.is_blocked:
            return refused(
                "trusted_key",
                f"key {key_id} was {peer.state} by a person",
                {"key_id": key_id, "state": peer.state},
                packet_id,
            )
        if _seen(owner, packet_id, digest):
            return _replay(packet_id)
        if peer is None:
            peer, _ = Peer.objects.get_or_create(
                owner=owner,
                key_id=key_id,
                defaults={
                    "public_key": sender["public_key"],
                    "name": sender["name"][:MAX_NAME_CHARS],
                    "first_seen_at": now,
                },
            )
            peer = Peer.objects.select_for_update().get(pk=peer.pk)
        pending = peer.state != Peer.State.TRUSTED
        try:
            with transaction.atomic():
                packet = Packet.objects.create(
                    owner=owner,
                    direction=Packet.Direction.IN,
                    packet_id=packet_id,
                    digest=digest,
                    peer=peer,
                    key_id=key_id,
                    sender_name=sender["name"][:MAX_NAME_CHARS],
                    created_at=packet_format.parse_created_at(data["created_at"]),  # type: ignore[arg-type]
                    received_at=now,
                    status=Packet.Status.QUARANTINED if pending else Packet.Status.ACCEPTED,
                    raw=packet_format.serialize_packet(data).decode("utf-8"),
                    item_count=len(data["abstracts"]),  # type: ignore[arg-type]
                )
        except IntegrityError:
            # A concurrent import of the same packet committed first.
            return _replay(packet_id)
        if sender["name"] and peer.name != sender["name"][:MAX_NAME_CHARS]:
            peer.name = sender["name"][:MAX_NAME_CHARS]
            peer.save(update_fields=["name"])
        if pending:
            return _quarantine(owner=owner, packet=packet, data=data)
        return gates_run(owner=owner, packet=packet, data=data, actor=actor, now=now)


def _quarantine(*, owner: Any, packet: Packet, data: Mapping[str, Any]) -> ImportResult:
    """Hold a packet from an undecided key; its items wait as `pending`."""
    reason = reason_of(
        "trusted_key",
        f"key {packet.key_id} is not trusted yet; the packet waits in quarantine until a person "
        "trusts or rejects the key",
        {"key_id": packet.key_id},
    )
    packet.gate = "trusted_key"
    packet.reasons = [reason]
    packet.save(update_fields=["gate", "reasons"])
    items = [ItemOutcome(a["id"], PacketItem.Result.PENDING) for a in data["abstracts"]]
    PacketItem.objects.bulk_create(
        PacketItem(
            owner=owner,
            packet=packet,
            position=index,
            abstract_id=abstract["id"],
            statement=_safe_statement(abstract["statement"]),
            result=PacketItem.Result.PENDING,
        )
        for index, abstract in enumerate(data["abstracts"])
    )
    return ImportResult(QUARANTINED, [reason], items, packet.packet_id, packet)


def gates_run(
    *, owner: Any, packet: Packet, data: Mapping[str, Any], actor: str, now: datetime
) -> ImportResult:
    """The gates after replay (clock, scan, fitness, source cap, duplicate) for a stored packet.

    Source cap: a verified key may hold at most max(5, ⌊20 % of the owner's active engrams⌋)
    live engrams (exchange.fitness.source_cap_allowance), counted by key id, never by the name
    a packet claims. Items are taken in packet order; a convergent duplicate adds no engram and
    so uses none of the allowance; items past the allowance are rejected at `source_cap`.

    Duplicate: an item whose statement a live engram of the import scope already holds (same
    content hash, as the live-hash constraint judges it), or within cosine 0.9 of a live
    engram, is a convergent duplicate of it, and the rest of the packet imports as usual.
    """
    abstracts: list[dict[str, Any]] = data["abstracts"]
    key_id = packet.key_id
    outcomes: list[ItemOutcome | None] = [None] * len(abstracts)
    engrams: list[Engram | None] = [None] * len(abstracts)
    scores: list[float | None] = [None] * len(abstracts)

    clock = packet_format.check_clock(packet.created_at, packet.received_at)
    if clock is not None:
        reason = reason_of(
            "clock",
            clock,
            {"created_at": data["created_at"], "received_at": packet.received_at.isoformat()},
        )
        for index, abstract in enumerate(abstracts):
            outcomes[index] = ItemOutcome(
                abstract["id"], REJECTED, "clock", "the packet failed the clock gate"
            )
        return result_store(owner, packet, abstracts, outcomes, engrams, scores, [reason], now)

    for index, abstract in enumerate(abstracts):
        try:
            check_text(*_item_texts(abstract))
        except (SecretDetected, PromptInjectionDetected) as exc:
            outcomes[index] = ItemOutcome(abstract["id"], REJECTED, "scan", str(exc.message))
            continue
        score = import_fitness(abstract["exchange_metadata"])
        scores[index] = round(score, 4)
        if score < fitness_maths.MIN_FITNESS:
            outcomes[index] = ItemOutcome(
                abstract["id"],
                REJECTED,
                "fitness",
                f"fitness {score:.2f} is below the minimum {fitness_maths.MIN_FITNESS}",
            )

    survivors = [index for index, outcome in enumerate(outcomes) if outcome is None]
    vectors: Sequence[np.ndarray] = list(
        embed_texts([abstracts[i]["statement"] for i in survivors]) if survivors else []
    )
    active = Engram.objects.for_owner(owner).filter(status=Engram.Status.ACTIVE).count()
    allowance = fitness_maths.source_cap_allowance(active)
    held = PacketItem.objects.held_from_key(owner, key_id).count()
    # Live engrams of the import scope that say what a survivor says: a convergent duplicate
    # the nearest-neighbour look may miss (no embedding yet, an approximate index), and what
    # the live-hash constraint would refuse as a new candidate.
    same = {
        e.content_hash: e
        for e in Engram.objects.for_owner(owner)
        .live()
        .filter(
            scope=IMPORT_SCOPE,
            content_hash__in={textnorm.content_hash(abstracts[i]["statement"]) for i in survivors},
        )
        .defer("embedding")
    }
    for index, vector in zip(survivors, vectors, strict=True):
        abstract = abstracts[index]
        if held >= allowance:
            outcomes[index] = ItemOutcome(
                abstract["id"],
                REJECTED,
                "source_cap",
                f"key {key_id} already holds {held} engrams here, its allowance "
                f"(20 % of {active} active engrams, at least "
                f"{fitness_maths.SOURCE_CAP_MIN_ITEMS}) is {allowance}",
            )
            continue
        digest = textnorm.content_hash(abstract["statement"])
        local: Engram | None = same.get(digest)
        cosine: float | None = None
        if local is None:
            match = nearest(owner=owner, vector=vector, limit=1)
            if match and match[0][1] >= fitness_maths.DUPLICATE_COSINE:
                local, cosine = match[0]
        if local is None:
            engram = _create_candidate(
                owner=owner, abstract=abstract, vector=vector, packet=packet, actor=actor, now=now
            )
            if engram is not None:
                held += 1
                same[digest] = engram
                engrams[index] = engram
                outcomes[index] = ItemOutcome(
                    abstract["id"], PacketItem.Result.ACCEPTED, engram=engram.engram_id
                )
                continue
            # A concurrent write stored the same statement first (the live-hash constraint).
            local = _live_with_hash(owner, digest)
        counted = _converge(
            owner=owner, local=local, key_id=key_id, packet=packet, cosine=cosine,
            actor=actor, now=now,
        )  # fmt: skip
        why = f"cosine {cosine:.2f} with" if cosine is not None else "same statement as"
        outcomes[index] = ItemOutcome(
            abstract["id"],
            PacketItem.Result.DUPLICATE,
            "duplicate",
            f"{why} {local.engram_id}; "
            + ("derivation and adoption counted" if counted else "this key was counted before"),
            local.engram_id,
        )
        engrams[index] = local
    reasons = [
        reason_of(outcome.gate, outcome.reason, item=outcome.id)
        for outcome in outcomes
        if outcome is not None and outcome.result == REJECTED
    ]
    return result_store(owner, packet, abstracts, outcomes, engrams, scores, reasons, now)


def result_store(
    owner: Any,
    packet: Packet,
    abstracts: Sequence[Mapping[str, Any]],
    outcomes: Sequence[ItemOutcome | None],
    engrams: Sequence[Engram | None],
    scores: Sequence[float | None],
    reasons: list[dict[str, object]],
    now: datetime,
) -> ImportResult:
    """Store the item rows and the packet's status; drop the raw bytes (they may hold secrets)."""
    items = [outcome for outcome in outcomes if outcome is not None]
    kept = any(item.result in (ACCEPTED, PacketItem.Result.DUPLICATE) for item in items)
    status = ACCEPTED if kept else REJECTED
    packet.items.all().delete()
    PacketItem.objects.bulk_create(
        PacketItem(
            owner=owner,
            packet=packet,
            position=index,
            abstract_id=abstract["id"],
            statement=_safe_statement(abstract["statement"]),
            result=outcome.result,
            gate=outcome.gate,
            reason=outcome.reason,
            fitness=scores[index],
            engram=engrams[index],
            trial=PacketItem.Trial.ON_TRIAL if outcome.result == ACCEPTED else "",
        )
        for index, (abstract, outcome) in enumerate(zip(abstracts, outcomes, strict=True))
        if outcome is not None
    )
    packet.status = status
    packet.gate = "" if kept else (str(reasons[0]["gate"]) if reasons else "")
    packet.reasons = reasons
    packet.processed_at = now
    packet.raw = ""
    packet.save(update_fields=["status", "gate", "reasons", "processed_at", "raw"])
    return ImportResult(status, reasons, items, packet.packet_id, packet)


def _converge(
    *,
    owner: Any,
    local: Engram,
    key_id: str,
    packet: Packet,
    cosine: float | None,
    actor: str,
    now: datetime,
) -> bool:
    """Record that `key_id` arrived at a local engram independently; return whether it counted.

    Each key counts once per engram (kept in exchange_metadata.adopted_by), and a key never
    counts for an engram it sent itself, so re-sending a lesson cannot inflate its fitness.
    """
    locked = Engram.objects.select_for_update().get(pk=local.pk)
    metadata = dict(locked.exchange_metadata or {})
    adopters = [k for k in metadata.get("adopted_by", []) if isinstance(k, str)]
    received = (locked.provenance or {}).get("exchange")
    sender = received.get("key_id") if isinstance(received, dict) else None
    if key_id in adopters or key_id == sender:
        return False
    adoption = metadata.get("adoption_count")
    adoption = adoption if isinstance(adoption, int) and adoption > 0 else 1
    metadata["adopted_by"] = [*adopters, key_id]
    metadata["adoption_count"] = adoption + 1
    Engram.objects.filter(pk=locked.pk).update(
        derivation_count=F("derivation_count") + 1, exchange_metadata=metadata, updated_at=now
    )
    event_record(
        owner=owner,
        event=Event.CONVERGENT_DUPLICATE,
        engram=locked,
        actor=actor,
        data={
            "key_id": key_id,
            "packet": packet.packet_id,
            **({"cosine": round(cosine, 4)} if cosine is not None else {"same_statement": True}),
            "derivation_count": locked.derivation_count + 1,
            "adoption_count": adoption + 1,
        },
        when=now,
    )
    return True


def _create_candidate(
    *,
    owner: Any,
    abstract: Mapping[str, Any],
    vector: np.ndarray,
    packet: Packet,
    actor: str,
    now: datetime,
) -> Engram | None:
    """A new ABS- candidate on a 30-day trial from one accepted abstract; None (nothing written)
    when a live engram of the import scope already holds its statement."""
    declared = abstract["exchange_metadata"]
    provenance = abstract["provenance"]
    instances = abstract["instances"]
    engram = engram_build(
        owner=owner,
        now=now,
        vector=vector,
        engram_id=IdSequence.next_id(owner=owner, prefix="ABS", when=now),
        kind=Engram.Kind.ABSTRACT,
        status=Engram.Status.CANDIDATE,
        scope=IMPORT_SCOPE,
        visibility=Engram.Visibility.PRIVATE,
        statement=abstract["statement"],
        structure=abstract["structure"].strip(),
        applies_when=abstract["applies_when"].strip(),
        domain=(instances[0]["domain"] if instances else "")[:200],
        source="exchange",
        provisional_until=now + timedelta(days=fitness_maths.TRIAL_DAYS),
        provenance={
            "origin": "exchange",
            "source": "exchange",
            "actor": actor,
            "exchange": {
                "origin": provenance["origin"],
                "chain": list(provenance["chain"]),
                "key_id": packet.key_id,
                "sender": packet.sender_name,
                "packet": packet.packet_id,
                "remote_id": abstract["id"],
            },
        },
        exchange_metadata={
            "fitness_score": round(import_fitness(declared), 4),
            "environmental_diversity": declared["environmental_diversity"],
            "total_derivations": declared["total_derivations"],
            # This installation now holds it too.
            "adoption_count": declared["adoption_count"] + 1,
            "contradiction_rate": declared["contradiction_rate"],
            "base_derivations": max(0, declared["total_derivations"] - 1),
            "declared_fitness": declared["fitness_score"],
        },
        extra={"exchange": {"instances": list(instances), "license": abstract["license"]}},
    )
    try:
        # A savepoint: the conflict must not abort the packet's transaction.
        with transaction.atomic():
            engram.save()
    except IntegrityError as exc:
        if not is_live_hash_conflict(exc):
            raise
        return None
    event_record(
        owner=owner,
        event=Event.ENGRAM_CREATED,
        engram=engram,
        actor=actor,
        data={
            "status": engram.status,
            "source": "exchange",
            "key_id": packet.key_id,
            "packet": packet.packet_id,
            "remote_id": abstract["id"],
            "trial_until": engram.provisional_until.isoformat()
            if engram.provisional_until
            else None,
        },
        when=now,
    )
    activity_mark(owner=owner, scope=IMPORT_SCOPE, when=now)
    return engram


def _live_with_hash(owner: Any, digest: str) -> Engram:
    """The live engram of the import scope with this content hash (one exists: it was just
    refused as a duplicate by the live-hash constraint)."""
    return (
        Engram.objects.for_owner(owner)
        .live()
        .defer("embedding")
        .get(scope=IMPORT_SCOPE, content_hash=digest)
    )


# --- peer decisions -------------------------------------------------------------------------
