"""Request and response schemas of the exchange API (explicit field lists)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

from memory.api.schemas import InSchema

MAX_IDS = 500

Visibility = Literal["private", "public", "template"]
ImportStatus = Literal["accepted", "quarantined", "rejected"]
ItemResultName = Literal["pending", "accepted", "duplicate", "rejected"]


class IdentityOut(Schema):
    name: str
    key_id: str = Field(examples=["3f2a9c0d1e4b5a69"])
    fingerprint: str = Field(examples=["3F2A 9C0D 1E4B 5A69 0011 2233 4455 6677"])
    public_key: str


class PeerOut(Schema):
    key_id: str
    name: str
    state: Literal["pending", "trusted", "rejected", "revoked"]
    fingerprint: str
    first_seen_at: datetime
    decided_at: datetime | None


class InstanceOut(Schema):
    domain: str
    derivation_count: int


class MetadataOut(Schema):
    fitness_score: float
    environmental_diversity: float
    total_derivations: int
    adoption_count: int
    contradiction_rate: float


class AbstractIn(InSchema):
    sources: list[str] = Field(min_length=1, max_length=50, examples=[["ENG-2026-0301-001"]])
    statement: str = Field(max_length=4000)
    structure: str = Field(max_length=8000)
    applies_when: str = Field(max_length=8000)
    visibility: Visibility = "private"


class AbstractOut(Schema):
    id: str
    status: str
    visibility: str
    statement: str
    structure: str
    applies_when: str
    derived_from: list[str]
    exchange_metadata: MetadataOut
    instances: list[InstanceOut]
    eligible: bool
    blockers: list[str]


class ExportIn(InSchema):
    ids: list[str] | None = Field(
        default=None,
        max_length=MAX_IDS,
        description="Abstract ids to export; omitted: every eligible abstract.",
    )


class ItemResultOut(Schema):
    id: str
    result: ItemResultName
    gate: str | None = None
    reason: str | None = None
    engram: str | None = None


class ImportResultOut(Schema):
    status: ImportStatus
    packet: str | None
    reasons: list[dict[str, Any]]
    items: list[ItemResultOut]
    code: str | None = None
    message: str | None = None


class PacketOut(Schema):
    packet: str
    status: str
    gate: str
    key_id: str
    sender: str
    created_at: datetime
    received_at: datetime
    item_count: int
    reasons: list[dict[str, Any]]
