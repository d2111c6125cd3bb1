"""The lexical leg: BM25-style scoring in SQL over PostgreSQL's tsvector, FTS5 `bm25()` on
SQLite; `(pk, score)` best first."""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from memory.search import caches
from memory.search.dense_sqlite import _db_key, sqlite_index_ensure
from memory.search.filters import (
    Filter,
    _clamp_limit,
    make_filter,
    where_clause,
)
from memory.search.tuning import (
    _WORD,
    BM25_B,
    BM25_K1,
    DF_CAP,
    FTS_TABLE,
    MAX_QUERY_CHARS,
    MAX_QUERY_TERMS,
    MAX_SCORED_TERMS,
    N_CACHE_MIN,
    N_CACHE_SECONDS,
    STOP_WORDS,
    TEXT_CONFIG,
)

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


# One query lexeme as a one-term tsquery (quoted, so no operator survives).
_LEXEME_QUERY = "('''' || replace(replace({0}, '\\', '\\\\'), '''', '''''') || '''')::tsquery"


def _common_lexemes(connection: BaseDatabaseWrapper) -> dict[str, float]:
    """The planner's most common lexemes of the search column with their share of rows
    (pg_stats most_common_elems, kept fresh by autovacuum's ANALYZE), read once per
    N_CACHE_SECONDS like the row count N.

    Reading pg_stats inside the search query cost ~1 ms of planning and 0.5-4 ms of execution on
    every prompt. The shares are widened to float8 in the database, so share x N here is the
    same double the database computed before."""
    key = _db_key(connection)
    cached = caches.common_lexemes.get(key)
    if cached is not None and cached[1] > time.monotonic():
        return cached[0]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT most_common_elems::text::text[], most_common_elem_freqs::float8[] "
            "FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'memory_engram' "
            "AND attname = 'search_tsv'"
        )
        row = cursor.fetchone()
    shares: dict[str, float] = {}
    if row is not None and row[0] is not None and row[1] is not None:
        # The shares end with three more numbers (min, max, null share): zip stops before them.
        shares = dict(zip(row[0], row[1], strict=False))
    caches.common_lexemes[key] = (shares, time.monotonic() + N_CACHE_SECONDS)
    return shares


def _query_lexemes(connection: BaseDatabaseWrapper, text: str) -> list[str]:
    """The query's first MAX_QUERY_TERMS lexemes, in to_tsvector's order."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT t.lexeme FROM unnest(to_tsvector('{TEXT_CONFIG}', %s)) AS t "
            f"LIMIT {MAX_QUERY_TERMS}",
            [text],
        )
        return [lexeme for (lexeme,) in cursor.fetchall()]


def _lexical_pg(
    connection: BaseDatabaseWrapper, flt: Filter, text: str, limit: int
) -> list[tuple[int, float]]:
    where, wparams = where_clause("e", flt, connection)
    key = _n_key(connection, flt)
    cached = caches.n_rows.get(key)
    estimated = cached is not None and cached[1] > time.monotonic()
    # Exact document frequency of one term inside the filter, counted up to DF_CAP.
    exact_df = (
        "(SELECT count(*) FROM (SELECT 1 FROM memory_engram e "
        f"WHERE e.search_tsv @@ terms.q AND {{where}} LIMIT {DF_CAP}) AS m)"
    )
    terms_params: list[Any]
    if estimated and cached is not None:
        # Large store: the planner's lexeme statistics give the frequent terms' df (share x N,
        # `_common_lexemes`); only rarer terms are counted. The query's lexemes are read first,
        # in one short round trip, so that the shares are looked up here.
        lexemes = _query_lexemes(connection, text)
        if not lexemes:
            return []
        shares = _common_lexemes(connection)
        terms_sql = (
            f"SELECT t.known, {_LEXEME_QUERY.format('t.lexeme')} AS q "
            "FROM unnest(%s::text[], %s::float8[]) AS t(lexeme, known)"
        )
        terms_params = [
            lexemes,
            [shares[lexeme] * cached[0] if lexeme in shares else None for lexeme in lexemes],
        ]
        # Only terms rarer than every tracked lexeme are counted here, so the GIN bitmap alone is
        # small; "+ 0" keeps the planner from AND-ing it with the large owner/scope bitmap.
        rare_where = where.replace("e.owner_id = %s", "e.owner_id + 0 = %s", 1)
        df_sql = f"coalesce(terms.known, {exact_df.format(where=rare_where)})"
        total_sql, total_params = "SELECT %s::float8 AS n", [cached[0]]
    else:
        terms_sql = (
            f"SELECT {_LEXEME_QUERY.format('t.lexeme')} AS q "
            f"FROM unnest(to_tsvector('{TEXT_CONFIG}', %s)) AS t LIMIT {MAX_QUERY_TERMS}"
        )
        terms_params = [text]
        df_sql = exact_df.format(where=where)
        total_sql = (
            f"SELECT count(*)::float8 AS n FROM memory_engram e WHERE {where} "
            "AND EXISTS (SELECT 1 FROM kept)"
        )
        total_params = list(wparams)
    # Rows matching any kept term are read in one bitmap scan and scored Σ idf · BM25 saturation
    # for tf = 1, length-normalised by the hits' average tsvector length. Each kept term's idf
    # is computed once (`weights`, in kept's order, so that every row adds the same numbers in
    # the same order as before). MATERIALIZED keeps the planner from re-running the per-term
    # counts once per reference.
    sql = f"""
        WITH terms AS ({terms_sql}),
        stats AS MATERIALIZED (SELECT terms.q, {df_sql} AS df FROM terms),
        kept AS MATERIALIZED (
            SELECT q, df FROM stats WHERE df > 0 AND df < {DF_CAP}
            ORDER BY df, q::text LIMIT {MAX_SCORED_TERMS}
        ),
        total AS MATERIALIZED ({total_sql}),
        weights AS MATERIALIZED (
            SELECT kept.q, ln(1 + (total.n - kept.df + 0.5) / (kept.df + 0.5)) AS idf
            FROM kept CROSS JOIN total
        ),
        anyq AS MATERIALIZED (SELECT string_agg(q::text, ' | ')::tsquery AS q FROM kept),
        hits AS (
            SELECT e.id, e.learned_at, length(e.search_tsv)::float8 AS dl, (
                SELECT sum(weights.idf) FROM weights WHERE e.search_tsv @@ weights.q
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
    params = [*terms_params, *wparams, *total_params, *wparams, limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not estimated and rows and rows[0][2] >= N_CACHE_MIN:
        # Large stores: the row count moves slowly and only scales idf, so it is reused briefly.
        caches.n_rows[key] = (float(rows[0][2]), time.monotonic() + N_CACHE_SECONDS)
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
