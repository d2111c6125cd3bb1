"""Engram write services: learn, update, retire, reinforce, consolidate (feedback and outcomes
are in `memory.services.outcomes`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from memory import validation
from memory.errors import Conflict, DomainError, InvalidInput
from memory.maths import activation, coaccess, textnorm
from memory.models import (
    Association,
    Engram,
    Event,
    IdSequence,
    OwnerSettings,
    ReviewItem,
)
from memory.services.activity import activities_mark, activity_mark
from memory.services.events import event_record, events_record
from memory.services.outcomes import feedback_record
from memory.validation import (
    MAX_STATEMENT_CHARS,
    check_text,
)
from memory.validation import scope as validate_scope

MERGE_COSINE = 0.92
RELATED_COSINE = 0.75
NEIGHBOURS = 5
# A learn that lost a race to store the same statement runs once more, as a recurrence.
LEARN_ATTEMPTS = 2
USER_SOURCES = {"user", "person"}


@dataclass
class LearnResult:
    engram: Engram
    outcome: str  # created | recurrence | merge_proposed | contradiction_flagged
    related: list[dict[str, Any]] = field(default_factory=list)


# --- validation and scanning ---------------------------------------------------------------


def search_text_of(engram: Engram) -> str:
    """The indexed text: statement, rationale, tags, domain, entity names, contraindications."""
    entity_names = []
    for entity in engram.entities or []:
        if isinstance(entity, str):
            entity_names.append(entity)
        elif isinstance(entity, dict) and isinstance(entity.get("name"), str):
            entity_names.append(entity["name"])
    parts = [
        engram.statement,
        engram.rationale,
        " ".join(engram.tags or []),
        engram.domain,
        " ".join(entity_names),
        " ".join(c for c in engram.contraindications or [] if isinstance(c, str)),
    ]
    text = " ".join(p for p in parts if p)
    # Separators as spaces, so "api.auth" and "api-auth" match "api auth".
    return re.sub(r"[._:/\-]+", " ", text) if text else ""


def embed_texts(texts: Sequence[str]) -> np.ndarray:
    from lib.embedder import get_embedder

    return get_embedder().embed(list(texts))


def embedding_model_id() -> str:
    """The id of the running embedding model, stored with every vector."""
    from lib.embedder import MODEL_ID

    return MODEL_ID


def engram_build(
    *, owner: Any, now: datetime, vector: np.ndarray | None = None, **fields: Any
) -> Engram:
    """The one way a new engram row is made (learn, import, abstract, exchange), unsaved.

    Every path gives its own fields; this sets what they must all agree on: the statement
    stripped, its content hash, the search text, the model id of the vector, and the
    timestamps (learned now unless given; the RS anchor, created and updated now).
    """
    fields.setdefault("learned_at", now)
    engram = Engram(owner=owner, rs_anchor_at=now, created_at=now, updated_at=now, **fields)
    engram.statement = engram.statement.strip()
    engram.content_hash = textnorm.content_hash(engram.statement)
    if vector is not None:
        engram.embedding = vector
        engram.embedding_model = embedding_model_id()
    engram.search_text = search_text_of(engram)
    return engram


# --- learn --------------------------------------------------------------------------------


def _auto_approve(owner: Any) -> bool:
    return bool(
        OwnerSettings.objects.filter(owner=owner).values_list("auto_approve", flat=True).first()
    )


def _relation(new: Engram, other: Engram, cosine: float) -> str | None:
    if cosine < RELATED_COSINE:
        return None
    opposed = textnorm.polarity_opposes(new.polarity, other.polarity) or textnorm.has_opposition(
        new.statement, other.statement
    )
    if opposed:
        return "contradiction"
    if cosine >= MERGE_COSINE:
        return "merge"
    return "semantic"


@dataclass
class LearnInput:
    """One validated learn request: the new engram's fields, nothing written yet."""

    fields: dict[str, Any]
    explicit: bool
    digest: str

    @property
    def scope(self) -> str:
        return str(self.fields["scope"])

    @property
    def statement(self) -> str:
        return str(self.fields["statement"])

    @property
    def source(self) -> str:
        return str(self.fields["source"])


def learn_input(
    *,
    statement: str,
    scope: str = "global",
    type: str = Engram.Type.BEHAVIORAL,
    polarity: str | None = None,
    rationale: str = "",
    tags: Iterable[str] | None = None,
    domain: str = "",
    entities: list[Any] | None = None,
    contraindications: Iterable[str] | None = None,
    source: str = "agent",
    direct_instruction: bool = False,
    emotional_weight: float = 5.0,
    confidence: float = 5.0,
    trigger_context: str = "",
    visibility: str = Engram.Visibility.PRIVATE,
    valid_from: datetime | None = None,
    valid_until: datetime | None = None,
) -> LearnInput:
    """Step 1 of the write path: validate every field and scan the text (raises DomainError)."""
    statement = validation.text("statement", statement, limit=MAX_STATEMENT_CHARS, required=True)
    rationale = validation.text("rationale", rationale)
    scope = validate_scope(scope)
    type = validation.choice("type", type, Engram.Type.values)
    polarity = validation.choice(
        "polarity", polarity or None, Engram.Polarity.values, nullable=True
    )
    visibility = validation.choice("visibility", visibility, Engram.Visibility.values)
    tag_list = validation.str_list("tags", tags)
    contra = validation.str_list("contraindications", contraindications)
    domain = validation.text("domain", domain, limit=validation.MAX_SHORT_CHARS)
    trigger_context = validation.text("trigger_context", trigger_context)
    source = validation.text("source", source, limit=validation.MAX_NAME_CHARS) or "agent"
    if entities is not None and not isinstance(entities, list):
        raise InvalidInput("entities", "must be a list")
    ew = validation.weight("emotional_weight", emotional_weight)
    conf = validation.weight("confidence", confidence)
    if valid_from and valid_until and valid_until <= valid_from:
        raise InvalidInput("valid_until", "must be after valid_from")
    check_text(statement, rationale, trigger_context, domain, *tag_list, *contra)
    return LearnInput(
        fields={
            "type": type,
            "scope": scope,
            "visibility": visibility,
            "polarity": polarity,
            "statement": statement,
            "rationale": rationale,
            "tags": tag_list,
            "domain": domain,
            "entities": entities or [],
            "contraindications": contra,
            "source": source,
            "emotional_weight": ew,
            "confidence": conf,
            "trigger_context": trigger_context,
            "valid_from": valid_from,
            "valid_until": valid_until,
        },
        explicit=source in USER_SOURCES or direct_instruction,
        digest=textnorm.content_hash(statement),
    )


def _build(
    owner: Any,
    draft: LearnInput,
    *,
    engram_id: str,
    status: str,
    vector: np.ndarray,
    actor: str,
    now: datetime,
) -> Engram:
    return engram_build(
        owner=owner,
        now=now,
        vector=vector,
        engram_id=engram_id,
        status=status,
        provenance={"origin": "local", "source": draft.source, "actor": actor},
        **draft.fields,
    )


@dataclass
class _Writes:
    """Rows that relating new engrams asks for, written together once the engrams are saved."""

    owner: Any
    actor: str
    now: datetime
    reviews: list[ReviewItem] = field(default_factory=list)
    associations: list[Association] = field(default_factory=list)
    events: list[tuple[str, Engram, dict[str, Any]]] = field(default_factory=list)

    def flush(self) -> None:
        ReviewItem.objects.bulk_create(self.reviews)
        Association.objects.bulk_create(self.associations, ignore_conflicts=True)
        events_record(self.owner, self.events, actor=self.actor, when=self.now)


def _relate(
    engram: Engram, neighbours: Sequence[tuple[Engram, float]], writes: _Writes
) -> tuple[str, list[dict[str, Any]]]:
    """Step 3: merge proposal, semantic association or contradiction pair for each neighbour.

    Decides the new engram's final status (a near-duplicate waits as a candidate) and queues
    its review items, associations and events; the engram itself is saved by the caller.
    """
    outcome = "created"
    related: list[dict[str, Any]] = []
    merge_target: Engram | None = None
    for other, cosine in neighbours:
        relation = _relation(engram, other, cosine)
        if relation is None:
            continue
        cos = round(cosine, 4)
        related.append({"id": other.engram_id, "cosine": cos, "relation": relation})
        if relation == "contradiction":
            outcome = "contradiction_flagged"
            writes.reviews.append(
                ReviewItem(
                    owner=writes.owner,
                    kind=ReviewItem.Kind.CONTRADICTION,
                    engram=engram,
                    other=other,
                    payload={"cosine": cos},
                    reason=f"{engram.engram_id} may contradict {other.engram_id}",
                )
            )
            writes.events.append(
                (Event.CONTRADICTION_DETECTED, engram, {"other": other.engram_id, "cosine": cos})
            )
        elif relation == "merge" and merge_target is None:
            merge_target = other
            if outcome == "created":
                outcome = "merge_proposed"
            writes.reviews.append(
                ReviewItem(
                    owner=writes.owner,
                    kind=ReviewItem.Kind.MERGE,
                    engram=engram,
                    other=other,
                    payload={"cosine": cos},
                    reason=f"{engram.engram_id} repeats {other.engram_id}",
                )
            )
        if relation in {"semantic", "merge"} and cosine < MERGE_COSINE:
            strength = coaccess.semantic_association_strength(cosine)
            for src, dst in ((engram, other), (other, engram)):
                writes.associations.append(
                    Association(
                        owner=writes.owner,
                        source=src,
                        target=dst,
                        type=Association.Type.SEMANTIC,
                        strength=strength,
                        updated_at=writes.now,
                    )
                )
    if merge_target is not None:
        # A near-duplicate waits as a candidate until the merge proposal is decided.
        engram.status = Engram.Status.CANDIDATE
    elif engram.status == Engram.Status.CANDIDATE:
        writes.reviews.append(
            ReviewItem(
                owner=writes.owner,
                kind=ReviewItem.Kind.CANDIDATE,
                engram=engram,
                reason=f"New lesson from {engram.source}",
            )
        )
    writes.events.append(
        (
            Event.ENGRAM_CREATED,
            engram,
            {
                "status": engram.status,
                "scope": engram.scope,
                "source": engram.source,
                "outcome": outcome,
            },
        )
    )
    return outcome, related


def _status(draft: LearnInput, auto_approve: bool) -> str:
    """Step 4: explicit instructions are active; inferred lessons wait unless auto-approved."""
    return Engram.Status.ACTIVE if draft.explicit or auto_approve else Engram.Status.CANDIDATE


def _recur(
    owner: Any, existing: Engram, times: int, sources: Sequence[str], actor: str, now: datetime
) -> Engram:
    """Step 2: the same statement again in the same scope counts, once per repeat."""
    Engram.objects.filter(pk=existing.pk).update(
        derivation_count=F("derivation_count") + times, updated_at=now
    )
    start = existing.derivation_count
    existing.refresh_from_db()
    events_record(
        owner,
        [
            (Event.RECURRENCE_DETECTED, existing, {"derivation_count": start + n, "source": source})
            for n, source in enumerate(sources, start=1)
        ],
        actor=actor,
        when=now,
    )
    return existing


def engram_learn(
    *,
    owner: Any,
    actor: str = "agent",
    now: datetime | None = None,
    vector: np.ndarray | None = None,
    **fields: Any,
) -> LearnResult:
    """The write path in DESIGN: scan, normalise and hash, recurrence, embed, relate, status.

    `fields` are those of `learn_input` (statement, scope, type, polarity, rationale, …).
    """
    draft = learn_input(**fields)
    results: list[LearnResult | DomainError | None] = [None]
    given = {0: vector} if vector is not None else _embed_new(owner, [(0, draft)])
    _learn_committed(
        owner, [(0, draft)], results, actor=actor, now=now or timezone.now(), vectors=given
    )
    result = results[0]
    assert isinstance(result, LearnResult)
    return result


LEARN_FIELDS = {
    "statement", "scope", "type", "polarity", "rationale", "tags", "domain", "entities",
    "contraindications", "source", "direct_instruction", "emotional_weight", "confidence",
    "trigger_context", "visibility", "valid_from", "valid_until",
}  # fmt: skip


def engram_learn_batch(
    *,
    owner: Any,
    items: Sequence[Mapping[str, Any]],
    actor: str = "agent",
    now: datetime | None = None,
) -> list[LearnResult | DomainError]:
    """Learn many items as if one after another, in a few queries; bad items fail alone.

    Each item is validated on its own (an invalid one becomes its DomainError and writes
    nothing). The valid ones are written together: one embedding batch for the new
    statements, one recurrence lookup, one id block, one nearest-neighbour query per scope
    (an earlier item of the batch counts as a neighbour of a later one, as it would one by
    one), and bulk inserts.
    """
    results: list[LearnResult | DomainError | None] = [None] * len(items)
    drafts: list[tuple[int, LearnInput]] = []
    for index, item in enumerate(items):
        try:
            unknown = set(item) - LEARN_FIELDS
            if unknown:
                raise InvalidInput(sorted(unknown)[0], "unknown field")
            drafts.append((index, learn_input(**dict(item))))
        except DomainError as exc:
            results[index] = exc
        except TypeError:
            results[index] = InvalidInput("items", "each item must be an object")
    if drafts:
        now = now or timezone.now()
        vectors = _embed_new(owner, drafts)
        _learn_committed(owner, drafts, results, actor=actor, now=now, vectors=vectors)
    done = [r for r in results if r is not None]
    assert len(done) == len(items), "every item has a result"
    return done


def _embed_new(owner: Any, drafts: Sequence[tuple[int, LearnInput]]) -> dict[int, np.ndarray]:
    """Vectors of the drafts whose statement is not stored yet (an unlocked look), computed
    before the write transaction so no lock is held while the model runs. A statement stored
    meanwhile is a recurrence and its vector goes unused; one missed here is embedded inside."""
    stored = set(
        Engram.objects.for_owner(owner)
        .live()
        .filter(
            scope__in={d.scope for _, d in drafts},
            content_hash__in={d.digest for _, d in drafts},
        )
        .values_list("scope", "content_hash")
    )
    wanted: dict[tuple[str, str], list[int]] = {}
    for index, draft in drafts:
        if (draft.scope, draft.digest) not in stored:
            wanted.setdefault((draft.scope, draft.digest), []).append(index)
    if not wanted:
        return {}
    statements = {d.digest: d.statement for _, d in drafts}
    keys = list(wanted)
    matrix = embed_texts([statements[digest] for _, digest in keys])
    return {index: matrix[k] for k, key in enumerate(keys) for index in wanted[key]}


def _learn_committed(
    owner: Any,
    drafts: Sequence[tuple[int, LearnInput]],
    results: list[LearnResult | DomainError | None],
    *,
    actor: str,
    now: datetime,
    vectors: Mapping[int, np.ndarray],
) -> None:
    """`_learn_inputs` in a transaction; when a concurrent learn stored one of the statements
    first (the live-hash constraint), once more, where it is found and counts as a recurrence."""
    for attempt in range(LEARN_ATTEMPTS):
        try:
            with transaction.atomic():
                _learn_inputs(owner, drafts, results, actor=actor, now=now, vectors=vectors)
            return
        except IntegrityError as exc:
            if not is_live_hash_conflict(exc) or attempt == LEARN_ATTEMPTS - 1:
                raise
            for index, _ in drafts:
                results[index] = None


def is_live_hash_conflict(exc: IntegrityError) -> bool:
    """The live-hash constraint (PostgreSQL names it, SQLite names its columns)."""
    text = str(exc)
    return "uniq_live_engram_hash" in text or "content_hash" in text


def _learn_inputs(
    owner: Any,
    drafts: Sequence[tuple[int, LearnInput]],
    results: list[LearnResult | DomainError | None],
    *,
    actor: str,
    now: datetime,
    vectors: Mapping[int, np.ndarray] | None = None,
) -> None:
    """The write path for validated drafts (index, draft), in one transaction of the caller.

    Fills `results` at each draft's index. Steps 2-4 of DESIGN's write path, batched: one
    locked hash lookup, one embedding call for the statements without a given vector (keyed
    by index), one id block, one nearest-neighbour query per scope, bulk inserts. An earlier
    draft counts as a neighbour (or the original of a repeat) of a later one, exactly as if
    they were learned one after another.
    """
    from memory.search.legs import nearest_many

    # Step 2 for the whole batch: against the store, then within the batch.
    stored = {
        (e.scope, e.content_hash): e
        for e in Engram.objects.for_owner(owner)
        .live()
        .filter(
            scope__in={d.scope for _, d in drafts},
            content_hash__in={d.digest for _, d in drafts},
        )
        .select_for_update()
    }
    fresh: list[tuple[int, LearnInput]] = []
    first: dict[tuple[str, str], int] = {}  # key -> position in fresh
    repeats: dict[tuple[str, str], list[tuple[int, str]]] = {}  # key -> (index, source)
    for index, draft in drafts:
        key = (draft.scope, draft.digest)
        if key in stored or key in first:
            repeats.setdefault(key, []).append((index, draft.source))
        else:
            first[key] = len(fresh)
            fresh.append((index, draft))

    created: list[Engram] = []
    if fresh:
        auto = any(not d.explicit for _, d in fresh) and _auto_approve(owner)
        scopes = [d.scope for _, d in fresh]
        writes = _Writes(owner, actor, now)
        given = vectors or {}
        missing = [d.statement for index, d in fresh if index not in given]
        embedded = iter(embed_texts(missing) if missing else [])
        matrix = np.stack(
            [given[index] if index in given else next(embedded) for index, _ in fresh]
        ).astype(np.float32)
        store_hits = nearest_many(owner=owner, vectors=matrix, scopes=scopes, limit=NEIGHBOURS)
        within = matrix @ matrix.T
        # Ids last: the owner's id row stays locked until commit, so nothing slow comes after.
        ids = IdSequence.next_ids(owner=owner, prefix="ENG", when=now, count=len(fresh))
        for j, (index, draft) in enumerate(fresh):
            engram = _build(
                owner,
                draft,
                engram_id=ids[j],
                status=_status(draft, auto),
                vector=matrix[j],
                actor=actor,
                now=now,
            )
            # Earlier items of this batch in the same scope are neighbours too.
            candidates = list(store_hits[j]) + [
                (created[i], float(within[j, i])) for i in range(j) if scopes[i] == draft.scope
            ]
            candidates.sort(key=lambda hit: -hit[1])
            outcome, related = _relate(engram, candidates[:NEIGHBOURS], writes)
            created.append(engram)
            results[index] = LearnResult(engram, outcome, related)
        Engram.objects.insert_new(created)
        writes.flush()

    for key, repeated in repeats.items():
        target = stored.get(key) or created[first[key]]
        engram = _recur(owner, target, len(repeated), [s for _, s in repeated], actor, now)
        for index, _ in repeated:
            results[index] = LearnResult(engram, "recurrence")
    activities_mark(owner=owner, scopes={d.scope for _, d in drafts}, when=now)


# --- edit, retire, reinforce, consolidate ---------------------------------------------------

EDITABLE = {
    "statement", "rationale", "tags", "domain", "entities", "contraindications", "type", "scope",
    "polarity", "visibility", "emotional_weight", "confidence", "trigger_context", "valid_from",
    "valid_until", "enforcement",
}  # fmt: skip


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def engram_update(
    *,
    owner: Any,
    engram: Engram,
    changes: Mapping[str, Any],
    actor: str = "person",
    expected_version: int | None = None,
) -> Engram:
    """Edit fields of one engram; re-hash and re-embed when the statement changes.

    A retired engram is history and is never edited (Conflict `engram_retired`); with
    `expected_version`, an engram that changed meanwhile is refused (Conflict `version_conflict`).
    """
    if engram.status == Engram.Status.RETIRED:
        raise Conflict(f"{engram.engram_id} is retired; not edited.", code="engram_retired")
    if expected_version is not None and expected_version != engram.version:
        raise Conflict(
            f"{engram.engram_id} is at version {engram.version}, not {expected_version}.",
            code="version_conflict",
            details={"version": engram.version},
        )
    unknown = set(changes) - EDITABLE
    if unknown:
        raise InvalidInput(sorted(unknown)[0], "cannot be edited")
    clean: dict[str, Any] = {}
    for name, value in changes.items():
        if name == "statement":
            clean[name] = validation.text(name, value, limit=MAX_STATEMENT_CHARS, required=True)
        elif name in {"rationale", "trigger_context"}:
            clean[name] = validation.text(name, value)
        elif name == "domain":
            clean[name] = validation.text(name, value, limit=validation.MAX_SHORT_CHARS)
        elif name in {"tags", "contraindications"}:
            clean[name] = validation.str_list(name, value)
        elif name == "entities":
            if not isinstance(value, list):
                raise InvalidInput(name, "must be a list")
            clean[name] = value
        elif name == "type":
            clean[name] = validation.choice(name, value, Engram.Type.values)
        elif name == "scope":
            clean[name] = validate_scope(value)
        elif name == "polarity":
            clean[name] = validation.choice(
                name, value or None, Engram.Polarity.values, nullable=True
            )
        elif name == "visibility":
            clean[name] = validation.choice(name, value, Engram.Visibility.values)
        elif name == "enforcement":
            clean[name] = validation.choice(name, value, Engram.Enforcement.values)
        elif name in {"emotional_weight", "confidence"}:
            clean[name] = validation.weight(name, value)
        elif name in {"valid_from", "valid_until"}:
            if value is not None and not isinstance(value, datetime):
                raise InvalidInput(name, "must be a date-time")
            clean[name] = value
    vf = clean.get("valid_from", engram.valid_from)
    vu = clean.get("valid_until", engram.valid_until)
    if vf and vu and vu <= vf:
        raise InvalidInput("valid_until", "must be after valid_from")
    check_text(
        clean.get("statement", ""),
        clean.get("rationale", ""),
        clean.get("trigger_context", ""),
        clean.get("domain", ""),
        *clean.get("tags", []),
        *clean.get("contraindications", []),
    )
    diff = {
        name: [_jsonable(getattr(engram, name)), _jsonable(value)]
        for name, value in clean.items()
        if getattr(engram, name) != value
    }
    if not diff:
        return engram
    now = timezone.now()
    with transaction.atomic():
        for name, value in clean.items():
            setattr(engram, name, value)
        if "statement" in diff:
            engram.content_hash = textnorm.content_hash(engram.statement)
            engram.embedding = embed_texts([engram.statement])[0]
            engram.embedding_model = embedding_model_id()
        engram.search_text = search_text_of(engram)
        engram.version += 1
        engram.updated_at = now
        try:
            with transaction.atomic():
                engram.save()
        except IntegrityError as exc:
            if not is_live_hash_conflict(exc):
                raise
            raise Conflict(
                "Another live engram in this scope already says this.", code="duplicate"
            ) from None
        event_record(
            owner=owner,
            event=Event.ENGRAM_UPDATED,
            engram=engram,
            actor=actor,
            data={"changes": diff, "version": engram.version},
            when=now,
        )
        activity_mark(owner=owner, scope=engram.scope, when=now)
    return engram


def engram_retire(*, owner: Any, engram: Engram, actor: str = "person", reason: str = "") -> bool:
    """Retire (forget) an engram; it is kept for history and never injected again."""
    now = timezone.now()
    with transaction.atomic():
        previous = engram.retire(now=now)
        if previous is None:
            return False
        ReviewItem.objects.filter(engram=engram, state__in=["pending", "deferred"]).update(
            state=ReviewItem.State.DONE, decision="obsolete", decided_at=now
        )
        event_record(
            owner=owner,
            event=Event.ENGRAM_RETIRED,
            engram=engram,
            actor=actor,
            data={"from": previous, "reason": reason},
            when=now,
        )
    return True


def engram_activate(
    *, owner: Any, engram: Engram, actor: str = "person", event: str = Event.ENGRAM_PROMOTED
) -> bool:
    """Move a candidate or dormant engram to active."""
    now = timezone.now()
    with transaction.atomic():
        previous = engram_revive(engram, now=now)
        if previous is None:
            return False
        event_record(
            owner=owner, event=event, engram=engram, actor=actor, data={"from": previous}, when=now
        )
    return True


def engram_revive(engram: Engram, *, now: datetime) -> str | None:
    """`Engram.activate` in a savepoint: Conflict (code `duplicate`, nothing written) when a
    retired engram would come back beside a live one that says the same in its scope."""
    try:
        with transaction.atomic():
            return engram.activate(now=now)
    except IntegrityError as exc:
        if not is_live_hash_conflict(exc):
            raise
        engram.refresh_from_db()
        raise Conflict(
            f"{engram.engram_id} cannot come back: another live engram in its scope already "
            "says this.",
            code="duplicate",
        ) from None


def engram_consolidate(*, owner: Any, engram: Engram, actor: str = "person") -> Engram:
    """Mark a reconsolidation survivor: SS = min(1, 2·SS) (0.3 from 0), consolidated."""
    now = timezone.now()
    after = activation.storage_strength_after_reconsolidation(engram.storage_strength)
    with transaction.atomic():
        before = engram.consolidate(storage_strength=after, now=now)
        if before is not None:
            event_record(
                owner=owner,
                event=Event.ENGRAM_CONSOLIDATED,
                engram=engram,
                actor=actor,
                data={"storage_strength": [before, engram.storage_strength]},
                when=now,
            )
    return engram


def engram_reinforce(*, owner: Any, engram: Engram, actor: str = "person") -> Engram:
    """A person's reinforcement: a positive feedback signal that also wakes a dormant engram."""
    feedback_record(owner=owner, engram=engram, signal="positive", actor=actor, source="person")
    engram.refresh_from_db()
    if engram.status == Engram.Status.DORMANT:
        engram_activate(owner=owner, engram=engram, actor=actor, event=Event.STATUS_CHANGED)
    return engram
