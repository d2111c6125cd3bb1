"""Short-lived, per-process facts the PostgreSQL legs would otherwise read on every query.

Each entry expires after `tuning.N_CACHE_SECONDS`; `dense_sqlite.dense_index_clear` clears them
with the SQLite index (tests, memory pressure). Keys start with the database's key
(`dense_sqlite._db_key`), so two databases in one process never share an entry.
"""

from __future__ import annotations

from typing import Any

# (db, owner, scopes, patterns, statuses) -> (rows N the lexical leg scores against, expires at)
n_rows: dict[tuple[Any, ...], tuple[float, float]] = {}
# db -> ({lexeme: share of rows} from pg_stats most_common_elems, expires at): the lexical leg's
# estimated document frequencies.
common_lexemes: dict[str, tuple[dict[str, float], float]] = {}
# (db, owner, scopes, patterns) -> expires at: scopes the dense leg counted above its exact size.
large_scopes: dict[tuple[Any, ...], float] = {}


def clear() -> None:
    n_rows.clear()
    common_lexemes.clear()
    large_scopes.clear()
