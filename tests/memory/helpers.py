"""Small typed builders for retrieval tests: engrams with real embeddings, sessions, links."""

from __future__ import annotations

import itertools
from datetime import datetime
from functools import lru_cache
from typing import Any

import numpy as np
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
