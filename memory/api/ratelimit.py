"""Per-token fixed-window request counting: in Redis when configured, in-process otherwise."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings

WINDOW_SECONDS = 60
KEY_PREFIX = "engram:rl:"
# Redis must answer within this, or the in-process counter is used for that request.
REDIS_TIMEOUT_SECONDS = 0.05
# How long to keep using the in-process counter after Redis failed, before trying it again.
REDIS_RETRY_SECONDS = 30.0
# Bound the in-process table: windows are swept when it grows past this many keys.
LOCAL_MAX_KEYS = 10000

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    count: int
    limit: int
    retry_after: int  # seconds until the window resets


def client_key(raw_token: str | None, remote_addr: str | None) -> str:
    """A stable, non-reversible key for a bearer token (or the client address without one)."""
    basis = f"t:{raw_token}" if raw_token else f"a:{remote_addr or '-'}"
    return hashlib.sha256(basis.encode("utf-8", "replace")).hexdigest()[:32]


class _LocalCounter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, int], int] = {}

    def hit(self, key: str, window: int) -> int:
        with self._lock:
            if len(self._counts) > LOCAL_MAX_KEYS:
                self._counts = {k: v for k, v in self._counts.items() if k[1] >= window}
            count = self._counts.get((key, window), 0) + 1
            self._counts[(key, window)] = count
            return count

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()


_local = _LocalCounter()
_redis_down_until = 0.0


@lru_cache(maxsize=4)
def _redis_client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(
        url, socket_timeout=REDIS_TIMEOUT_SECONDS, socket_connect_timeout=REDIS_TIMEOUT_SECONDS
    )


def _redis_hit(url: str, key: str, window: int) -> int | None:
    global _redis_down_until
    if time.monotonic() < _redis_down_until:
        return None
    try:
        pipe = _redis_client(url).pipeline(transaction=False)
        name = f"{KEY_PREFIX}{key}:{window}"
        pipe.incr(name)
        pipe.expire(name, WINDOW_SECONDS + 5)
        count, _ = pipe.execute()
        return int(count)
    except Exception:  # any Redis failure: count in-process rather than refuse or fail
        logger.warning("rate limit: Redis unavailable, counting in-process", exc_info=True)
        _redis_down_until = time.monotonic() + REDIS_RETRY_SECONDS
        return None


def hit(key: str, *, limit: int | None = None, now: float | None = None) -> Decision:
    """Count one request for `key` in the current window and say whether it is allowed."""
    limit = int(limit if limit is not None else settings.ENGRAM_RATE_LIMIT_PER_MINUTE)
    now = time.time() if now is None else now
    window = int(now // WINDOW_SECONDS)
    count = None
    if settings.REDIS_URL:
        count = _redis_hit(settings.REDIS_URL, key, window)
    if count is None:
        count = _local.hit(key, window)
    retry_after = max(1, int((window + 1) * WINDOW_SECONDS - now))
    return Decision(allowed=count <= limit, count=count, limit=limit, retry_after=retry_after)


def reset_local() -> None:
    """Forget in-process counts (tests)."""
    global _redis_down_until
    _local.clear()
    _redis_down_until = 0.0
