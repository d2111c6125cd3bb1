"""Readiness checks for /healthz and the dashboard: database, broker, embedder, LLM."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db import connection


@dataclass(frozen=True)
class Check:
    ok: bool
    detail: str
    ms: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _timed(fn: Any) -> Check:
    start = time.perf_counter()
    try:
        ok, detail = fn()
    except Exception as exc:  # a health check reports failures, it never raises them
        ok, detail = False, f"{type(exc).__name__}: {exc}"
    return Check(ok=ok, detail=detail, ms=round((time.perf_counter() - start) * 1000, 2))


def _database() -> tuple[bool, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
        if connection.vendor == "postgresql":
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
            if row is None:
                return False, "postgresql without the vector extension"
            return True, f"postgresql, pgvector {row[0]}"
    return True, connection.vendor


def _broker() -> tuple[bool, str]:
    url: str = settings.CELERY_BROKER_URL
    if url.startswith("filesystem://"):
        folder = settings.BROKER_DIR / "queue"
        return folder.is_dir(), f"embedded filesystem transport at {folder}"
    if url.startswith(("redis://", "rediss://")):
        import redis

        client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
        client.ping()
        return True, "redis"
    from celery import current_app as app

    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=1)
    return True, url.split("://", 1)[0]


def _embedder() -> tuple[bool, str]:
    from lib import embedder

    return embedder.ready()


def _llm() -> tuple[bool, str]:
    """Optional: never makes /healthz fail; not ok only when the last call to Claude failed.
    The detail (model, error, tokens) is shown only on the logged-in health panel."""
    from memory.services.llm import llm_status

    status = llm_status()
    return not status.last_failed, status.summary


def run_checks() -> dict[str, Check]:
    """Run every readiness check; each reports ok, a detail and how long it took (ms)."""
    return {
        "database": _timed(_database),
        "broker": _timed(_broker),
        "embedder": _timed(_embedder),
        "llm": _timed(_llm),
    }
