"""Outgoing exchange: abstracts' exchange metadata and fitness, eligibility, signed export."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import yaml
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from exchange import fitness as fitness_maths
from exchange import packet as packet_format
from exchange.models import Identity, Packet, PacketItem
from exchange.services.identity import identity_get, identity_private_key
from memory import scanner
from memory.errors import InvalidInput
from memory.models import Engram
from memory.strength import effective_strengths

DEFAULT_LICENSE = "CC0-1.0"
DEFAULT_DOMAIN = "general"
EXPORTABLE_VISIBILITY = (Engram.Visibility.PUBLIC, Engram.Visibility.TEMPLATE)
# The five fields a packet carries; anything else in Engram.exchange_metadata is local state
# (adopted_by, base_derivations, declared_fitness, fitness_at).
METADATA_FIELDS = (
    "fitness_score",
    "environmental_diversity",
    "total_derivations",
    "adoption_count",
    "contradiction_rate",
)
SCORE_DIGITS = 4  # stored rounding, so an unchanged input never rewrites the row
REFRESH_BATCH = 200
SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class ExportResult:
    """A signed packet, its wire bytes and, when recorded, the outgoing Packet row."""

    packet: dict[str, object]
    raw: bytes
    record: Packet | None

    @property
    def packet_id(self) -> str:
        return str(self.packet["id"])

    @property
    def filename(self) -> str:
        return f"{self.packet_id}.json"


# --- sources and metadata -------------------------------------------------------------------


def _derived_ids(abstract: Engram) -> list[str]:
    """Engram ids an abstract names in derived_from (plain ids or {"id": ...} objects)."""
    ids: list[str] = []
    for entry in abstract.derived_from or []:
        value = entry.get("id") if isinstance(entry, dict) else entry
        if isinstance(value, str) and value:
            ids.append(value)
    return ids


def abstract_sources(owner: Any, abstracts: Sequence[Engram]) -> dict[int, list[Engram]]:
    """Live concrete engrams behind each abstract (its `abstract` link or derived_from); 1 query."""
    result: dict[int, list[Engram]] = {a.pk: [] for a in abstracts}
    if not abstracts:
        return result
    by_id = {a.engram_id: a for a in abstracts}
    derived = {a.pk: set(_derived_ids(a)) for a in abstracts}
    wanted = set().union(*derived.values())
    rows = (
        Engram.objects.for_owner(owner)
        .live()
        .exclude(kind=Engram.Kind.ABSTRACT)
        .filter(Q(abstract__in=list(by_id)) | Q(engram_id__in=list(wanted)))
        .defer("embedding", "search_text")
    )
    for row in rows:
        for abstract in abstracts:
            if row.abstract == abstract.engram_id or row.engram_id in derived[abstract.pk]:
                result[abstract.pk].append(row)
    return result


def _number(value: object, default: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return float(value) if math.isfinite(value) else default


def _count(value: object, default: int = 0) -> int:
    return max(0, int(_number(value, default)))


def abstract_metadata(
    abstract: Engram, sources: Sequence[Engram], strengths: dict[int, float], now: datetime
) -> dict[str, float | int]:
    """The five exchange metadata fields of one abstract, fitness from DESIGN included.

    adoption: installations known to hold it (this one, plus each distinct key whose packet
    converged with it, plus what an importing packet declared); diversity: distinct scopes of its
    concrete sources, never below what was stored or 1; total derivations: an import's declared
    derivations beyond this copy + the local count (its own, or its sources' sum if larger);
    contradiction rate: local
    outcomes of it and its sources when there are any, else the stored (declared) rate; RS_avg:
    mean effective retrieval strength over it and its live sources; age: days since created.
    """
    stored = abstract.exchange_metadata or {}
    adoption = max(1, _count(stored.get("adoption_count"), 1))
    diversity = max(
        _number(stored.get("environmental_diversity")), float(len({s.scope for s in sources})), 1.0
    )
    # An abstract starts with its sources' summed count and gains one per convergent copy; its
    # sources may recur on their own later, so the larger of the two is the local count.
    total_derivations = _count(stored.get("base_derivations")) + max(
        abstract.derivation_count, sum(s.derivation_count for s in sources)
    )
    group = [abstract, *sources]
    outcomes = sum(e.outcome_total for e in group)
    if outcomes:
        contradiction_rate = sum(e.contradicted for e in group) / outcomes
    else:
        contradiction_rate = min(1.0, max(0.0, _number(stored.get("contradiction_rate"))))
    rs_values = [strengths[e.pk] for e in group if e.pk in strengths]
    rs_avg = sum(rs_values) / len(rs_values) if rs_values else abstract.retrieval_strength
    age_days = max(0.0, (now - abstract.created_at).total_seconds() / SECONDS_PER_DAY)
    score = fitness_maths.fitness(
        adoption=adoption,
        diversity=diversity,
        rs_avg=rs_avg,
        age_days=age_days,
        contradiction_rate=contradiction_rate,
    )
    return {
        "fitness_score": round(score, SCORE_DIGITS),
        "environmental_diversity": int(diversity) if diversity.is_integer() else diversity,
        "total_derivations": total_derivations,
        "adoption_count": adoption,
        "contradiction_rate": round(contradiction_rate, SCORE_DIGITS),
    }


def metadata_for(
    owner: Any, abstracts: Sequence[Engram], *, now: datetime | None = None
) -> dict[int, dict[str, float | int]]:
    """Exchange metadata for many abstracts of one owner (3 queries)."""
    now = now or timezone.now()
    sources = abstract_sources(owner, abstracts)
    everyone = list(abstracts) + [s for rows in sources.values() for s in rows]
    strengths = effective_strengths(everyone, now=now) if everyone else {}
    return {a.pk: abstract_metadata(a, sources[a.pk], strengths, now) for a in abstracts}


def fitness_refresh(*, owner: Any, now: datetime | None = None) -> int:
    """Recompute and store the exchange metadata of every live abstract; return rows changed.

    Idempotent: values are rounded, and a row whose metadata is unchanged is not written.
    """
    now = now or timezone.now()
    qs = Engram.objects.for_owner(owner).live().filter(kind=Engram.Kind.ABSTRACT).order_by("pk")
    changed = 0
    last_pk = 0
    while True:
        chunk = list(qs.filter(pk__gt=last_pk).defer("embedding", "search_text")[:REFRESH_BATCH])
        if not chunk:
            break
        last_pk = chunk[-1].pk
        fresh = metadata_for(owner, chunk, now=now)
        with transaction.atomic():
            current = dict(
                Engram.objects.select_for_update()
                .filter(pk__in=[a.pk for a in chunk])
                .values_list("pk", "exchange_metadata")
            )
            for abstract in chunk:
                stored = dict(abstract.exchange_metadata or {})
                if current.get(abstract.pk) != abstract.exchange_metadata:
                    # An import counted an adoption meanwhile; the next run uses it.
                    continue
                values = fresh[abstract.pk]
                if all(stored.get(name) == values[name] for name in METADATA_FIELDS):
                    continue
                stored.update(values)
                stored["fitness_at"] = now.isoformat()
                Engram.objects.filter(pk=abstract.pk).update(exchange_metadata=stored)
                changed += 1
    return changed


def fitness_refresh_all(*, now: datetime | None = None) -> int:
    """fitness_refresh for every owner holding an abstract."""
    owners = (
        Engram.objects.filter(kind=Engram.Kind.ABSTRACT)
        .exclude(status=Engram.Status.RETIRED)
        .values_list("owner_id", flat=True)
        .distinct()
    )
    return sum(fitness_refresh(owner=owner_id, now=now) for owner_id in sorted(set(owners)))


# --- eligibility ----------------------------------------------------------------------------


def _instances(abstract: Engram, sources: Sequence[Engram]) -> list[dict[str, object]]:
    """[{domain, derivation_count}] from the sources by domain, plus an import's own instances."""
    counts: dict[str, int] = defaultdict(int)
    for source in sources:
        counts[(source.domain or DEFAULT_DOMAIN)[: packet_format.MAX_NAME_CHARS]] += (
            source.derivation_count
        )
    imported = (abstract.extra or {}).get("exchange", {})
    for instance in imported.get("instances", []) if isinstance(imported, dict) else []:
        if isinstance(instance, dict) and isinstance(instance.get("domain"), str):
            counts[instance["domain"][: packet_format.MAX_NAME_CHARS]] += _count(
                instance.get("derivation_count")
            )
    return [
        {"domain": domain, "derivation_count": count}
        for domain, count in sorted(counts.items())[: packet_format.MAX_INSTANCES]
        if domain.strip()
    ]


def _texts(abstract: Engram, instances: Iterable[dict[str, object]]) -> list[str]:
    return [
        abstract.statement,
        abstract.structure,
        abstract.applies_when,
        *(str(i["domain"]) for i in instances),
    ]


def export_blockers(abstract: Engram, *, instances: Sequence[dict[str, object]] = ()) -> list[str]:
    """Why an engram cannot be exported (empty when it can): ABS-, public/template, active, clean."""
    reasons: list[str] = []
    if abstract.kind != Engram.Kind.ABSTRACT:
        reasons.append("not an abstract (ABS-) engram")
    if abstract.visibility not in EXPORTABLE_VISIBILITY:
        reasons.append(f"visibility is {abstract.visibility}; make it public or template")
    if abstract.status != Engram.Status.ACTIVE:
        reasons.append(f"status is {abstract.status}, not active")
    limits = (
        ("statement", abstract.statement, packet_format.MAX_ABSTRACT_CHARS),
        ("structure", abstract.structure, packet_format.MAX_STRUCTURE_CHARS),
        ("applies_when", abstract.applies_when, packet_format.MAX_APPLIES_WHEN_CHARS),
    )
    for name, text, limit in limits:
        if len(text) > limit:
            reasons.append(f"{name} is longer than {limit} characters")
    secrets_found: set[str] = set()
    injections_found: set[str] = set()
    for text in _texts(abstract, instances):
        if text:
            result = scanner.scan(text)
            secrets_found.update(result.secrets)
            injections_found.update(result.injections)
    if secrets_found:
        reasons.append(
            "contains what looks like a secret (" + ", ".join(sorted(secrets_found)) + ")"
        )
    if injections_found:
        reasons.append(
            "contains prompt-injection text (" + ", ".join(sorted(injections_found)) + ")"
        )
    return reasons


@dataclass(frozen=True)
class AbstractRow:
    """One abstract as the outgoing page and the API list it."""

    engram: Engram
    metadata: dict[str, float | int]
    instances: list[dict[str, object]]
    blockers: list[str]

    @property
    def eligible(self) -> bool:
        return not self.blockers


def abstracts_overview(
    owner: Any, abstracts: Sequence[Engram], *, now: datetime | None = None
) -> list[AbstractRow]:
    """Each abstract with fresh metadata, instances and export blockers (3 queries)."""
    now = now or timezone.now()
    sources = abstract_sources(owner, abstracts)
    everyone = list(abstracts) + [s for rows in sources.values() for s in rows]
    strengths = effective_strengths(everyone, now=now) if everyone else {}
    rows = []
    for abstract in abstracts:
        instances = _instances(abstract, sources[abstract.pk])
        rows.append(
            AbstractRow(
                engram=abstract,
                metadata=abstract_metadata(abstract, sources[abstract.pk], strengths, now),
                instances=instances,
                blockers=export_blockers(abstract, instances=instances),
            )
        )
    return rows


# --- export ---------------------------------------------------------------------------------


def _provenance(abstract: Engram, identity: Identity) -> dict[str, object]:
    """origin: the key id of the installation that wrote it; chain: keys it passed through."""
    received = (abstract.provenance or {}).get("exchange")
    if isinstance(received, dict) and isinstance(received.get("origin"), str):
        chain = [c for c in received.get("chain", []) if isinstance(c, str) and c.strip()]
        origin = received["origin"]
    else:
        origin, chain = identity.key_id, []
    chain = [*chain, identity.key_id][-packet_format.MAX_CHAIN :]
    return {"origin": origin[: packet_format.MAX_NAME_CHARS], "chain": chain}


def _license(abstract: Engram) -> str:
    imported = (abstract.extra or {}).get("exchange", {})
    value = imported.get("license") if isinstance(imported, dict) else None
    return value if isinstance(value, str) and value.strip() else DEFAULT_LICENSE


def packet_export(
    *,
    owner: Any,
    ids: Sequence[str] | None = None,
    now: datetime | None = None,
    record: bool = True,
) -> ExportResult:
    """Sign a packet of the owner's selected (default: all) eligible abstracts.

    Raises InvalidInput("ids", ...) naming unknown or ineligible ids, an empty selection, or a
    packet over the 1 MiB import limit. `record=False` builds a preview and stores nothing.
    """
    now = now or timezone.now()
    identity = identity_get(owner=owner)
    qs = Engram.objects.for_owner(owner).filter(kind=Engram.Kind.ABSTRACT).order_by("engram_id")
    if ids is not None:
        wanted = list(dict.fromkeys(i for i in ids if isinstance(i, str)))
        abstracts = list(qs.filter(engram_id__in=wanted))
        missing = sorted(set(wanted) - {a.engram_id for a in abstracts})
        if missing:
            raise InvalidInput("ids", "no such abstract: " + ", ".join(missing))
    else:
        abstracts = list(
            qs.filter(status=Engram.Status.ACTIVE, visibility__in=EXPORTABLE_VISIBILITY)
        )
    rows = abstracts_overview(owner, abstracts, now=now)
    blocked = [row for row in rows if not row.eligible]
    if ids is not None and blocked:
        raise InvalidInput(
            "ids",
            "; ".join(f"{row.engram.engram_id}: {', '.join(row.blockers)}" for row in blocked),
        )
    rows = [row for row in rows if row.eligible]
    if not rows:
        raise InvalidInput(
            "ids",
            "nothing to export: an abstract must be ABS-, public or template, active and "
            "secret-free",
        )
    items: list[dict[str, object]] = [
        {
            "id": row.engram.engram_id,
            "statement": row.engram.statement,
            "structure": row.engram.structure,
            "applies_when": row.engram.applies_when,
            "instances": row.instances,
            "exchange_metadata": {name: row.metadata[name] for name in METADATA_FIELDS},
            "provenance": _provenance(row.engram, identity),
            "license": _license(row.engram),
        }
        for row in rows
    ]
    packet = packet_format.build_packet(
        sender_name=identity.name,
        private_raw=identity_private_key(identity),
        public_raw=identity.public_raw,
        abstracts=items,
        now=now,
    )
    raw = packet_format.serialize_packet(packet)
    if len(raw) > packet_format.MAX_PACKET_BYTES:
        raise InvalidInput(
            "ids",
            f"the packet would be {len(raw)} bytes, over the "
            f"{packet_format.MAX_PACKET_BYTES}-byte limit peers accept; select fewer abstracts",
        )
    saved: Packet | None = None
    if record:
        with transaction.atomic():
            saved = Packet.objects.create(
                owner=owner,
                direction=Packet.Direction.OUT,
                packet_id=str(packet["id"]),
                digest=packet_format.packet_digest(packet),
                key_id=identity.key_id,
                sender_name=identity.name,
                created_at=now,
                received_at=now,
                processed_at=now,
                status=Packet.Status.EXPORTED,
                raw=raw.decode("utf-8"),
                item_count=len(rows),
            )
            PacketItem.objects.bulk_create(
                PacketItem(
                    owner=owner,
                    packet=saved,
                    position=index,
                    abstract_id=row.engram.engram_id,
                    statement=row.engram.statement,
                    result=PacketItem.Result.EXPORTED,
                    fitness=float(row.metadata["fitness_score"]),
                    engram=row.engram,
                )
                for index, row in enumerate(rows)
            )
    return ExportResult(packet=packet, raw=raw, record=saved)


def packet_yaml(packet: dict[str, object]) -> str:
    """A YAML rendering of a packet for people to read; the JSON bytes are what is signed."""
    return yaml.safe_dump(packet, sort_keys=False, allow_unicode=True, width=100)
