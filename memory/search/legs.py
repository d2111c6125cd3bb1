"""Search legs over the engram store: lexical (full text) and dense (cosine), per database.

PostgreSQL: BM25-style scoring in SQL over a generated `tsvector` column with a GIN index, and
pgvector HNSW with an iterative scan (exact fallback) for the dense leg. SQLite: FTS5 `bm25()`,
and an in-process numpy index per owner kept fresh from a trigger-fed change log, so the web and
worker processes see each other's writes. Both legs return `(pk, score)` best first, filtered by
owner, scope, status and the temporal validity window in the database (or the index), so a small
scope inside a large store still gets its k results.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from memory.models import EMBEDDING_DIM, Engram

# --- tuning (units in the names or comments) ---------------------------------------------------

TEXT_CONFIG = "english"  # PostgreSQL text search configuration of the generated column
BM25_K1 = 1.2
BM25_B = 0.75
# A query term found in more rows than this is too common to rank by: it is dropped, which bounds
# the rows the lexical leg scores (at most terms x cap) at any store size; rarer terms carry the
# signal.
DF_CAP = 2000
MAX_QUERY_CHARS = 2000  # lexical legs read at most this much of a prompt
MAX_QUERY_TERMS = 32
# Only the rarest terms of a long prompt are scored: they carry nearly all of the BM25 weight,
# and each extra common term adds its matching rows to the scan.
MAX_SCORED_TERMS = 12
# The visible-row count N (for idf) is counted per query below this size and cached above it.
N_CACHE_MIN = 5000
N_CACHE_SECONDS = 60.0
EF_SEARCH_MIN = 40  # hnsw.ef_search floor; raised to 2·k for larger k
EF_SEARCH_MAX = 1000
MAX_LIMIT = 1000

FTS_TABLE = "memory_engram_fts"
LOG_TABLE = "memory_engram_searchlog"
# Keep this many change-log rows (global sequence); a reader further behind rebuilds its index.
LOG_KEEP = 20000
# Apply a change log incrementally up to this many changed rows; beyond it, rebuild.
INCREMENTAL_MAX = 5000
ROW_CHUNK = 500  # ids per IN (...) when reading changed rows

# English stop words (PostgreSQL's `english` list): FTS5 has none, and an OR over "the" would
# score every row. Dropping them keeps both databases' lexical legs alike.
_STOP_WORDS_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can did do does doing don down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own s same she should so some such t than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with you your yours yourself yourselves"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
_WORD = re.compile(r"\w+", re.UNICODE)

# --- SQLite: FTS5 table, change log and triggers (also used by migration 0002) -------------------

SQLITE_TABLES = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(search_text, "
    "content='memory_engram', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
    f"CREATE TABLE IF NOT EXISTS {LOG_TABLE} (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "owner_id INTEGER NOT NULL, engram_pk INTEGER, token INTEGER NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {LOG_TABLE}_owner ON {LOG_TABLE} (owner_id, seq)",
)
# A random token per log row: sequence numbers come back after a rollback, tokens do not, so a
# cached index can tell "the same change" from "a different change with the same number".
SQLITE_TRIGGERS = {
    "memory_engram_search_ai": (
        "CREATE TRIGGER memory_engram_search_ai AFTER INSERT ON memory_engram BEGIN "
        f"INSERT INTO {FTS_TABLE}(rowid, search_text) VALUES (new.id, new.search_text); "
        f"INSERT INTO {LOG_TABLE}(owner_id, engram_pk, token) "
        "VALUES (new.owner_id, new.id, random()); END"
    ),
    "memory_engram_search_ad": (
        "CREATE TRIGGER memory_engram_search_ad AFTER DELETE ON memory_engram BEGIN "
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, search_text) "
        "VALUES ('delete', old.id, old.search_text); "
        f"INSERT INTO {LOG_TABLE}(owner_id, engram_pk, token) "
        "VALUES (old.owner_id, old.id, random()); END"
    ),
    "memory_engram_search_au_text": (
        "CREATE TRIGGER memory_engram_search_au_text AFTER UPDATE OF search_text ON memory_engram "
        "WHEN old.search_text IS NOT new.search_text BEGIN "
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, search_text) "
        "VALUES ('delete', old.id, old.search_text); "
        f"INSERT INTO {FTS_TABLE}(rowid, search_text) VALUES (new.id, new.search_text); END"
    ),
    # Only what the dense index holds; counters and strengths change on every injection.
    "memory_engram_search_au_dense": (
        "CREATE TRIGGER memory_engram_search_au_dense AFTER UPDATE ON memory_engram "
        "WHEN old.embedding IS NOT new.embedding OR old.status IS NOT new.status "
        "OR old.scope IS NOT new.scope OR old.valid_from IS NOT new.valid_from "
        "OR old.valid_until IS NOT new.valid_until OR old.owner_id IS NOT new.owner_id BEGIN "
        f"INSERT INTO {LOG_TABLE}(owner_id, engram_pk, token) "
        "VALUES (new.owner_id, new.id, random()); END"
    ),
    "memory_engram_searchlog_prune": (
        f"CREATE TRIGGER memory_engram_searchlog_prune AFTER INSERT ON {LOG_TABLE} BEGIN "
        f"DELETE FROM {LOG_TABLE} WHERE seq <= new.seq - {LOG_KEEP}; END"
    ),
}
# After (re)creating triggers: index every row and tell every reader to rebuild (engram_pk NULL).
SQLITE_REINDEX = (
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')",
    f"INSERT INTO {LOG_TABLE}(owner_id, engram_pk, token) "
    "SELECT DISTINCT owner_id, NULL, random() FROM memory_engram",
)
SQLITE_FORWARD = (*SQLITE_TABLES, *SQLITE_TRIGGERS.values(), *SQLITE_REINDEX)
SQLITE_BACKWARD = (
    *(f"DROP TRIGGER IF EXISTS {name}" for name in SQLITE_TRIGGERS),
    f"DROP TABLE IF EXISTS {LOG_TABLE}",
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
)

# --- PostgreSQL: generated tsvector column and GIN index (migration 0002) -----------------------

PG_FORWARD = (
    "ALTER TABLE memory_engram ADD COLUMN search_tsv tsvector "
    f"GENERATED ALWAYS AS (to_tsvector('{TEXT_CONFIG}', search_text)) STORED",
    "CREATE INDEX engram_search_tsv ON memory_engram USING gin (search_tsv)",
    # Kept inline: scoring reads it once per matching term, and a TOASTed value is fetched anew
    # each time.
    "ALTER TABLE memory_engram ALTER COLUMN search_tsv SET STORAGE MAIN",
    # Every injection updates access counters: free space per page keeps those updates HOT (no
    # new HNSW/GIN index entries), and moving the 1.5 kB vectors out of line keeps the heap
    # narrow for the filter and full-text scans (the HNSW index holds its own copy).
    "ALTER TABLE memory_engram SET (fillfactor = 85, toast_tuple_target = 256)",
)
PG_BACKWARD = (
    "ALTER TABLE memory_engram RESET (fillfactor, toast_tuple_target)",
    "DROP INDEX IF EXISTS engram_search_tsv",
    "ALTER TABLE memory_engram DROP COLUMN IF EXISTS search_tsv",
)


# --- filters ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Filter:
    """Which rows a leg may return: owner, exact scopes or scope patterns, statuses, validity."""

    owner_id: int
    scopes: tuple[str, ...] | None = None  # exact scope names; None = any
    scope_patterns: tuple[str, ...] | None = None  # token patterns ("project:*"); None = any
    statuses: tuple[str, ...] | None = None  # None = any status
    valid_at: datetime | None = None  # only rows valid at this instant
    exclude_pks: frozenset[int] = field(default_factory=frozenset)

    @property
    def is_empty(self) -> bool:
        """True when nothing can match (an empty scope or status list)."""
        return (
            (self.scopes is not None and not self.scopes)
            or (self.scope_patterns is not None and not self.scope_patterns)
            or (self.statuses is not None and not self.statuses)
        )


def make_filter(
    owner: Any,
    *,
    scopes: Iterable[str] | None = None,
    scope_patterns: Iterable[str] | None = None,
    statuses: Iterable[str] | None = None,
    valid_at: datetime | None = None,
    exclude_pks: Iterable[int] = (),
) -> Filter:
    """A Filter from an owner (user or id); a "*" pattern means no scope restriction."""
    patterns = None if scope_patterns is None else tuple(scope_patterns)
    if patterns is not None and "*" in patterns:
        patterns = None
    return Filter(
        owner_id=int(getattr(owner, "pk", owner)),
        scopes=None if scopes is None else tuple(dict.fromkeys(scopes)),
        scope_patterns=patterns,
        statuses=None if statuses is None else tuple(dict.fromkeys(statuses)),
        valid_at=valid_at,
        exclude_pks=frozenset(int(pk) for pk in exclude_pks),
    )


def _like_prefix(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def where_clause(alias: str, flt: Filter, connection: BaseDatabaseWrapper) -> tuple[str, list[Any]]:
    """SQL conditions (joined by AND) and their parameters for one Filter on table alias."""
    parts = [f"{alias}.owner_id = %s"]
    params: list[Any] = [flt.owner_id]
    if flt.scopes is not None:
        parts.append(f"{alias}.scope IN ({', '.join(['%s'] * len(flt.scopes))})")
        params.extend(flt.scopes)
    if flt.scope_patterns is not None:
        ors = []
        for pattern in flt.scope_patterns:
            if pattern.endswith("*"):
                ors.append(f"{alias}.scope LIKE %s ESCAPE '\\'")
                params.append(_like_prefix(pattern[:-1]))
            else:
                ors.append(f"{alias}.scope = %s")
                params.append(pattern)
        parts.append("(" + " OR ".join(ors) + ")")
    if flt.statuses is not None:
        parts.append(f"{alias}.status IN ({', '.join(['%s'] * len(flt.statuses))})")
        params.extend(flt.statuses)
    if flt.valid_at is not None:
        when = connection.ops.adapt_datetimefield_value(flt.valid_at)
        parts.append(f"({alias}.valid_from IS NULL OR {alias}.valid_from <= %s)")
        parts.append(f"({alias}.valid_until IS NULL OR {alias}.valid_until > %s)")
        params.extend([when, when])
    if flt.exclude_pks:
        parts.append(f"{alias}.id NOT IN ({', '.join(['%s'] * len(flt.exclude_pks))})")
        params.extend(sorted(flt.exclude_pks))
    return " AND ".join(parts), params


def _clamp_limit(limit: int) -> int:
    return max(0, min(int(limit), MAX_LIMIT))


# --- lexical leg ----------------------------------------------------------------------------


def lexical(
    owner: Any,
    query: str,
    *,
    scopes: Iterable[str] | None = None,
    limit: int = 30,
    valid_at: datetime | None = None,
    statuses: Iterable[str] | None = None,
    scope_patterns: Iterable[str] | None = None,
    exclude_pks: Iterable[int] = (),
    using: str = "default",
) -> list[tuple[int, float]]:
    """Full-text hits as (pk, score), best first; score is BM25-like (higher is better, ≥ 0).

    Any user text is safe: PostgreSQL parses it with to_tsvector, SQLite gets quoted tokens.
    Terms are OR-ed; ties go to the most recently learned engram.
    """
    flt = make_filter(
        owner,
        scopes=scopes,
        scope_patterns=scope_patterns,
        statuses=statuses,
        valid_at=valid_at,
        exclude_pks=exclude_pks,
    )
    limit = _clamp_limit(limit)
    text = (query or "")[:MAX_QUERY_CHARS].replace("\x00", " ")
    if flt.is_empty or limit == 0 or not text.strip():
        return []
    connection = connections[using]
    if connection.vendor == "postgresql":
        return _lexical_pg(connection, flt, text, limit)
    return _lexical_sqlite(connection, flt, text, limit)


def _n_key(connection: BaseDatabaseWrapper, flt: Filter) -> tuple[Any, ...]:
    return (_db_key(connection), flt.owner_id, flt.scopes, flt.scope_patterns, flt.statuses)


def _lexical_pg(
    connection: BaseDatabaseWrapper, flt: Filter, text: str, limit: int
) -> list[tuple[int, float]]:
    where, wparams = where_clause("e", flt, connection)
    key = _n_key(connection, flt)
    cached = _n_cache.get(key)
    estimated = cached is not None and cached[1] > time.monotonic()
    # Exact document frequency of one term inside the filter, counted up to DF_CAP.
    exact_df = (
        "(SELECT count(*) FROM (SELECT 1 FROM memory_engram e "
        f"WHERE e.search_tsv @@ terms.q AND {{where}} LIMIT {DF_CAP}) AS m)"
    )
    if estimated and cached is not None:
        # Only terms rarer than every tracked lexeme are counted here, so the GIN bitmap alone is
        # small; "+ 0" keeps the planner from AND-ing it with the large owner/scope bitmap.
        rare_where = where.replace("e.owner_id = %s", "e.owner_id + 0 = %s", 1)
        # Large store: the planner's lexeme statistics (pg_stats most_common_elems, kept fresh
        # by autovacuum's ANALYZE) give the frequent terms' df; only rarer terms are counted.
        df_sql = (
            "coalesce((SELECT st.freqs[array_position(st.elems, terms.lexeme)] * %s FROM st), "
            f"{exact_df.format(where=rare_where)})"
        )
        stats_params = [cached[0], *wparams]
        total_sql, total_params = "SELECT %s::float8 AS n", [cached[0]]
    else:
        df_sql, stats_params = exact_df.format(where=where), list(wparams)
        total_sql = (
            f"SELECT count(*)::float8 AS n FROM memory_engram e WHERE {where} "
            "AND EXISTS (SELECT 1 FROM kept)"
        )
        total_params = list(wparams)
    # Each query lexeme becomes its own one-term tsquery (quoted, so no operator survives).
    # Rows matching any kept term are read in one bitmap scan and scored Σ idf · BM25 saturation
    # for tf = 1, length-normalised by the hits' average tsvector length. MATERIALIZED keeps the
    # planner from re-running the per-term counts once per reference.
    sql = f"""
        WITH terms AS (
            SELECT t.lexeme,
                   ('''' || replace(replace(t.lexeme, '\\', '\\\\'), '''', '''''') || '''')::tsquery
                   AS q
            FROM unnest(to_tsvector('{TEXT_CONFIG}', %s)) AS t
            LIMIT {MAX_QUERY_TERMS}
        ),
        st AS MATERIALIZED (
            SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs
            FROM pg_stats
            WHERE schemaname = current_schema() AND tablename = 'memory_engram'
              AND attname = 'search_tsv'
        ),
        stats AS MATERIALIZED (SELECT terms.q, {df_sql} AS df FROM terms),
        kept AS MATERIALIZED (
            SELECT q, df FROM stats WHERE df > 0 AND df < {DF_CAP}
            ORDER BY df, q::text LIMIT {MAX_SCORED_TERMS}
        ),
        total AS MATERIALIZED ({total_sql}),
        anyq AS MATERIALIZED (SELECT string_agg(q::text, ' | ')::tsquery AS q FROM kept),
        hits AS (
            SELECT e.id, e.learned_at, length(e.search_tsv)::float8 AS dl, (
                SELECT sum(ln(1 + (total.n - kept.df + 0.5) / (kept.df + 0.5)))
                FROM kept CROSS JOIN total WHERE e.search_tsv @@ kept.q
            ) AS idf
            FROM memory_engram e CROSS JOIN anyq
            WHERE e.search_tsv @@ anyq.q AND {where}
        ),
        normed AS (SELECT hits.*, greatest(avg(dl) OVER (), 1) AS avgdl FROM hits)
        SELECT id, idf * {BM25_K1 + 1} / (1 + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * dl / avgdl))
               AS score, (SELECT n FROM total) AS n
        FROM normed
        ORDER BY score DESC, learned_at DESC, id DESC
        LIMIT %s
    """
    params = [text, *stats_params, *total_params, *wparams, limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not estimated and rows and rows[0][2] >= N_CACHE_MIN:
        # Large stores: the row count moves slowly and only scales idf, so it is reused briefly.
        _n_cache[key] = (float(rows[0][2]), time.monotonic() + N_CACHE_SECONDS)
    return [(int(pk), float(score)) for pk, score, _ in rows]


def fts5_query(text: str) -> str:
    """An FTS5 MATCH expression OR-ing each non-stop-word token as a quoted string ("" if none)."""
    seen: dict[str, None] = {}
    for raw in text.split():
        words = [w.lower() for w in _WORD.findall(raw)]
        if not words or all(w in STOP_WORDS for w in words):
            continue
        seen.setdefault(raw, None)
        if len(seen) >= MAX_QUERY_TERMS:
            break
    return " OR ".join('"' + token.replace('"', '""') + '"' for token in seen)


def _lexical_sqlite(
    connection: BaseDatabaseWrapper, flt: Filter, text: str, limit: int
) -> list[tuple[int, float]]:
    match = fts5_query(text)
    if not match:
        return []
    sqlite_index_ensure(connection)
    where, wparams = where_clause("e", flt, connection)
    # bm25() is lower-is-better and negative; it is negated so every leg scores higher-is-better.
    sql = f"""
        SELECT e.id, -bm25({FTS_TABLE}) AS score
        FROM {FTS_TABLE} JOIN memory_engram e ON e.id = {FTS_TABLE}.rowid
        WHERE {FTS_TABLE} MATCH %s AND {where}
        ORDER BY score DESC, e.learned_at DESC, e.id DESC
        LIMIT %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [match, *wparams, limit])
        return [(int(pk), float(score)) for pk, score in cursor.fetchall()]


# --- dense leg ------------------------------------------------------------------------------


def _unit(vector: Any) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32).reshape(-1)
    if array.shape != (EMBEDDING_DIM,):
        raise ValueError(f"expected a {EMBEDDING_DIM}-d vector, got shape {array.shape}")
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array


def dense(
    owner: Any,
    vector: Any,
    *,
    scopes: Iterable[str] | None = None,
    limit: int = 20,
    valid_at: datetime | None = None,
    statuses: Iterable[str] | None = None,
    scope_patterns: Iterable[str] | None = None,
    exclude_pks: Iterable[int] = (),
    using: str = "default",
) -> list[tuple[int, float]]:
    """The k nearest engrams as (pk, cosine in [-1, 1]), best first, ties by pk."""
    flt = make_filter(
        owner,
        scopes=scopes,
        scope_patterns=scope_patterns,
        statuses=statuses,
        valid_at=valid_at,
        exclude_pks=exclude_pks,
    )
    limit = _clamp_limit(limit)
    if flt.is_empty or limit == 0:
        return []
    query = _unit(vector)
    connection = connections[using]
    if connection.vendor == "postgresql":
        return _dense_pg(connection, flt, query, limit)
    return _dense_sqlite(connection, flt, query, limit)


def _vector_literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


# The planner underrates an exact scan of many rows: each vector is stored out of line, so every
# row it reads costs a TOAST fetch that its estimates leave out (~10 µs a row all told). Left to
# itself it picked a scan and sort of 5,500 rows (20-37 ms) over the HNSW index (~1.5 ms) at
# 10,000 engrams. So the choice is made here: a scope of at most EXACT_SCOPE_ROWS rows (counted,
# any status, on the owner/scope btree alone) is compared exactly (≤ ~10 ms, and no approximation
# where a filtered HNSW scan would walk many nodes to find few matches), a larger one goes
# through HNSW.
EXACT_SCOPE_ROWS = 1000
# Priced out for these queries, so that an ORDER BY the indexed distance takes the HNSW index
# and an exact query (which must sort) reads its rows through a btree. A plan priced with
# disabled nodes costs ~1e10, far above jit_above_cost: compiling it would take ~0.6 s.
_PLANNER_GUCS = ("enable_seqscan", "enable_bitmapscan", "enable_sort", "jit")


def _scope_count_sql(
    connection: BaseDatabaseWrapper, flt: Filter, cap: int
) -> tuple[str, list[Any]]:
    """A count of the filter's scope rows up to `cap`, and its parameters.

    Any status, with or without a vector: an index-only scan of the owner/scope btree, the
    cheap measure of scope size that decides between an exact comparison and HNSW.
    """
    scope_only = Filter(flt.owner_id, scopes=flt.scopes, scope_patterns=flt.scope_patterns)
    where, params = where_clause("e", scope_only, connection)
    sql = (
        "SELECT count(*) AS c FROM (SELECT 1 FROM memory_engram e "
        f"WHERE {where} LIMIT {int(cap)}) AS capped"
    )
    return sql, params


def _hnsw_settings(limit: int, *, local: bool = True) -> str:
    """SET [LOCAL] statements for one filtered HNSW search of k = limit rows."""
    ef = max(EF_SEARCH_MIN, min(EF_SEARCH_MAX, 2 * limit))
    scope = "LOCAL " if local else ""
    # relaxed_order lets a filtered HNSW scan go on until k rows pass the filter (pgvector 0.8).
    return "; ".join(
        [
            f"SET {scope}hnsw.ef_search = {ef}",
            f"SET {scope}hnsw.iterative_scan = relaxed_order",
            *(f"SET {scope}{name} = off" for name in _PLANNER_GUCS),
        ]
    )


HNSW_RESET = "; ".join(
    f"RESET {name}" for name in ("hnsw.ef_search", "hnsw.iterative_scan", *_PLANNER_GUCS)
)


def _dense_pg_sql(
    connection: BaseDatabaseWrapper,
    flt: Filter,
    query: np.ndarray,
    limit: int,
    *,
    local: bool = True,
) -> tuple[str, str, str, list[Any], list[Any]]:
    """(SET statements, SELECT, exact SELECT, SELECT's parameters, exact's) of a dense query.

    The SELECT counts the scope's rows up to EXACT_SCOPE_ROWS + 1 first (`_scope_count_sql`);
    one-time filters then run either its exact branch or its HNSW branch, never both. Its rows
    are (pk, distance), then one (NULL, NULL, rows counted).
    """
    where, wparams = where_clause("e", flt, connection)
    count_sql, count_params = _scope_count_sql(connection, flt, EXACT_SCOPE_ROWS + 1)
    literal = _vector_literal(query)
    settings = _hnsw_settings(limit, local=local)
    rows = f"FROM memory_engram e WHERE e.embedding IS NOT NULL AND {where}"
    # Exact: every distance computed once in a subquery (OFFSET 0 keeps it apart), then sorted;
    # an ORDER BY the distance expression itself would detoast each vector a second time.
    exact = (
        f"SELECT id, distance FROM (SELECT e.id, (e.embedding <=> %s::vector) AS distance "
        f"{rows} OFFSET 0) AS s ORDER BY distance LIMIT %s"
    )
    # The vector is sent once; "(SELECT v FROM q)" is an init-plan value, which the HNSW index
    # accepts as the ORDER BY operand like a constant.
    distance = "(e.embedding <=> (SELECT v FROM q))"
    gated = (
        "WITH q AS MATERIALIZED (SELECT %s::vector AS v), "
        f"n AS MATERIALIZED ({count_sql}) "
        f"(SELECT id, distance, NULL::bigint FROM (SELECT e.id, {distance} AS distance "
        f"{rows} AND (SELECT c FROM n) <= {EXACT_SCOPE_ROWS} OFFSET 0) AS s "
        "ORDER BY distance LIMIT %s) "
        f"UNION ALL (SELECT e.id, {distance}, NULL {rows} "
        f"AND (SELECT c FROM n) > {EXACT_SCOPE_ROWS} ORDER BY {distance} LIMIT %s) "
        "UNION ALL SELECT NULL, NULL, c FROM n"
    )
    params = [literal, *count_params, *wparams, limit, *wparams, limit]
    return settings, gated, exact, params, [literal, *wparams, limit]


def dense_plan(
    owner: Any, vector: Any, *, limit: int = 20, using: str = "default", **filters: Any
) -> str:
    """EXPLAIN ANALYZE of the PostgreSQL dense query (does it use the HNSW index?); "" elsewhere."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return ""
    flt = make_filter(owner, **filters)
    settings, gated, _, params, _ = _dense_pg_sql(connection, flt, _unit(vector), limit)
    with transaction.atomic(using=using), connection.cursor() as cursor:
        cursor.execute(settings)
        cursor.execute("EXPLAIN (ANALYZE, COSTS OFF) " + gated, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    return re.sub(r"'\[[^\]]*\]'", "'[…]'", plan)


def _dense_pg(
    connection: BaseDatabaseWrapper, flt: Filter, query: np.ndarray, limit: int
) -> list[tuple[int, float]]:
    settings, gated, exact, params, exact_params = _dense_pg_sql(
        connection, flt, query, limit, local=False
    )
    with connection.cursor() as cursor:
        # One round trip on the hot path: PostgreSQL runs a multi-statement query as one
        # transaction (or inside the caller's), so the settings hold for this search only and
        # an error rolls them back with it.
        cursor.execute(f"{settings}; {gated}; {HNSW_RESET}", params)
        while cursor.description is None and cursor.nextset():
            pass
        found = cursor.fetchall()
        rows = [(pk, distance) for pk, distance, _ in found if pk is not None]
        counted = next(count for pk, _, count in found if pk is None)
        if len(rows) < limit and counted > EXACT_SCOPE_ROWS:
            # Fewer than k from HNSW: its scan stopped at hnsw.max_scan_tuples before k rows
            # passed the filter. The exact query settles it.
            cursor.execute(f"{settings}; {exact}; {HNSW_RESET}", exact_params)
            while cursor.description is None and cursor.nextset():
                pass
            rows = cursor.fetchall()
    hits = [(int(pk), 1.0 - float(distance)) for pk, distance in rows]
    # relaxed_order may return rows slightly out of order.
    hits.sort(key=lambda hit: (-hit[1], hit[0]))
    return hits


# --- SQLite dense index -------------------------------------------------------------------------


def _epoch(value: Any) -> float:
    """Seconds since the epoch of a stored SQLite datetime (UTC text), NaN for NULL."""
    if value is None:
        return math.nan
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


class _OwnerIndex:
    """One owner's vectors and filter columns as numpy arrays, updated in place."""

    def __init__(self) -> None:
        self.seq = 0
        self.token: int | None = None
        self.size = 0
        self.pks = np.zeros(0, dtype=np.int64)
        self.matrix = np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
        self.scope = np.zeros(0, dtype=np.int32)
        self.status = np.zeros(0, dtype=np.int32)
        self.valid_from = np.zeros(0, dtype=np.float64)
        self.valid_until = np.zeros(0, dtype=np.float64)
        self.alive = np.zeros(0, dtype=bool)
        self.row_of: dict[int, int] = {}
        self.scope_codes: dict[str, int] = {}
        self.status_codes: dict[str, int] = {}

    def _code(self, table: dict[str, int], value: str) -> int:
        return table.setdefault(value, len(table))

    def _grow(self, needed: int) -> None:
        capacity = len(self.pks)
        if needed <= capacity:
            return
        new = max(needed, 2 * capacity, 64)

        def grown(array: np.ndarray, fill: Any) -> np.ndarray:
            out = np.full((new, *array.shape[1:]), fill, dtype=array.dtype)
            out[:capacity] = array
            return out

        self.pks = grown(self.pks, 0)
        self.matrix = grown(self.matrix, 0.0)
        self.scope = grown(self.scope, -1)
        self.status = grown(self.status, -1)
        self.valid_from = grown(self.valid_from, math.nan)
        self.valid_until = grown(self.valid_until, math.nan)
        self.alive = grown(self.alive, False)

    def put(self, row: Sequence[Any]) -> None:
        pk, blob, scope, status, valid_from, valid_until = row
        vector = np.frombuffer(bytes(blob), dtype=np.float32)
        index = self.row_of.get(pk)
        if index is None:
            self._grow(self.size + 1)
            index = self.size
            self.size += 1
            self.row_of[pk] = index
            self.pks[index] = pk
        if vector.shape != (EMBEDDING_DIM,):
            self.alive[index] = False
            return
        norm = float(np.linalg.norm(vector))
        self.matrix[index] = vector / norm if norm > 0 else vector
        self.scope[index] = self._code(self.scope_codes, scope)
        self.status[index] = self._code(self.status_codes, status)
        self.valid_from[index] = _epoch(valid_from)
        self.valid_until[index] = _epoch(valid_until)
        self.alive[index] = True

    def drop(self, pk: int) -> None:
        index = self.row_of.get(pk)
        if index is not None:
            self.alive[index] = False

    def search(self, flt: Filter, query: np.ndarray, limit: int) -> list[tuple[int, float]]:
        n = self.size
        if n == 0:
            return []
        mask = self.alive[:n].copy()
        if flt.scopes is not None or flt.scope_patterns is not None:
            allowed = [code for name, code in self.scope_codes.items() if _scope_ok(flt, name)]
            mask &= np.isin(self.scope[:n], np.asarray(allowed, dtype=np.int32))
        if flt.statuses is not None:
            codes = [self.status_codes[s] for s in flt.statuses if s in self.status_codes]
            mask &= np.isin(self.status[:n], np.asarray(codes, dtype=np.int32))
        if flt.valid_at is not None:
            when = flt.valid_at.timestamp()
            vf, vu = self.valid_from[:n], self.valid_until[:n]
            mask &= (np.isnan(vf) | (vf <= when)) & (np.isnan(vu) | (vu > when))
        if flt.exclude_pks:
            mask &= ~np.isin(self.pks[:n], np.fromiter(flt.exclude_pks, dtype=np.int64))
        candidates = np.flatnonzero(mask)
        if candidates.size == 0:
            return []
        scores = self.matrix[candidates] @ query if candidates.size < n // 2 else None
        if scores is None:
            scores = (self.matrix[:n] @ query)[candidates]
        k = min(limit, candidates.size)
        top = np.argpartition(-scores, k - 1)[:k] if k < candidates.size else np.arange(k)
        hits = [(int(self.pks[candidates[i]]), float(scores[i])) for i in top]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits


def _scope_ok(flt: Filter, scope: str) -> bool:
    if flt.scopes is not None and scope not in flt.scopes:
        return False
    if flt.scope_patterns is not None:
        return any(
            scope.startswith(p[:-1]) if p.endswith("*") else scope == p for p in flt.scope_patterns
        )
    return True


_indexes: dict[tuple[str, int], _OwnerIndex] = {}
_n_cache: dict[tuple[Any, ...], tuple[float, float]] = {}  # key -> (rows, expires at)
_indexes_lock = threading.Lock()
_ensured: set[str] = set()
_ROW_COLUMNS = "id, embedding, scope, status, valid_from, valid_until"


def _db_key(connection: BaseDatabaseWrapper) -> str:
    return f"{connection.alias}:{connection.settings_dict['NAME']}"


def sqlite_index_ensure(connection: BaseDatabaseWrapper, *, force: bool = False) -> bool:
    """Recreate the FTS5 triggers if a table rebuild dropped them; True when it repaired.

    Django's SQLite schema editor rebuilds a table (and so drops its triggers) for many
    migrations; this runs once per process and database, and reindexes everything on repair.
    """
    key = _db_key(connection)
    if key in _ensured and not force:
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name IN "
            f"({', '.join(['%s'] * len(SQLITE_TRIGGERS))})",
            list(SQLITE_TRIGGERS),
        )
        present = {row[0] for row in cursor.fetchall()}
        repaired = present != set(SQLITE_TRIGGERS)
        if repaired:
            with transaction.atomic(using=connection.alias):
                for name in SQLITE_TRIGGERS:
                    cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
                for statement in (*SQLITE_TABLES, *SQLITE_TRIGGERS.values(), *SQLITE_REINDEX):
                    cursor.execute(statement)
    _ensured.add(key)
    return repaired


def _read_rows(cursor: Any, owner_id: int, pks: Sequence[int] | None) -> list[Sequence[Any]]:
    base = f"SELECT {_ROW_COLUMNS} FROM memory_engram WHERE owner_id = %s AND embedding IS NOT NULL"
    if pks is None:
        cursor.execute(base, [owner_id])
        return list(cursor.fetchall())
    rows: list[Sequence[Any]] = []
    for start in range(0, len(pks), ROW_CHUNK):
        chunk = list(pks[start : start + ROW_CHUNK])
        cursor.execute(base + f" AND id IN ({', '.join(['%s'] * len(chunk))})", [owner_id, *chunk])
        rows.extend(cursor.fetchall())
    return rows


def _owner_index(connection: BaseDatabaseWrapper, owner_id: int) -> _OwnerIndex:
    """The owner's index, brought up to date with the change log (caller holds the lock)."""
    key = (_db_key(connection), owner_id)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT seq, token FROM {LOG_TABLE} WHERE owner_id = %s ORDER BY seq DESC LIMIT 1",
            [owner_id],
        )
        head = cursor.fetchone()
        cached = _indexes.get(key)
        if head is None:
            index = _OwnerIndex()
            _indexes[key] = index
            return index
        head_seq, head_token = int(head[0]), int(head[1])
        if cached is not None and (cached.seq, cached.token) == (head_seq, head_token):
            return cached
        changed: list[int] | None = None
        if cached is not None and cached.seq < head_seq:
            cursor.execute(f"SELECT token FROM {LOG_TABLE} WHERE seq = %s", [cached.seq])
            row = cursor.fetchone()
            if row is not None and int(row[0]) == cached.token:
                cursor.execute(
                    f"SELECT DISTINCT engram_pk FROM {LOG_TABLE} WHERE owner_id = %s AND seq > %s",
                    [owner_id, cached.seq],
                )
                pks = [r[0] for r in cursor.fetchall()]
                if None not in pks and len(pks) <= INCREMENTAL_MAX:
                    changed = [int(pk) for pk in pks]
        if changed is not None and cached is not None:
            index = cached
            rows = _read_rows(cursor, owner_id, changed)
            found = {int(r[0]) for r in rows}
            for pk in changed:
                if pk not in found:
                    index.drop(pk)
        else:
            index = _OwnerIndex()
            rows = _read_rows(cursor, owner_id, None)
        for row in rows:
            index.put((int(row[0]), *row[1:]))
        index.seq, index.token = head_seq, head_token
        _indexes[key] = index
        return index


def _dense_sqlite(
    connection: BaseDatabaseWrapper, flt: Filter, query: np.ndarray, limit: int
) -> list[tuple[int, float]]:
    sqlite_index_ensure(connection)
    with _indexes_lock:
        index = _owner_index(connection, flt.owner_id)
        return index.search(flt, query, limit)


def dense_index_clear() -> None:
    """Forget every cached SQLite dense index in this process (tests, memory pressure)."""
    with _indexes_lock:
        _indexes.clear()
        _ensured.clear()
        _n_cache.clear()


# --- vectors and nearest neighbours -------------------------------------------------------------


def _from_vector_send(blob: Any) -> np.ndarray:
    """A vector from `vector_send(embedding)`: dimensions and a zero as two big-endian int16,
    then big-endian float32s. Reading it skips float-to-text and back on both sides."""
    return np.frombuffer(bytes(blob), dtype=">f4", offset=4).astype(np.float32)


def vectors_of(pks: Iterable[int], *, using: str = "default") -> dict[int, np.ndarray]:
    """Stored embeddings of the given engrams (float32, 384-d) by pk, in one query."""
    wanted = sorted({int(pk) for pk in pks})
    if not wanted:
        return {}
    connection = connections[using]
    placeholders = ", ".join(["%s"] * len(wanted))
    out: dict[int, np.ndarray] = {}
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT id, vector_send(embedding) FROM memory_engram "
                f"WHERE id IN ({placeholders}) AND embedding IS NOT NULL",
                wanted,
            )
            for pk, blob in cursor.fetchall():
                out[int(pk)] = _from_vector_send(blob)
        else:
            cursor.execute(
                "SELECT id, embedding FROM memory_engram "
                f"WHERE id IN ({placeholders}) AND embedding IS NOT NULL",
                wanted,
            )
            for pk, blob in cursor.fetchall():
                out[int(pk)] = np.frombuffer(bytes(blob), dtype=np.float32)
    return out


def nearest(
    *,
    owner: Any,
    vector: np.ndarray,
    scope: str | None = None,
    limit: int = 10,
    exclude_pks: Iterable[int] = (),
    include_retired: bool = False,
) -> list[tuple[Engram, float]]:
    """The `limit` engrams most similar to `vector` (cosine, unit vectors), best first."""
    statuses = None
    if not include_retired:
        statuses = [s for s in Engram.Status.values if s != Engram.Status.RETIRED]
    hits = dense(
        owner,
        vector,
        scopes=None if scope is None else [scope],
        limit=limit,
        statuses=statuses,
        exclude_pks=exclude_pks,
    )
    if not hits:
        return []
    # The vectors are rarely needed by callers and cost more to parse than the rest of the row.
    rows = Engram.objects.defer("embedding").in_bulk([pk for pk, _ in hits])
    return [(rows[pk], cosine) for pk, cosine in hits if pk in rows]


def _dense_pg_many(
    connection: BaseDatabaseWrapper,
    using: str,
    flt: Filter,
    queries: Sequence[np.ndarray],
    limit: int,
) -> list[list[tuple[int, float]]]:
    """Several dense queries under one filter in one round trip (a LATERAL join per vector)."""
    where, wparams = where_clause("e", flt, connection)
    settings = _hnsw_settings(limit)

    def sql(order: str) -> str:
        return (
            "SELECT q.i, h.id, h.distance "
            "FROM unnest(%s::text[]::vector[]) WITH ORDINALITY AS q(v, i) "
            "CROSS JOIN LATERAL (SELECT e.id, (e.embedding <=> q.v) AS distance "
            f"FROM memory_engram e WHERE e.embedding IS NOT NULL AND {where} "
            f"ORDER BY {order} LIMIT %s) h"
        )

    out: list[list[tuple[int, float]]] = [[] for _ in queries]

    def run(cursor: Any, order: str, positions: list[int]) -> None:
        literals = [_vector_literal(queries[p]) for p in positions]
        cursor.execute(sql(order), [literals, *wparams, limit])
        found: dict[int, list[tuple[int, float]]] = {p: [] for p in positions}
        for i, pk, distance in cursor.fetchall():
            found[positions[int(i) - 1]].append((int(pk), 1.0 - float(distance)))
        for position, hits in found.items():
            hits.sort(key=lambda hit: (-hit[1], hit[0]))
            out[position] = hits

    with transaction.atomic(using=using), connection.cursor() as cursor:
        cursor.execute(settings)
        run(cursor, "e.embedding <=> q.v", list(range(len(queries))))
        short = [p for p, hits in enumerate(out) if len(hits) < limit]
        if short:
            # As in one dense query: fewer than k rows means a small filter or a scan limit.
            run(cursor, "(e.embedding <=> q.v) + 0", short)
    return out


# One filtered HNSW probe for a small scope inside a large store may walk thousands of graph
# nodes (~1-2 ms at 100,000 engrams); reading one stored vector (out of line, so detoasted)
# costs ~1/40 of that. A batch of n statements is compared exactly, in numpy, against every
# vector of a scope holding up to 40·n of them (measured: 100 statements against a 400-row
# scope in a 100,000-row store, 19 ms instead of 119 ms).
EXACT_ROWS_PER_QUERY = 40
EXACT_ROWS_MAX = 20_000


def _count_upto(connection: BaseDatabaseWrapper, flt: Filter, cap: int) -> int:
    """The filter's scope rows counted up to `cap` (`_scope_count_sql`)."""
    sql, params = _scope_count_sql(connection, flt, cap)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.fetchone()[0])


def _exact_many(
    connection: BaseDatabaseWrapper, flt: Filter, queries: Sequence[np.ndarray], limit: int
) -> list[list[tuple[int, float]]]:
    """Every vector under the filter against every query: top `limit` by cosine, then pk."""
    where, params = where_clause("e", flt, connection)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.id, vector_send(e.embedding) FROM memory_engram e "
            f"WHERE e.embedding IS NOT NULL AND {where}",
            params,
        )
        rows = cursor.fetchall()
    if not rows:
        return [[] for _ in queries]
    pks = np.array([int(pk) for pk, _ in rows], dtype=np.int64)
    matrix = np.stack([_from_vector_send(blob) for _, blob in rows]).astype(np.float64)
    norms = np.linalg.norm(matrix, axis=1)
    matrix /= np.where(norms > 0, norms, 1.0)[:, None]
    sims = np.stack([np.asarray(q, dtype=np.float64) for q in queries]) @ matrix.T
    out: list[list[tuple[int, float]]] = []
    for row in sims:
        top = np.argpartition(-row, limit - 1)[:limit] if len(row) > limit else np.arange(len(row))
        order = top[np.lexsort((pks[top], -row[top]))]
        out.append([(int(pks[i]), float(row[i])) for i in order])
    return out


def nearest_many(
    *,
    owner: Any,
    vectors: Sequence[np.ndarray] | np.ndarray,
    scopes: Sequence[str],
    limit: int = 10,
) -> list[list[tuple[Engram, float]]]:
    """`nearest` for many vectors, each within its own scope, live engrams; few queries."""
    if len(vectors) != len(scopes):
        raise ValueError("one scope per vector")
    limit = _clamp_limit(limit)
    statuses = [s for s in Engram.Status.values if s != Engram.Status.RETIRED]
    connection = connections["default"]
    hits: list[list[tuple[int, float]]] = [[] for _ in vectors]
    if limit == 0 or len(vectors) == 0:
        return [[] for _ in hits]
    by_scope: dict[str, list[int]] = {}
    for position, scope in enumerate(scopes):
        by_scope.setdefault(scope, []).append(position)
    for scope, positions in by_scope.items():
        flt = make_filter(owner, scopes=[scope], statuses=statuses)
        queries = [_unit(vectors[p]) for p in positions]
        if connection.vendor == "postgresql":
            cap = min(EXACT_ROWS_MAX, EXACT_ROWS_PER_QUERY * len(queries))
            rows_in_scope = _count_upto(connection, flt, cap + 1)
            if rows_in_scope <= cap:
                found = _exact_many(connection, flt, queries, limit)
            else:
                found = _dense_pg_many(connection, "default", flt, queries, limit)
        else:
            found = [_dense_sqlite(connection, flt, q, limit) for q in queries]
        for position, scope_hits in zip(positions, found, strict=True):
            hits[position] = scope_hits
    wanted = {pk for scope_hits in hits for pk, _ in scope_hits}
    rows = Engram.objects.defer("embedding").in_bulk(list(wanted)) if wanted else {}
    return [[(rows[pk], cosine) for pk, cosine in scope_hits if pk in rows] for scope_hits in hits]
