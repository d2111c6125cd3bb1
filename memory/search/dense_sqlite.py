"""SQLite's dense index: an in-process numpy index per owner kept fresh from a trigger-fed
change log, so the web and worker processes see each other's writes."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from memory.maths import neighbours
from memory.models import EMBEDDING_DIM
from memory.search import caches
from memory.search.filters import (
    Filter,
)
from memory.search.schema import (
    SQLITE_REINDEX,
    SQLITE_TABLES,
    SQLITE_TRIGGERS,
)
from memory.search.tuning import (
    INCREMENTAL_MAX,
    LOG_TABLE,
    ROW_CHUNK,
)

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
        return neighbours.top_k(scores, self.pks[candidates], limit)


def _scope_ok(flt: Filter, scope: str) -> bool:
    if flt.scopes is not None and scope not in flt.scopes:
        return False
    if flt.scope_patterns is not None:
        return any(
            scope.startswith(p[:-1]) if p.endswith("*") else scope == p for p in flt.scope_patterns
        )
    return True


_indexes: dict[tuple[str, int], _OwnerIndex] = {}
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
        caches.clear()
