"""Import and export of engram files (PLUR, Datacore, toejough TOML, Mem0) through the store."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory import interop, scanner, validation
from memory.errors import Conflict, DomainError, InvalidInput
from memory.models import Engram, Event, IdSequence, ReviewItem
from memory.services.activity import activity_mark
from memory.services.engrams import embed_texts, engram_build
from memory.services.events import events_record
from memory.validation import SCOPE_RE

# Record fields without a column of their own travel in Engram.extra under this key.
RECORD_KEY = "_record"
ID_RE = interop.ENGRAM_ID_RE
EMBED_BATCH = 64
WRITE_ATTEMPTS = 3  # a concurrent write of one of the statements: drop it as a duplicate, retry


class ImportRejected(DomainError):
    def __init__(
        self, message: str, *, line: int | None, field: str | None, index: int | None
    ) -> None:
        super().__init__(
            message + " Nothing was imported.",
            code="import_rejected",
            details={"line": line, "field": field, "index": index},
        )


@dataclass
class ImportReport:
    format: str
    total: int
    created: int = 0
    skipped_existing: int = 0
    duplicates: int = 0
    dry_run: bool = False
    ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "total": self.total,
            "created": self.created,
            "skipped_existing": self.skipped_existing,
            "duplicates": self.duplicates,
            "dry_run": self.dry_run,
            "ids": self.ids,
        }


def _when(value: Any) -> datetime | None:
    if not value:
        return None
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None:
        return None
    return parsed if timezone.is_aware(parsed) else parsed.replace(tzinfo=UTC)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


# Column limits (memory.models.Engram) and the learn path's limits (memory.validation).
MAX_LENGTHS = {
    "engram_id": 40,
    "scope": validation.MAX_SHORT_CHARS,
    "domain": validation.MAX_SHORT_CHARS,
    "journal_ref": 300,
    "source": validation.MAX_NAME_CHARS,
    "statement": validation.MAX_STATEMENT_CHARS,
    "abstract": 40,
}


def _check_record(record: dict[str, Any], index: int) -> None:
    for name, limit in MAX_LENGTHS.items():
        value = record.get(name)
        if isinstance(value, str) and len(value) > limit:
            raise ImportRejected(
                f"entry {index}: {name} is longer than {limit} characters.",
                line=None,
                field=name,
                index=index,
            )
    scope = record.get("scope") or "global"
    if not SCOPE_RE.match(scope):
        raise ImportRejected(
            f"entry {index}: scope {scope!r} is not a valid scope.",
            line=None,
            field="scope",
            index=index,
        )
    texts = [record.get("statement") or "", record.get("rationale") or ""]
    texts += [t for t in record.get("tags") or [] if isinstance(t, str)]
    texts += [t for t in record.get("contraindications") or [] if isinstance(t, str)]
    for text in texts:
        result = scanner.scan(text)
        if result.secrets:
            raise ImportRejected(
                f"entry {index} contains what looks like a secret ({', '.join(result.secrets)}).",
                line=None,
                field="statement",
                index=index,
            )
        if result.injections:
            raise ImportRejected(
                f"entry {index} contains prompt-injection text ({', '.join(result.injections)}).",
                line=None,
                field="statement",
                index=index,
            )


def _engram_from_record(owner: Any, record: dict[str, Any], now: datetime) -> Engram:
    signals = record.get("feedback_signals") or {}
    enforcement = record.get("enforcement") or Engram.Enforcement.ADVISORY
    stash = {
        "abstract_detail": record.get("abstract_detail") or {},
        "enforcement": record.get("enforcement") or "",
        "storage_strength": record.get("storage_strength"),
        "last_accessed": record.get("last_accessed"),
        "last_hit_at": record.get("last_hit_at"),
        "learned_at": record.get("learned_at"),
        "valid_from": record.get("valid_from"),
        "valid_until": record.get("valid_until"),
    }
    extra = dict(record.get("extra") or {})
    extra[RECORD_KEY] = stash
    engram_id = record.get("engram_id") or ""
    kind = engram_id.split("-", 1)[0] if engram_id else "ENG"
    return engram_build(
        owner=owner,
        now=now,
        engram_id=engram_id,
        kind=kind if kind in Engram.Kind.values else Engram.Kind.CONCRETE,
        version=int(record.get("version") or 1),
        status=record.get("status") or Engram.Status.ACTIVE,
        consolidated=bool(record.get("consolidated")),
        type=record.get("type") or Engram.Type.BEHAVIORAL,
        scope=record.get("scope") or "global",
        visibility=record.get("visibility") or Engram.Visibility.PRIVATE,
        polarity=record.get("polarity"),
        statement=record["statement"],
        rationale=record.get("rationale") or "",
        contraindications=list(record.get("contraindications") or []),
        tags=list(record.get("tags") or []),
        domain=record.get("domain") or "",
        entities=list(record.get("entities") or []),
        structure=record.get("structure") or "",
        applies_when=record.get("applies_when") or "",
        learned_at=_when(record.get("learned_at")) or now,  # `now` is also created_at
        valid_from=_when(record.get("valid_from")),
        valid_until=_when(record.get("valid_until")),
        emotional_weight=float(record.get("emotional_weight") or 5),
        confidence=float(record.get("confidence") or 5),
        trigger_context=record.get("trigger_context") or "",
        journal_ref=record.get("journal_ref") or "",
        retrieval_strength=min(1.0, max(0.0, float(record.get("retrieval_strength") or 0.7))),
        storage_strength=min(1.0, max(0.0, float(record.get("storage_strength") or 0.0))),
        frequency=int(record.get("frequency") or 0),
        last_accessed=_when(record.get("last_accessed")),
        injections=int(record.get("injections") or 0),
        hits=int(record.get("hits") or 0),
        misses=int(record.get("misses") or 0),
        last_hit_at=_when(record.get("last_hit_at")),
        feedback_positive=int(signals.get("positive") or 0),
        feedback_negative=int(signals.get("negative") or 0),
        feedback_neutral=int(signals.get("neutral") or 0),
        surfaced=int(record.get("surfaced") or 0),
        followed=int(record.get("followed") or 0),
        contradicted=int(record.get("contradicted") or 0),
        ignored=int(record.get("ignored") or 0),
        irrelevant=int(record.get("irrelevant") or 0),
        enforcement=(
            enforcement if enforcement in Engram.Enforcement.values else Engram.Enforcement.ADVISORY
        ),
        source=record.get("source") or "",
        derivation_count=max(1, int(record.get("derivation_count") or 1)),
        abstract=record.get("abstract") or "",
        derived_from=list(record.get("derived_from") or []),
        provenance=dict(record.get("provenance") or {}),
        exchange_metadata=dict(record.get("exchange_metadata") or {}),
        extra=extra,
        retired_at=now if record.get("status") == "retired" else None,
    )


def record_from_engram(engram: Engram) -> dict[str, Any]:
    """The interop record of one engram: the inverse of import, for a lossless round trip."""
    extra = dict(engram.extra or {})
    stash = extra.pop(RECORD_KEY, {}) or {}

    def stashed(name: str, live: Any) -> Any:
        # Unchanged imported values come back verbatim (their original text form); a learned_at
        # the file did not have was filled with the import time and goes back out as absent.
        if name in stash:
            original = stash[name]
            if original is None and (live is None or live == engram.created_at):
                return None
            if original is not None and _when(original) == live:
                return original
        return _iso(live) if isinstance(live, datetime) else live

    return interop.new_record(
        engram_id=engram.engram_id,
        version=engram.version,
        status=engram.status,
        consolidated=engram.consolidated,
        type=engram.type,
        scope=engram.scope,
        visibility=engram.visibility,
        polarity=engram.polarity,
        statement=engram.statement,
        rationale=engram.rationale,
        contraindications=list(engram.contraindications or []),
        tags=list(engram.tags or []),
        domain=engram.domain,
        entities=list(engram.entities or []),
        learned_at=stashed("learned_at", engram.learned_at),
        valid_from=stashed("valid_from", engram.valid_from),
        valid_until=stashed("valid_until", engram.valid_until),
        emotional_weight=_number(engram.emotional_weight),
        confidence=_number(engram.confidence),
        trigger_context=engram.trigger_context,
        journal_ref=engram.journal_ref,
        retrieval_strength=engram.retrieval_strength,
        storage_strength=stash.get("storage_strength")
        if stash.get("storage_strength") is not None
        and float(stash["storage_strength"]) == engram.storage_strength
        else engram.storage_strength,
        frequency=engram.frequency,
        last_accessed=stashed("last_accessed", engram.last_accessed),
        injections=engram.injections,
        hits=engram.hits,
        misses=engram.misses,
        last_hit_at=stashed("last_hit_at", engram.last_hit_at),
        feedback_signals={
            "positive": engram.feedback_positive,
            "negative": engram.feedback_negative,
            "neutral": engram.feedback_neutral,
        },
        surfaced=engram.surfaced,
        followed=engram.followed,
        contradicted=engram.contradicted,
        ignored=engram.ignored,
        irrelevant=engram.irrelevant,
        enforcement=_restore_enforcement(stash.get("enforcement"), engram.enforcement),
        source=engram.source,
        derivation_count=engram.derivation_count,
        abstract=engram.abstract or None,
        abstract_detail=stash.get("abstract_detail") or {},
        derived_from=list(engram.derived_from or []),
        provenance=dict(engram.provenance or {}),
        exchange_metadata=dict(engram.exchange_metadata or {}),
        structure=engram.structure,
        applies_when=engram.applies_when,
        extra=extra,
    )


def _restore_enforcement(original: Any, live: str) -> str:
    # An imported level Engram does not know ("" or another ladder) maps to advisory; give the
    # original back unless a person has since changed the level.
    unknown = isinstance(original, str) and original not in Engram.Enforcement.values
    if unknown and live == Engram.Enforcement.ADVISORY:
        return str(original)
    return live


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def engrams_import(
    *,
    owner: Any,
    text: str,
    fmt: str,
    dry_run: bool = False,
    actor: str = "import",
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Import a whole file or nothing: parse, validate, scan, embed, then write in one transaction."""
    try:
        records = interop.parse(text, fmt)
    except interop.ImportFormatError as exc:
        raise ImportRejected(str(exc), line=exc.line, field=exc.field, index=exc.index) from None
    for index, record in enumerate(records):
        _check_record(record, index)
    report = ImportReport(format=fmt, total=len(records), dry_run=dry_run)
    now = timezone.now()
    existing_ids = set(
        Engram.objects.for_owner(owner)
        .filter(engram_id__in=[r["engram_id"] for r in records if r.get("engram_id")])
        .values_list("engram_id", flat=True)
    )
    existing_hashes = set(
        Engram.objects.for_owner(owner).live().values_list("scope", "content_hash")
    )
    fresh: list[Engram] = []
    seen_ids: set[str] = set()
    for record in records:
        rid = record.get("engram_id") or ""
        if rid and (rid in existing_ids or rid in seen_ids):
            report.skipped_existing += 1
            continue
        engram = _engram_from_record(owner, record, now)
        # One live engram per statement and scope (uniq_live_engram_hash); retired ones are
        # history and never collide.
        if engram.status != Engram.Status.RETIRED:
            key = (engram.scope, engram.content_hash)
            if key in existing_hashes:
                report.duplicates += 1
                continue
            existing_hashes.add(key)
        if rid:
            seen_ids.add(rid)
        fresh.append(engram)
    if dry_run:
        report.created = len(fresh)
        return report
    for start in range(0, len(fresh), EMBED_BATCH):
        chunk = fresh[start : start + EMBED_BATCH]
        vectors = embed_texts([e.statement for e in chunk])
        from lib.embedder import MODEL_ID

        for engram, vector in zip(chunk, vectors, strict=True):
            engram.embedding = vector
            engram.embedding_model = MODEL_ID
        if progress:
            progress(min(start + EMBED_BATCH, len(fresh)), len(fresh))
    drawn = [e for e in fresh if not ID_RE.match(e.engram_id or "")]
    for attempt in range(WRITE_ATTEMPTS):
        for engram in drawn:
            # Drawn inside the write; one drawn in a rolled-back attempt was given back.
            engram.engram_id = ""
        try:
            with transaction.atomic():
                _write_new(owner, fresh, fmt=fmt, actor=actor, now=now)
            break
        except IntegrityError:
            # A concurrent write (a learn, another import) stored one of these statements, or
            # ids, between the look above and this insert: those are skipped now, the rest
            # goes in. Any other integrity error stands.
            fresh, by_id, by_hash = _drop_now_stored(owner, fresh)
            if not (by_id or by_hash):
                raise
            kept = {id(e) for e in fresh}
            drawn = [e for e in drawn if id(e) in kept]
            report.skipped_existing += by_id
            report.duplicates += by_hash
            if attempt == WRITE_ATTEMPTS - 1:
                raise Conflict(
                    "The store changed under this import several times; nothing was imported. "
                    "Try again.",
                    code="busy",
                ) from None
    report.created = len(fresh)
    report.ids = [e.engram_id for e in fresh]
    return report


def _write_new(owner: Any, fresh: list[Engram], *, fmt: str, actor: str, now: datetime) -> None:
    """Insert the new engrams with their ids, review items, events and activity (one
    transaction of the caller)."""
    for engram in fresh:
        if not engram.engram_id:
            engram.engram_id = IdSequence.next_id(owner=owner, prefix="ENG", when=now)
    Engram.objects.insert_new(fresh)
    created = list(
        Engram.objects.for_owner(owner).filter(engram_id__in=[e.engram_id for e in fresh])
    )
    ReviewItem.objects.bulk_create(
        ReviewItem(
            owner=owner,
            kind=ReviewItem.Kind.CANDIDATE,
            engram=e,
            reason="Imported as a candidate",
        )
        for e in created
        if e.status == Engram.Status.CANDIDATE
    )
    events_record(
        owner,
        [(Event.ENGRAM_CREATED, e, {"source": "import", "format": fmt}) for e in created],
        actor=actor,
        when=now,
    )
    for scope in {e.scope for e in created}:
        activity_mark(owner=owner, scope=scope, when=now)


def _drop_now_stored(owner: Any, fresh: list[Engram]) -> tuple[list[Engram], int, int]:
    """After a rolled-back write: drop the engrams whose given id is now taken, or whose
    statement a live engram of their scope now holds; the rest are made new again. Returns
    them and how many were dropped by id and by statement."""
    mine = Engram.objects.for_owner(owner)
    taken = set(
        mine.filter(engram_id__in=[e.engram_id for e in fresh if e.engram_id]).values_list(
            "engram_id", flat=True
        )
    )
    stored = set(
        mine.live()
        .filter(content_hash__in={e.content_hash for e in fresh})
        .values_list("scope", "content_hash")
    )
    kept: list[Engram] = []
    by_id = by_hash = 0
    for engram in fresh:
        if engram.engram_id in taken:
            by_id += 1
        elif (
            engram.status != Engram.Status.RETIRED and (engram.scope, engram.content_hash) in stored
        ):
            by_hash += 1
        else:
            engram.pk = None
            engram._state.adding = True
            kept.append(engram)
    return kept, by_id, by_hash


EXPORT_FORMATS = ("plur-yaml",)


def engrams_export(
    *,
    owner: Any,
    fmt: str = "plur-yaml",
    include_retired: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> str:
    """The owner's engrams as a PLUR engrams.yaml document."""
    if fmt not in EXPORT_FORMATS:
        raise InvalidInput("format", f"must be one of {', '.join(EXPORT_FORMATS)}")
    qs = Engram.objects.for_owner(owner).order_by("pk")
    if not include_retired:
        qs = qs.live()
    total = qs.count()
    records = []
    for i, engram in enumerate(qs.iterator(chunk_size=500), start=1):
        records.append(record_from_engram(engram))
        if progress and (i % 200 == 0 or i == total):
            progress(i, total)
    return interop.dump_plur_yaml(records)
