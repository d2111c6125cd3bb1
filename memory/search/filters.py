"""The filter every leg applies in the database (owner, scope, status, validity window)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper

from memory.search.tuning import (
    MAX_LIMIT,
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


def ids_in(
    column: str, ids: Sequence[int], connection: BaseDatabaseWrapper
) -> tuple[str, list[Any]]:
    """`column` among `ids` (at least one), and its parameters: one array on PostgreSQL, whose
    client-side binding parses and caches a short query, while an IN list of ~70 placeholders
    is parsed anew on every call; an IN list elsewhere."""
    if connection.vendor == "postgresql":
        return f"{column} = ANY(%s::bigint[])", [[int(pk) for pk in ids]]
    return f"{column} IN ({', '.join(['%s'] * len(ids))})", list(ids)


def _clamp_limit(limit: int) -> int:
    return max(0, min(int(limit), MAX_LIMIT))
