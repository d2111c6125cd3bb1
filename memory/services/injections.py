"""Recording what reached an agent: Injection rows and the injection access rule (DESIGN v1
"Activation": frequency + 1, re-anchor at RS_eff, no bump), in one round trip.

Recall with a session, inject and the hooks' deliveries (memory.services.delivery) all record
this way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from memory.models import AgentSession, Injection

# Buckets that count as surfaced (effectiveness): the main lines and the standing rules' brief.
MAIN_BUCKETS = (Injection.Bucket.CONSTRAINT, Injection.Bucket.DIRECTIVE, Injection.Bucket.BRIEF)


def access_record(
    *,
    owner: Any,
    session: AgentSession,
    picks: Sequence[tuple[int, str, int, float, int]],
    rs_eff: dict[int, float],
    query: str,
    now: datetime,
    injected: bool,
    evidence: Sequence[Mapping[str, Any]] | None = None,
) -> None:
    """Record (pk, bucket, rank, score, tokens) picks and apply the access rule, 1 round trip.

    frequency += 1 and re-anchor at the current effective RS (no bump); an injection also counts
    injections += 1, and surfaced += 1 in MAIN_BUCKETS. `evidence` (one per pick) is kept
    on the injection row for the session page.
    """
    if not picks:
        return
    owner_id = getattr(owner, "pk", owner)
    when = connection.ops.adapt_datetimefield_value(now)
    text = query[:2000]
    proofs = [json.dumps(e or {}) for e in evidence] if evidence else ["{}"] * len(picks)
    rows = [
        (owner_id, session.pk, pk, bucket, rank, score, tokens, text, proof, when)
        for (pk, bucket, rank, score, tokens), proof in zip(picks, proofs, strict=True)
    ]
    touched: dict[int, tuple[float, int]] = {}
    for pk, bucket, _, _, _ in picks:
        main = injected and bucket in MAIN_BUCKETS
        previous = touched.get(pk, (0.0, 0))[1]
        touched[pk] = (min(1.0, max(0.0, rs_eff[pk])), max(previous, int(main)))
    own_transaction = not connection.in_atomic_block
    # Raw SQL: the ORM's statement building costs more than the database work on this path.
    statements = [
        (
            "INSERT INTO memory_injection (owner_id, session_id, engram_id, bucket, rank, "
            "score, tokens, query, evidence, created_at) VALUES "
            + ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"] * len(rows)),
            [value for row in rows for value in row],
        ),
        _touch(touched, injected=injected, now=now),
    ]
    if connection.vendor == "postgresql":
        # Lock the engram rows in primary-key order before the UPDATE (whose join locks them in
        # plan order): concurrent injects, and attribution, which updates engrams in the same
        # order, then never wait on each other in a cycle (a deadlock found by bench/load.py).
        ids = sorted(touched)
        statements.insert(
            1,
            (
                "SELECT id FROM memory_engram WHERE id IN ("
                + ", ".join(["%s"] * len(ids))
                + ") ORDER BY id FOR NO KEY UPDATE",
                ids,
            ),
        )
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            for sql, params in statements:
                cursor.execute(sql, params)
            return
        sqls = [sql for sql, _ in statements]
        if own_transaction:
            # Access bookkeeping may lose its last few milliseconds in a crash; waiting for the
            # WAL flush would be the largest single cost of the hot path. Never set inside a
            # caller's transaction, whose commit would inherit it.
            sqls.insert(0, "SET LOCAL synchronous_commit TO OFF")
        # One round trip for all of them (client-side parameter binding allows several
        # statements in one query).
        cursor.execute("; ".join(sqls), [value for _, params in statements for value in params])


def _touch(
    touched: dict[int, tuple[float, int]], *, injected: bool, now: datetime
) -> tuple[str, list[Any]]:
    """One UPDATE for all accessed engrams: pk -> (new stored RS, surfaced increment)."""
    # bulk_update's per-row CASE expressions cost ~40 ms of Python for 15 rows.
    when = connection.ops.adapt_datetimefield_value(now)
    values = " UNION ALL ".join(["SELECT %s AS id, %s AS rs, %s AS main"] * len(touched))
    params: list[Any] = [1 if injected else 0, when, when]
    for pk, (rs, main) in sorted(touched.items()):
        params.extend([pk, rs, main])
    sql = (
        "UPDATE memory_engram SET frequency = frequency + 1, injections = injections + %s, "
        "surfaced = surfaced + v.main, last_accessed = %s, rs_anchor_at = %s, "
        f"retrieval_strength = v.rs FROM ({values}) AS v WHERE memory_engram.id = v.id"
    )
    return sql, params
