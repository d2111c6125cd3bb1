"""The dense leg (cosine): pgvector HNSW with an iterative scan and an exact fallback on
PostgreSQL, the in-process index on SQLite; stored vectors and nearest neighbours."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from memory.maths import neighbours
from memory.models import EMBEDDING_DIM, Engram
from memory.search import caches
from memory.search.dense_sqlite import (
    _db_key,
    _dense_sqlite,
)
from memory.search.filters import (
    Filter,
    _clamp_limit,
    ids_in,
    make_filter,
    where_clause,
)
from memory.search.tuning import (
    EF_SEARCH_MAX,
    EF_SEARCH_MIN,
    N_CACHE_SECONDS,
)

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
) -> tuple[str, str, str, str, list[Any], list[Any]]:
    """(SET statements, gated SELECT, HNSW SELECT, exact SELECT, the gated SELECT's parameters,
    the other two's) of a dense query.

    The gated SELECT counts the scope's rows up to EXACT_SCOPE_ROWS + 1 first
    (`_scope_count_sql`); one-time filters then run either its exact branch or its HNSW branch,
    never both. Its rows are (pk, distance), then one (NULL, NULL, rows counted). The HNSW
    SELECT is its HNSW branch alone, for a scope already counted large.
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
    vector = "WITH q AS MATERIALIZED (SELECT %s::vector AS v)"
    gated = (
        f"{vector}, n AS MATERIALIZED ({count_sql}) "
        f"(SELECT id, distance, NULL::bigint FROM (SELECT e.id, {distance} AS distance "
        f"{rows} AND (SELECT c FROM n) <= {EXACT_SCOPE_ROWS} OFFSET 0) AS s "
        "ORDER BY distance LIMIT %s) "
        f"UNION ALL (SELECT e.id, {distance}, NULL {rows} "
        f"AND (SELECT c FROM n) > {EXACT_SCOPE_ROWS} ORDER BY {distance} LIMIT %s) "
        "UNION ALL SELECT NULL, NULL, c FROM n"
    )
    hnsw = f"{vector} SELECT e.id, {distance} {rows} ORDER BY {distance} LIMIT %s"
    params = [literal, *count_params, *wparams, limit, *wparams, limit]
    return settings, gated, hnsw, exact, params, [literal, *wparams, limit]


def dense_plan(
    owner: Any, vector: Any, *, limit: int = 20, using: str = "default", **filters: Any
) -> str:
    """EXPLAIN ANALYZE of the PostgreSQL dense query (does it use the HNSW index?); "" elsewhere."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return ""
    flt = make_filter(owner, **filters)
    settings, gated, _, _, params, _ = _dense_pg_sql(connection, flt, _unit(vector), limit)
    with transaction.atomic(using=using), connection.cursor() as cursor:
        cursor.execute(settings)
        cursor.execute("EXPLAIN (ANALYZE, COSTS OFF) " + gated, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    return re.sub(r"'\[[^\]]*\]'", "'[…]'", plan)


def _dense_pg(
    connection: BaseDatabaseWrapper, flt: Filter, query: np.ndarray, limit: int
) -> list[tuple[int, float]]:
    settings, gated, hnsw, exact, params, one_params = _dense_pg_sql(
        connection, flt, query, limit, local=False
    )
    # A scope counted large within N_CACHE_SECONDS goes straight to HNSW: the count and the
    # planning of the branch that would not run cost more than the HNSW scan itself (~1.4 ms
    # of ~3.5 at 10,000 engrams). A large scope only grows (deletions are rare), so the count
    # it remembers stays true; one that shrank keeps HNSW for at most N_CACHE_SECONDS.
    key = (_db_key(connection), flt.owner_id, flt.scopes, flt.scope_patterns)
    large = caches.large_scopes.get(key, 0.0) > time.monotonic()
    with connection.cursor() as cursor:
        # One round trip on the hot path: PostgreSQL runs a multi-statement query as one
        # transaction (or inside the caller's), so the settings hold for this search only and
        # an error rolls them back with it.
        if large:
            cursor.execute(f"{settings}; {hnsw}; {HNSW_RESET}", one_params)
        else:
            cursor.execute(f"{settings}; {gated}; {HNSW_RESET}", params)
        while cursor.description is None and cursor.nextset():
            pass
        found = cursor.fetchall()
        if large:
            rows = found
            counted = EXACT_SCOPE_ROWS + 1
        else:
            rows = [(pk, distance) for pk, distance, _ in found if pk is not None]
            counted = next(count for pk, _, count in found if pk is None)
            if counted > EXACT_SCOPE_ROWS:
                caches.large_scopes[key] = time.monotonic() + N_CACHE_SECONDS
        if len(rows) < limit and counted > EXACT_SCOPE_ROWS:
            # Fewer than k from HNSW: its scan stopped at hnsw.max_scan_tuples before k rows
            # passed the filter. The exact query settles it.
            cursor.execute(f"{settings}; {exact}; {HNSW_RESET}", one_params)
            while cursor.description is None and cursor.nextset():
                pass
            rows = cursor.fetchall()
    hits = [(int(pk), 1.0 - float(distance)) for pk, distance in rows]
    # relaxed_order may return rows slightly out of order.
    hits.sort(key=lambda hit: (-hit[1], hit[0]))
    return hits


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
    among, params = ids_in("id", wanted, connection)
    out: dict[int, np.ndarray] = {}
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT id, vector_send(embedding) FROM memory_engram "
                f"WHERE {among} AND embedding IS NOT NULL",
                params,
            )
            for pk, blob in cursor.fetchall():
                out[int(pk)] = _from_vector_send(blob)
        else:
            cursor.execute(
                f"SELECT id, embedding FROM memory_engram WHERE {among} AND embedding IS NOT NULL",
                params,
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
        out.append(neighbours.top_k(row, pks, limit))
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
