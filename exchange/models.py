"""Learning exchange: each owner's signing identity, the peers they trust, packets and items.

Every row belongs to an owner (one user of this installation). Incoming and outgoing packets
share one table, told apart by `direction`; replay protection is the pair of unique constraints
on (owner, direction, packet id) and (owner, direction, digest).
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone

from exchange import crypto
from memory.models import Engram


class Identity(models.Model):
    """An owner's Ed25519 key pair; the private key is stored only encrypted (crypto v1 token)."""

    owner = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="exchange_identity"
    )
    # The sender name put in packets; peers see it but decide on the key alone.
    name = models.CharField(max_length=200)
    key_id = models.CharField(max_length=16)
    public_key = models.CharField(max_length=44)  # standard base64 of the raw 32 bytes
    private_key = models.TextField()  # `v1$salt$nonce$ciphertext`, see exchange.crypto
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "identities"

    def __str__(self) -> str:
        return f"{self.name} ({self.key_id})"

    @property
    def public_raw(self) -> bytes:
        return crypto.b64decode(self.public_key)

    @property
    def fingerprint(self) -> str:
        return crypto.fingerprint(self.public_raw)


class PeerQuerySet(models.QuerySet["Peer"]):
    def for_owner(self, owner: Any) -> PeerQuerySet:
        return self.filter(owner=owner)

    def for_dashboard(self, owner: Any) -> PeerQuerySet:
        """The owner's peers, undecided first, with their packet counts (one query)."""
        return (
            self.for_owner(owner)
            .annotate(packet_count=models.Count("packets"))
            .order_by(
                models.Case(models.When(state=Peer.State.PENDING, then=0), default=1),
                "-first_seen_at",
                "-pk",
            )
        )


class Peer(models.Model):
    """Another installation's public key, as this owner judges it."""

    class State(models.TextChoices):
        PENDING = "pending"  # seen on a packet, no decision yet: its packets wait in quarantine
        TRUSTED = "trusted"
        REJECTED = "rejected"  # a person refused an unknown key
        REVOKED = "revoked"  # a person withdrew trust from a key

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    key_id = models.CharField(max_length=16)
    public_key = models.CharField(max_length=44)
    # The name the key's packets claim (latest); display only, never used for a decision.
    name = models.CharField(max_length=200, blank=True, default="")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    first_seen_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    objects = PeerQuerySet.as_manager()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["owner", "key_id"], name="uniq_peer_key")
        ]

    def __str__(self) -> str:
        return f"{self.name or 'peer'} ({self.key_id}, {self.state})"

    @property
    def fingerprint(self) -> str:
        return crypto.fingerprint(crypto.b64decode(self.public_key))

    @property
    def is_blocked(self) -> bool:
        return self.state in {Peer.State.REJECTED, Peer.State.REVOKED}

    def set_state(self, state: str, *, now: Any = None) -> bool:
        """Move to `state`; return False (and write nothing) when already there."""
        if self.state == state:
            return False
        self.state = state
        self.decided_at = now or timezone.now()
        self.save(update_fields=["state", "decided_at"])
        return True


class PacketQuerySet(models.QuerySet["Packet"]):
    def for_owner(self, owner: Any) -> PacketQuerySet:
        return self.filter(owner=owner)

    def incoming(self) -> PacketQuerySet:
        return self.filter(direction=Packet.Direction.IN)

    def outgoing(self) -> PacketQuerySet:
        return self.filter(direction=Packet.Direction.OUT)

    def for_dashboard(self, owner: Any) -> PacketQuerySet:
        """The owner's incoming packets, newest first, with their peer (one query); no raw text."""
        return (
            self.for_owner(owner)
            .incoming()
            .select_related("peer")
            .defer("raw")
            .order_by("-received_at", "-pk")
        )


class Packet(models.Model):
    """One `engram-exchange/1` packet received or sent, with the outcome of its gates."""

    class Direction(models.TextChoices):
        IN = "in"
        OUT = "out"

    class Status(models.TextChoices):
        ACCEPTED = "accepted"
        QUARANTINED = "quarantined"
        REJECTED = "rejected"
        EXPORTED = "exported"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    direction = models.CharField(max_length=3, choices=Direction.choices)
    packet_id = models.CharField(max_length=64)
    # SHA-256 of the canonical bytes of the whole packet, signature included.
    digest = models.CharField(max_length=64)
    peer = models.ForeignKey(
        Peer, on_delete=models.SET_NULL, null=True, blank=True, related_name="packets"
    )
    key_id = models.CharField(max_length=16)  # the verified signing key
    sender_name = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField()  # as the packet claims
    received_at = models.DateTimeField(default=timezone.now)  # or exported at
    processed_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices)
    # The gate that rejected or quarantined the packet as a whole; blank when it went through.
    gate = models.CharField(max_length=20, blank=True, default="")
    reasons = models.JSONField(default=list, blank=True)
    # Canonical JSON, kept while it may still be processed (quarantine) or read; never for a
    # packet rejected before it was stored.
    raw = models.TextField(blank=True, default="")
    item_count = models.PositiveIntegerField(default=0)

    objects = PacketQuerySet.as_manager()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["owner", "direction", "packet_id"], name="uniq_packet_id"
            ),
            models.UniqueConstraint(
                fields=["owner", "direction", "digest"], name="uniq_packet_digest"
            ),
        ]
        indexes: ClassVar = [
            models.Index(fields=["owner", "direction", "-received_at"], name="packet_recent"),
            models.Index(fields=["owner", "key_id", "status"], name="packet_key_status"),
        ]

    def __str__(self) -> str:
        return f"{self.packet_id} ({self.direction}, {self.status})"


class PacketItemQuerySet(models.QuerySet["PacketItem"]):
    def for_owner(self, owner: Any) -> PacketItemQuerySet:
        return self.filter(owner=owner)

    def on_trial(self, owner: Any) -> PacketItemQuerySet:
        """Imported items on trial, soonest expiry first, with engram and packet (one query)."""
        return (
            self.for_owner(owner)
            .filter(trial=PacketItem.Trial.ON_TRIAL, engram__isnull=False)
            .select_related("engram", "packet")
            .defer("packet__raw")
            .order_by("engram__provisional_until", "pk")
        )

    def quarantined(self, owner: Any) -> PacketItemQuerySet:
        """Items set aside because their key was revoked, with engram and packet (one query)."""
        return (
            self.for_owner(owner)
            .filter(trial=PacketItem.Trial.QUARANTINED)
            .select_related("engram", "packet")
            .defer("packet__raw")
            .order_by("-pk")
        )

    def held_from_key(self, owner: Any, key_id: str) -> PacketItemQuerySet:
        """Live engrams this owner holds because the verified key `key_id` sent them."""
        return self.for_owner(owner).filter(
            packet__direction=Packet.Direction.IN,
            packet__key_id=key_id,
            result=PacketItem.Result.ACCEPTED,
            engram__isnull=False,
            engram__status__in=[
                Engram.Status.CANDIDATE,
                Engram.Status.ACTIVE,
                Engram.Status.DORMANT,
            ],
        )


class PacketItem(models.Model):
    """One abstract in a packet: what its gates decided and, once imported, its trial."""

    class Result(models.TextChoices):
        PENDING = "pending"  # in a quarantined packet, not yet through the item gates
        ACCEPTED = "accepted"  # a new candidate engram on trial
        DUPLICATE = "duplicate"  # convergent with a local engram: counts raised, no copy
        REJECTED = "rejected"
        EXPORTED = "exported"

    class Trial(models.TextChoices):
        NONE = "", "none"
        ON_TRIAL = "on_trial", "on trial"
        PROMOTED = "promoted", "promoted to review"  # reinforced: a provisional review item
        RETIRED = "retired", "retired"
        QUARANTINED = "quarantined", "quarantined"  # its key was revoked while it was pending

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    packet = models.ForeignKey(Packet, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    abstract_id = models.CharField(max_length=80)  # the id in the packet (the sender's)
    statement = models.TextField()
    result = models.CharField(max_length=10, choices=Result.choices)
    gate = models.CharField(max_length=20, blank=True, default="")
    reason = models.TextField(blank=True, default="")
    fitness = models.FloatField(null=True, blank=True)
    # The engram created, the local duplicate it converged with, or the exported abstract.
    engram = models.ForeignKey(
        Engram, on_delete=models.SET_NULL, null=True, blank=True, related_name="packet_items"
    )
    trial = models.CharField(max_length=12, choices=Trial.choices, blank=True, default="")
    trial_decided_at = models.DateTimeField(null=True, blank=True)

    objects = PacketItemQuerySet.as_manager()

    class Meta:
        ordering: ClassVar = ["packet", "position"]
        indexes: ClassVar = [
            models.Index(fields=["owner", "trial"], name="packetitem_trial"),
        ]

    def __str__(self) -> str:
        return f"{self.abstract_id}: {self.result}"
