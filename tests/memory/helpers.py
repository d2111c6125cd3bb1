"""Small typed builders for retrieval tests: engrams with real embeddings, sessions, links."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from datetime import datetime
from functools import lru_cache
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.utils import timezone

from lib.embedder import MODEL_ID, get_embedder
from memory.maths import textnorm
from memory.models import AgentSession, Association, Engram

_serial = itertools.count(1)


@lru_cache(maxsize=4096)
def _embedding(text: str) -> bytes:
    return get_embedder().embed_one(text).tobytes()


def embed(text: str) -> np.ndarray:
    """The MiniLM vector of `text`, cached across tests (float32, 384-d)."""
    return np.frombuffer(_embedding(text), dtype=np.float32).copy()


def index_text(engram: Engram) -> str:
    """Statement, rationale, tags, domain, entity names, contraindications, as the store indexes."""
    from memory.services.engrams import search_text_of

    return search_text_of(engram)


def make_engram(owner: Any, **overrides: Any) -> Engram:
    """A saved engram (active, global, fresh) with hash, indexed text and a real embedding."""
    now: datetime = overrides.pop("now", None) or timezone.now()
    statement = overrides.pop("statement", f"Test lesson number {next(_serial)}")
    fields: dict[str, Any] = {
        "owner": owner,
        "engram_id": overrides.pop("engram_id", f"ENG-TEST-{next(_serial):05d}"),
        "statement": statement,
        "status": Engram.Status.ACTIVE,
        "scope": "global",
        "learned_at": now,
        "rs_anchor_at": now,
        "created_at": now,
        "updated_at": now,
        "content_hash": textnorm.content_hash(statement),
        "embedding_model": MODEL_ID,
    }
    fields.update(overrides)
    engram = Engram(**fields)
    engram.search_text = overrides.get("search_text") or index_text(engram)
    if "embedding" not in overrides:
        engram.embedding = embed(statement)
    engram.save()
    return engram


def make_session(owner: Any, **overrides: Any) -> AgentSession:
    fields: dict[str, Any] = {"owner": owner, "session_id": f"S-test-{next(_serial)}"}
    fields.update(overrides)
    return AgentSession.objects.create(**fields)


def link(source: Engram, target: Engram, strength: float, **overrides: Any) -> Association:
    """A directed association source -> target (semantic unless `type` says otherwise)."""
    fields: dict[str, Any] = {
        "owner_id": source.owner_id,
        "source": source,
        "target": target,
        "type": Association.Type.SEMANTIC,
        "strength": strength,
    }
    fields.update(overrides)
    return Association.objects.create(**fields)


RACE_WAIT = 60  # seconds; a bound so a broken race test fails instead of hanging


def behind_uncommitted(hold: Callable[[], Any], act: Callable[[], Any]) -> tuple[Any, Any]:
    """Run `act` while `hold`'s writes are still uncommitted, on PostgreSQL, deterministically.

    `hold` runs in a thread inside a transaction; once it has written, `act` runs in another
    thread; when `act` waits on a lock (a unique index behind `hold`'s row) or has finished,
    `hold` commits. Returns both results; an exception in either thread is raised here. Needs
    `django_db(transaction=True)`.
    """
    held = threading.Event()
    release = threading.Event()
    results: dict[str, Any] = {}
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with transaction.atomic():
                results["hold"] = hold()
                held.set()
                release.wait(RACE_WAIT)
        except BaseException as exc:  # raised in the caller's thread below
            errors.append(exc)
        finally:
            held.set()
            connection.close()

    def second() -> None:
        try:
            results["act"] = act()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    holder = threading.Thread(target=first)
    holder.start()
    held.wait(RACE_WAIT)
    actor = threading.Thread(target=second)
    actor.start()
    for _ in range(RACE_WAIT * 20):
        if not actor.is_alive() or _lock_waiters():
            break
        threading.Event().wait(0.05)
    release.set()
    holder.join(RACE_WAIT)
    actor.join(RACE_WAIT)
    if errors:
        raise errors[0]
    return results["hold"], results["act"]


def _lock_waiters() -> int:
    """Backends of this database waiting on a lock."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0
