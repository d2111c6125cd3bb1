"""Recall (ranked search with score components) and inject (the hook hot path), DESIGN profile v1.

Both run the lexical and dense legs over visible, valid engrams, fuse them with RRF (k = 60) and
weight by activation. `recall` is read-only unless a session is given; `inject` records its
injections in the session and applies the injection access rule (no strength bump).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime
from typing import Any, cast

from django.conf import settings
from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory.maths import activation, coaccess, ranking, textnorm
from memory.maths import delivery as delivery_maths
from memory.models import (
    AgentSession,
    Association,
    Engram,
    Injection,
    ReviewItem,
    scope_allowed,
)
from memory.search import legs as search
from memory.services.consider import consider_extend
from memory.services.injections import access_record
from memory.strength import effective_strengths
from memory.validation import GLOBAL_SCOPE

MODES: tuple[str, ...] = ("hybrid", "lexical", "dense")

LEXICAL_POOL = 3  # lexical leg returns 3 x limit
DENSE_POOL = 2  # dense leg returns 2 x limit
MAX_RECALL_LIMIT = 100
# Recall searches everything not retired; inject only sees active engrams (band decides bucket).
RECALL_STATUSES: tuple[str, ...] = (
    Engram.Status.ACTIVE,
    Engram.Status.CANDIDATE,
    Engram.Status.DORMANT,
)
INJECT_STATUSES: tuple[str, ...] = (Engram.Status.ACTIVE,)
INJECT_LIMIT = ranking.MAX_MAIN + ranking.MAX_CONSIDER  # fused candidates considered
SELECT_POOL = 2 * INJECT_LIMIT  # relevant candidates handed to the bucket selection
SPREAD_BANDS = frozenset({"active", "fading"})
BUCKET_OF = {
    ranking.CONSTRAINTS: Injection.Bucket.CONSTRAINT,
    ranking.DIRECTIVES: Injection.Bucket.DIRECTIVE,
    ranking.CONSIDER: Injection.Bucket.CONSIDER,
    ranking.RELATED: Injection.Bucket.SPREAD,
}
SECONDS_PER_DAY = 86400.0
# A contradiction settled as "both hold" no longer demotes the older engram.
BOTH_HOLD = ("both_valid", "keep_both")


@dataclass(frozen=True, slots=True)
class _Row:
    """What inject needs of one engram; has the attributes effective_strengths reads."""

    pk: int
    owner_id: int
    engram_id: str
    statement: str
    scope: str
    polarity: str | None
    feedback_positive: int
    feedback_negative: int
    emotional_weight: float
    consolidated: bool
    enforcement: str
    retrieval_strength: float
    rs_anchor_at: datetime
    storage_strength: float
    updated_at: datetime  # last stated: a recurrence or an edit bumps it
    status: str
    provisional_until: datetime | None
    contraindications: Any  # a JSON list (PostgreSQL decodes it, SQLite gives its text)

    @property
    def feedback_net(self) -> int:
        return int(self.feedback_positive) - int(self.feedback_negative)

    @classmethod
    def of(cls, values: Sequence[Any]) -> _Row:
        """A row read with _ROW_COLUMNS (the fields' own order), typed as the model types them."""
        row = dict(zip(_ROW_NAMES, values, strict=True))
        row["consolidated"] = bool(row["consolidated"])
        for name in ("rs_anchor_at", "updated_at"):
            row[name] = _aware(row[name])
        if row["provisional_until"] is not None:
            row["provisional_until"] = _aware(row["provisional_until"])
        notes = row["contraindications"]
        if isinstance(notes, str | bytes):
            try:
                notes = json.loads(notes)
            except ValueError:
                notes = []
        row["contraindications"] = notes if isinstance(notes, list) else []
        return cls(**row)

    def on_trial(self, now: datetime) -> bool:
        """An imported lesson in its trial: a candidate until provisional_until."""
        return (
            self.status == Engram.Status.CANDIDATE
            and self.provisional_until is not None
            and self.provisional_until > now
        )


# The columns inject reads per candidate or spread target, derived from _Row's fields so the
# SELECT list and the mapping cannot drift apart (vectors are read apart, for the best).
_ROW_NAMES = tuple(f.name for f in dataclass_fields(_Row))
_ROW_COLUMNS = ", ".join(f"e.{'id' if name == 'pk' else name}" for name in _ROW_NAMES)


def _aware(value: Any) -> datetime:
    """A datetime from a raw row: PostgreSQL gives one, SQLite gives UTC text."""
    when = value if isinstance(value, datetime) else parse_datetime(str(value))
    if when is None:
        raise ValueError(f"not a datetime: {value!r}")
    return when if timezone.is_aware(when) else when.replace(tzinfo=UTC)


def _strengths(rows: Sequence[_Row], *, now: datetime, decay_base: float) -> dict[int, float]:
    # effective_strengths reads only the attributes _Row carries; model instances would cost
    # ~40 µs each on the hot path.
    return effective_strengths(cast(Sequence[Engram], rows), now=now, decay_base=decay_base)


@dataclass(frozen=True)
class RecallResult:
    """One recalled engram with its score components (ranks from 1, None when a leg missed it)."""

    engram: Engram
    score: float  # final: ranking.ranked_score (relevance first, the prior a tie-breaker)
    fused: float  # Σ 1/(60 + rank)
    rs_eff: float
    lexical_rank: int | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    cosine: float | None = None

    @property
    def id(self) -> str:
        return self.engram.engram_id

    @property
    def components(self) -> dict[str, float | int | None]:
        return {
            "lexical_rank": self.lexical_rank,
            "lexical_score": self.lexical_score,
            "dense_rank": self.dense_rank,
            "cosine": self.cosine,
            "fused": self.fused,
            "rs_eff": self.rs_eff,
            "score": self.score,
        }


@dataclass(frozen=True)
class InjectResult:
    """What one prompt gets: bucket lists of {id, statement, score, tokens}, markdown, tokens."""

    constraints: list[dict[str, Any]] = field(default_factory=list)
    directives: list[dict[str, Any]] = field(default_factory=list)
    consider: list[dict[str, Any]] = field(default_factory=list)
    spread: list[dict[str, Any]] = field(default_factory=list)
    rendered: str = ""
    tokens: int = 0
    # Server-side milliseconds: "embed" (query), "search" (both legs), "rank" (rows, scoring,
    # buckets, spreading, rendering), "record" (injection rows and access), "total".
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def abstained(self) -> bool:
        return not self.rendered

    @property
    def ids(self) -> list[str]:
        return [
            item["id"]
            for bucket in (self.constraints, self.directives, self.consider, self.spread)
            for item in bucket
        ]


@dataclass(frozen=True)
class _Legs:
    lexical: list[tuple[int, float]]
    dense: list[tuple[int, float]]
    embed_ms: float
    search_ms: float


# --- shared steps ---------------------------------------------------------------------------


def visible_scopes(
    *,
    scope: str | None,
    scopes: Sequence[str] | None = None,
    token_scopes: Sequence[str] | None = None,
) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """(exact scopes or None for any, token patterns or None) for a request.

    `scopes` is an exact list; otherwise `scope` means that scope plus global; neither means any.
    A token's patterns ("*", "global", "project:*") restrict the result further.
    """
    patterns = None if not token_scopes or "*" in token_scopes else tuple(token_scopes)
    exact: tuple[str, ...] | None
    if scopes is not None:
        exact = tuple(dict.fromkeys(scopes))
    elif scope is not None:
        exact = tuple(dict.fromkeys([scope, GLOBAL_SCOPE]))
    else:
        exact = None
    if exact is not None and patterns is not None:
        return tuple(s for s in exact if scope_allowed(list(patterns), s)), None
    return exact, patterns


def _run_legs(
    *,
    owner: Any,
    text: str,
    mode: str,
    limit: int,
    scopes: tuple[str, ...] | None,
    patterns: tuple[str, ...] | None,
    statuses: Sequence[str],
    now: datetime,
) -> _Legs:
    """Both legs (or one) for one query; the query is embedded once.

    The embedding runs on a worker thread while the lexical leg waits for the database, so
    the two overlap. `embed_ms` is the embedding's own time and `search_ms` the two legs'.
    """
    from lib.embedder import get_embedder

    common: dict[str, Any] = {
        "scopes": scopes,
        "scope_patterns": patterns,
        "statuses": statuses,
        "valid_at": now,
    }
    embedding = get_embedder().embed_one_later(text) if mode in ("hybrid", "dense") else None
    lex: list[tuple[int, float]] = []
    den: list[tuple[int, float]] = []
    search_s = embed_s = 0.0
    if mode in ("hybrid", "lexical"):
        started = time.perf_counter()
        lex = search.lexical(owner, text, limit=LEXICAL_POOL * limit, **common)
        search_s += time.perf_counter() - started
    if embedding is not None:
        vector, embed_s = embedding.result()
        started = time.perf_counter()
        den = search.dense(owner, vector, limit=DENSE_POOL * limit, **common)
        search_s += time.perf_counter() - started
    return _Legs(lex, den, embed_s * 1000, search_s * 1000)


def _max_fused(mode: str) -> float:
    legs = ranking.FUSION_LEGS if mode == "hybrid" else 1
    return legs / (ranking.RRF_K + 1)


def _owner_prefs(owner: Any, now: datetime) -> tuple[int | None, float, bool]:
    """(budget override or None, decay base, whether any imported lesson is on trial), 1 query."""
    owner_id = getattr(owner, "pk", owner)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.inject_budget_tokens, s.decay_base, EXISTS (SELECT 1 FROM memory_engram t "
            "WHERE t.owner_id = %s AND t.status = %s AND t.provisional_until > %s) "
            "FROM (SELECT 1 AS one) AS o LEFT JOIN memory_ownersettings s ON s.owner_id = %s",
            [
                owner_id,
                Engram.Status.CANDIDATE,
                connection.ops.adapt_datetimefield_value(now),
                owner_id,
            ],
        )
        budget, base, trials = cursor.fetchone()
    decay_base = float(base) if base is not None else float(settings.ENGRAM_DECAY_BASE)
    return budget, decay_base, bool(trials)


def _newest_variants_first(
    ranked: Iterable[tuple[str, str, str, datetime, float]],
    contradicted: Iterable[tuple[str, str]] = (),
) -> list[tuple[str, float]]:
    """`ranking.newest_variant_first` over (id, scope, statement, last stated, score), ranked."""
    return ranking.newest_variant_first(
        [
            ranking.Variant(eid, scope, textnorm.variant_key(statement), when.timestamp(), score)
            for eid, scope, statement, when, score in ranked
        ],
        contradicted=contradicted,
    )


def _contradictions(owner: Any, rows: Mapping[int, Any]) -> list[tuple[str, str]]:
    """Contradiction pairs (engram ids) among the candidates, from the write path's review items.

    One query over the candidates' ids (the review item's engram foreign-key index); a pair
    someone settled as both holding does not count. A superseded engram whose newer version is
    also a candidate counts too (read from the row, no query).
    """
    pairs = [
        (row.engram_id, rows[row.superseded_by_id].engram_id)
        for row in rows.values()
        if getattr(row, "superseded_by_id", None) in rows
    ]
    if len(rows) < 2:
        return pairs
    pks = sorted(rows)
    engram_in, engram_params = search.ids_in("engram_id", pks, connection)
    other_in, other_params = search.ids_in("other_id", pks, connection)
    # Raw SQL: the ORM took ~2 ms to build two IN lists of ~70 ids on the hot path.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT engram_id, other_id FROM memory_reviewitem WHERE owner_id = %s AND kind = %s "
            f"AND {engram_in} AND {other_in} "
            f"AND decision NOT IN ({', '.join(['%s'] * len(BOTH_HOLD))})",
            [
                getattr(owner, "pk", owner),
                ReviewItem.Kind.CONTRADICTION,
                *engram_params,
                *other_params,
                *BOTH_HOLD,
            ],
        )
        found = cursor.fetchall()
    pairs.extend((rows[a].engram_id, rows[b].engram_id) for a, b in found)
    return pairs


# --- recall ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Scored:
    """One fused candidate with the one score recall and inject both rank by."""

    pk: int
    fused: float
    relevance: float
    score: float  # ranking.ranked_score: relevance · prior tie-breaker · recent lead
    lexical: tuple[int, float] | None  # (rank from 1, score) in the lexical leg
    dense: tuple[int, float] | None  # (rank from 1, cosine) in the dense leg


def _score(
    legs: _Legs,
    rows: Mapping[int, Any],
    strengths: Mapping[int, float],
    *,
    mode: str,
    now: datetime,
) -> list[_Scored]:
    """The scoring step recall and inject share: RRF over the legs (ties to the stronger
    engram), relevance from the fused score and the match evidence, then the activation prior
    (RS_eff, feedback, emotional weight, consolidation) as a tie-breaker against the best prior
    among the candidates, and a lead for what was stated within the last day
    (`ranking.ranked_score`). Candidates whose row is gone (deleted between the legs and the
    read) are left out."""
    rankings = [[str(pk) for pk, _ in legs.lexical], [str(pk) for pk, _ in legs.dense]]
    fused = ranking.rrf(
        [r for r in rankings if r], tiebreak={str(pk): rs for pk, rs in strengths.items()}
    )
    lex_rank = {pk: (rank, score) for rank, (pk, score) in enumerate(legs.lexical, start=1)}
    den_rank = {pk: (rank, cos) for rank, (pk, cos) in enumerate(legs.dense, start=1)}
    max_fused = _max_fused(mode)
    ran_lexical = mode in ("hybrid", "lexical")
    present = [(int(key), fused_score) for key, fused_score in fused if int(key) in rows]
    priors = {
        pk: ranking.activation_prior(
            strengths[pk],
            rows[pk].feedback_net,
            rows[pk].emotional_weight,
            rows[pk].consolidated,
        )
        for pk, _ in present
    }
    best_prior = max(priors.values(), default=1.0)
    scored: list[_Scored] = []
    for pk, fused_score in present:
        row = rows[pk]
        lex, den = lex_rank.get(pk), den_rank.get(pk)
        rel = ranking.relevance(
            fused_score,
            max_fused,
            lexical_hit=(lex is not None) if ran_lexical else None,
            dense_cosine=den[1] if den else None,
        )
        age = (now - row.updated_at).total_seconds()
        score = ranking.ranked_score(
            rel, priors[pk], best_prior, recent=0 <= age < ranking.RECENT_SECONDS
        )
        scored.append(_Scored(pk, fused_score, rel, score, lex, den))
    return scored


def recall(
    *,
    owner: Any,
    query: str,
    scopes: Sequence[str] | None = None,
    scope: str | None = None,
    limit: int = 10,
    mode: str = "hybrid",
    session: AgentSession | None = None,
    now: datetime | None = None,
    token_scopes: Sequence[str] | None = None,
    statuses: Iterable[str] | None = None,
) -> list[RecallResult]:
    """Engrams ranked for `query` with per-result score components; read-only without a session.

    Ranked as inject ranks, without its abstention floor: relevance (fused RRF score over its
    maximum, times match evidence) first, the activation prior (0.5 + 0.5·RS_eff) · f_fb · f_emo
    · consolidation as a tie-breaker against the best prior among the candidates (at most
    `ranking.PRIOR_SPAN` off), a `ranking.RECENT_BONUS` lead for what was stated within the last
    day; variants of one rule in one scope (another value or the
    opposite direction, `textnorm.variant_key`), and candidates in one scope that an open
    contradiction review pairs, trade places so that the newest leads. With a
    session, each result counts as one access: frequency + 1, last_accessed, re-anchor at
    RS_eff (no bump); Injection bucket "recall".
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}")
    limit = max(1, min(int(limit), MAX_RECALL_LIMIT))
    now = now or timezone.now()
    text = (query or "").replace("\x00", " ").strip()
    exact, patterns = visible_scopes(scope=scope, scopes=scopes, token_scopes=token_scopes)
    if not text:
        return []
    legs = _run_legs(
        owner=owner,
        text=text,
        mode=mode,
        limit=limit,
        scopes=exact,
        patterns=patterns,
        statuses=tuple(statuses) if statuses is not None else RECALL_STATUSES,
        now=now,
    )
    pks = {pk for pk, _ in legs.lexical} | {pk for pk, _ in legs.dense}
    if not pks:
        return []
    rows = {e.pk: e for e in Engram.objects.filter(pk__in=pks).defer("embedding")}
    _, base, _ = _owner_prefs(owner, now)
    strengths = effective_strengths(list(rows.values()), now=now, decay_base=base)
    results = [
        RecallResult(
            engram=rows[item.pk],
            score=item.score,
            fused=item.fused,
            rs_eff=strengths[item.pk],
            lexical_rank=item.lexical[0] if item.lexical else None,
            lexical_score=item.lexical[1] if item.lexical else None,
            dense_rank=item.dense[0] if item.dense else None,
            cosine=item.dense[1] if item.dense else None,
        )
        for item in _score(legs, rows, strengths, mode=mode, now=now)
    ]
    # Ties (e.g. no match evidence) go to the better fused rank, then the stronger and the more
    # recent engram, never to insertion order.
    results.sort(
        key=lambda r: (-r.score, -r.fused, -r.rs_eff, -r.engram.learned_at.timestamp(), r.id)
    )
    # Variants of one rule (another value, the opposite direction): the newest leads.
    reordered = _newest_variants_first(
        ((r.id, r.engram.scope, r.engram.statement, r.engram.updated_at, r.score) for r in results),
        _contradictions(owner, rows),
    )
    by_id = {r.id: r for r in results}
    results = [
        by_id[rid] if by_id[rid].score == score else replace(by_id[rid], score=score)
        for rid, score in reordered
    ]
    results = results[:limit]
    if session is not None:
        access_record(
            owner=owner,
            session=session,
            picks=[
                (r.engram.pk, Injection.Bucket.RECALL, rank, r.score, 0)
                for rank, r in enumerate(results, start=1)
            ],
            rs_eff={r.engram.pk: r.rs_eff for r in results},
            query=text,
            now=now,
            injected=False,
        )
    return results


# --- inject ---------------------------------------------------------------------------------


def _candidate_rows(pks: Iterable[int]) -> dict[int, _Row]:
    wanted = sorted(set(pks))
    if not wanted:
        return {}
    among, params = search.ids_in("e.id", wanted, connection)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_ROW_COLUMNS} FROM memory_engram e WHERE {among}", params)
        return {row.pk: row for row in map(_Row.of, cursor.fetchall())}


def _spread_targets(
    *,
    owner: Any,
    sources: dict[int, str],
    exclude_pks: set[int],
    scopes: tuple[str, ...] | None,
    patterns: tuple[str, ...] | None,
    now: datetime,
    decay_base: float,
) -> tuple[dict[str, list[tuple[str, float]]], dict[str, _Row], dict[int, float]]:
    """Associations of the main picks (pk -> id) to visible, valid, active engrams (2 queries).

    One hop along outgoing edges; co-access strengths are decayed at read time; targets in the
    dormant band are left out.
    """
    flt = search.make_filter(
        owner,
        scopes=scopes,
        scope_patterns=patterns,
        statuses=INJECT_STATUSES,
        valid_at=now,
        exclude_pks=exclude_pks,
    )
    if flt.is_empty:
        return {}, {}, {}
    where, params = search.where_clause("e", flt, connection)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT a.source_id, a.type, a.strength, a.updated_at, {_ROW_COLUMNS} "
            "FROM memory_association a JOIN memory_engram e ON e.id = a.target_id "
            f"WHERE a.source_id IN ({', '.join(['%s'] * len(sources))}) AND {where}",
            [*sources, *params],
        )
        edges = [
            (row[0], row[1], float(row[2]), _aware(row[3]), _Row.of(row[4:])) for row in cursor
        ]
    targets = {target.pk: target for *_, target in edges}
    strengths = _strengths(list(targets.values()), now=now, decay_base=decay_base)
    out: dict[str, list[tuple[str, float]]] = {}
    by_id: dict[str, _Row] = {}
    for source_pk, kind, strength, updated_at, target in edges:
        if activation.band(strengths[target.pk]) not in SPREAD_BANDS:
            continue
        if kind == Association.Type.CO_ACCESSED:
            days = max(0.0, (now - updated_at).total_seconds() / SECONDS_PER_DAY)
            strength = coaccess.decayed_coaccess_strength(strength, days)
        out.setdefault(sources[source_pk], []).append((target.engram_id, strength))
        by_id[target.engram_id] = target
    return out, by_id, strengths


def _items(picks: Sequence[ranking.Picked]) -> list[dict[str, Any]]:
    return [
        {"id": p.id, "statement": p.statement, "score": round(p.score, 6), "tokens": p.tokens}
        for p in picks
    ]


def inject(
    *,
    owner: Any,
    prompt: str,
    scope: str | None = None,
    session: AgentSession | None = None,
    budget_tokens: int | None = None,
    now: datetime | None = None,
    token_scopes: Sequence[str] | None = None,
) -> InjectResult:
    """Engrams for one prompt, in buckets within the token budget, rendered as markdown.

    Active engrams of `scope` and global (and imported lessons on trial, for the consider
    bucket only): scored as recall scores them (`ranking.ranked_score`: relevance first, the
    prior (0.5 + 0.5·RS_eff)·f_fb·f_emo (·1.1 if consolidated) only as a tie-breaker),
    variants of one rule (and open contradiction pairs) newest first, diversity-filtered, ≤ 10 constraints + directives, ≤ 5
    consider (≤ 200 tokens, fading ones only here), ≤ 3 spread by one-hop associations (≤ 480
    tokens), 2,000 tokens by default. Nothing relevant: empty result. With a session, every surfaced
    engram is recorded and accessed (frequency, injections, surfaced for main buckets,
    re-anchor at RS_eff, no bump).
    """
    started = time.perf_counter()
    now = now or timezone.now()
    text = (prompt or "").replace("\x00", " ").strip()
    if not text:
        return InjectResult(
            timings=dict.fromkeys(("embed", "search", "rank", "record", "total"), 0.0)
        )
    budget_pref, decay_base, trials = _owner_prefs(owner, now)
    budget = budget_tokens or budget_pref or settings.ENGRAM_INJECT_BUDGET_TOKENS
    exact, patterns = visible_scopes(scope=scope or GLOBAL_SCOPE, token_scopes=token_scopes)
    legs = _run_legs(
        owner=owner,
        text=text,
        mode="hybrid",
        limit=INJECT_LIMIT,
        scopes=exact,
        patterns=patterns,
        # Imported lessons on trial are candidates; they may fill the consider bucket, so that
        # being followed can reinforce them before their trial ends.
        statuses=INJECT_STATUSES + ((Engram.Status.CANDIDATE,) if trials else ()),
        now=now,
    )
    timings = {"embed": legs.embed_ms, "search": legs.search_ms}
    ranked_from = time.perf_counter()
    rows = _candidate_rows({pk for pk, _ in legs.lexical} | {pk for pk, _ in legs.dense})
    strengths = _strengths(list(rows.values()), now=now, decay_base=decay_base)
    candidates: list[ranking.Candidate] = []
    score_of: dict[str, float] = {}
    pk_of: dict[str, int] = {}
    # Engrams the project's own rules already state (memory.services.suppression).
    suppressed = set(session.suppressed_ids or []) if session is not None else set()
    prompt_terms: frozenset[str] | None = None  # read when a candidate has contraindications
    for item in _score(legs, rows, strengths, mode="hybrid", now=now):
        engram = rows[item.pk]
        if engram.pk in suppressed:
            continue
        if engram.contraindications:
            if prompt_terms is None:
                prompt_terms = delivery_maths.terms(text[: delivery_maths.PROMPT_TERMS_CHARS])
            avoid = delivery_maths.contraindication_terms(engram.contraindications)
            if delivery_maths.contraindicated(prompt_terms, avoid):
                continue  # a context it was narrowed away from
        trial = engram.status != Engram.Status.ACTIVE
        if trial and not engram.on_trial(now):
            continue  # a candidate waiting for review, not an import on trial
        rs_eff = strengths[engram.pk]
        pk_of[engram.engram_id] = engram.pk
        # Inject abstains below the relevance floor; recall ranks all it found.
        floor_met = item.relevance >= ranking.RELEVANCE_FLOOR
        score_of[engram.engram_id] = item.score if floor_met else 0.0
        candidates.append(
            ranking.Candidate(
                id=engram.engram_id,
                statement=engram.statement,
                fused=item.fused,
                rs_eff=rs_eff,
                polarity=engram.polarity,
                feedback_net=engram.feedback_net,
                emotional_weight=engram.emotional_weight,
                consolidated=engram.consolidated,
                band=activation.band(rs_eff),
                consider_only=trial,  # on trial: never a constraint or directive
                escalation=engram.enforcement,
                lexical_hit=item.lexical is not None,
                dense_cosine=item.dense[1] if item.dense else None,
            )
        )
    # Only the best SELECT_POOL relevant candidates can fill the buckets; their vectors (for the
    # diversity check) are read in one query instead of parsing every candidate's.
    scored = [(c, score_of[c.id]) for c in candidates]
    best = sorted(
        (pair for pair in scored if pair[1] > 0 and pair[0].band in ranking.CONSIDER_BANDS),
        key=lambda pair: (-pair[1], pair[0].id),
    )
    # Variants of one rule (another value, the opposite direction): the newest leads.
    reordered = _newest_variants_first(
        (
            (c.id, rows[pk_of[c.id]].scope, c.statement, rows[pk_of[c.id]].updated_at, score)
            for c, score in best
        ),
        _contradictions(owner, rows),
    )
    candidate_of = {c.id: c for c, _ in best}
    best = [(candidate_of[cid], score) for cid, score in reordered]
    best = best[:SELECT_POOL]
    vectors = search.vectors_of(pk_of[c.id] for c, _ in best)
    candidates = [replace(c, embedding=vectors.get(pk_of[c.id])) for c, _ in best]
    selection = ranking.select(
        candidates, budget_tokens=budget, scores={c.id: score for c, score in best}
    )
    if selection.main:
        associations, targets, target_strengths = _spread_targets(
            owner=owner,
            sources={pk_of[p.id]: p.id for p in selection.main},
            exclude_pks={pk_of[p.id] for p in selection.items},
            scopes=exact,
            patterns=patterns,
            now=now,
            decay_base=decay_base,
        )
        chosen = ranking.spread(
            [(p.id, p.score) for p in selection.main],
            associations,
            {p.id for p in selection.consider},
            token_of={eid: ranking.line_tokens(eid, t.statement) for eid, t in targets.items()},
        )
        selection = ranking.with_related(
            selection, [(eid, targets[eid].statement, value) for eid, value in chosen]
        )
        for eid, target in targets.items():
            pk_of[eid] = target.pk
        strengths.update(target_strengths)
    rendered = ranking.render(selection)
    # Plug-in consider lines (memory.services.consider), e.g. success patterns when on.
    rendered, consider_extra = consider_extend(
        owner=owner, prompt=text, now=now, rendered=rendered, budget_tokens=budget
    )
    recorded_from = time.perf_counter()
    timings["rank"] = (recorded_from - ranked_from) * 1000
    if session is not None and not selection.is_empty:
        picks = [
            (pk_of[p.id], BUCKET_OF[p.bucket], p.rank, p.score, p.tokens) for p in selection.items
        ]
        access_record(
            owner=owner,
            session=session,
            picks=picks,
            rs_eff={pk_of[p.id]: strengths[pk_of[p.id]] for p in selection.items},
            query=text,
            now=now,
            injected=True,
        )
    finished = time.perf_counter()
    timings["record"] = (finished - recorded_from) * 1000
    timings["total"] = (finished - started) * 1000
    return InjectResult(
        constraints=_items(selection.constraints),
        directives=_items(selection.directives),
        consider=_items(selection.consider) + consider_extra,
        spread=_items(selection.related),
        rendered=rendered,
        tokens=textnorm.estimate_tokens(rendered),
        timings=timings,
    )
