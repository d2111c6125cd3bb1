"""Search legs over the engram store: lexical (full text) and dense (cosine), per database.

PostgreSQL: BM25-style scoring in SQL over a generated `tsvector` column with a GIN index, and
pgvector HNSW with an iterative scan (exact fallback) for the dense leg. SQLite: FTS5 `bm25()`,
and an in-process numpy index per owner kept fresh from a trigger-fed change log, so the web and
worker processes see each other's writes. Both legs return `(pk, score)` best first, filtered by
owner, scope, status and the temporal validity window in the database (or the index), so a small
scope inside a large store still gets its k results.

One module per part: `tuning` (constants, stop words), `schema` (each database's search tables),
`filters`, `lexical`, `dense` (with stored vectors and nearest neighbours) and `dense_sqlite`
(SQLite's in-process index). This module is the legs' public face.
"""

from __future__ import annotations

from memory.search.dense import dense, dense_plan, nearest, nearest_many, vectors_of
from memory.search.dense_sqlite import dense_index_clear, sqlite_index_ensure
from memory.search.filters import Filter, ids_in, make_filter, where_clause
from memory.search.lexical import fts5_query, lexical
from memory.search.tuning import MAX_LIMIT, STOP_WORDS

__all__ = [
    "MAX_LIMIT",
    "STOP_WORDS",
    "Filter",
    "dense",
    "dense_index_clear",
    "dense_plan",
    "fts5_query",
    "ids_in",
    "lexical",
    "make_filter",
    "nearest",
    "nearest_many",
    "sqlite_index_ensure",
    "vectors_of",
    "where_clause",
]
