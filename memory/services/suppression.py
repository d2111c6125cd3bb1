"""Cross-source suppression: what the project's own rules already say is not injected again.

At SessionStart the project's CLAUDE.md and .claude/rules/*.md are read — sent by `engram-hook`
(which runs where the files are), or from the session's cwd when this server can read it (a
local install, and the cwd inside ENGRAM_PROJECT_ROOTS). A task embeds their statements and finds the engrams of the session's scope and
global that say the same (cosine >= 0.9): they are left out of this session's injections, and a
maintenance proposal offers to retire each as redundant.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from memory.maths import textnorm
from memory.models import AgentSession, Engram, Event, ReviewItem
from memory.search import legs as search
from memory.services import localfiles
from memory.services.engrams import embed_texts
from memory.services.events import event_record
from memory.validation import GLOBAL_SCOPE

SAME_RULE_COSINE = 0.9
MAX_RULE_FILE_BYTES = 64 * 1024
MAX_STATEMENTS = 200


def project_rule_files(cwd: str) -> list[Path]:
    """CLAUDE.md and .claude/rules/**/*.md under `cwd`, when that folder is on this machine and
    inside ENGRAM_PROJECT_ROOTS (ReadRefused when it is not); links that leave the project
    are not followed."""
    if not cwd:
        return []
    root = localfiles.allowed_path(cwd, localfiles.project_roots(), "ENGRAM_PROJECT_ROOTS")
    try:
        if not root.is_dir():
            return []
        files = [root / "CLAUDE.md", *sorted((root / ".claude" / "rules").glob("**/*.md"))]
    except OSError:
        return []
    inside = [root]
    return [f for f in files if localfiles.is_inside(Path(os.path.realpath(f)), inside)]


def read_statements(files: Iterable[Path]) -> list[str]:
    """The rule lines of the files that are regular and small; others are skipped."""
    found: list[str] = []
    for path in files:
        try:
            data = localfiles.read_regular(
                Path(os.path.realpath(path)),
                limit=MAX_RULE_FILE_BYTES,
                max_size=localfiles.MAX_RULE_FILE_BYTES,
            )
        except localfiles.ReadRefused:
            continue
        text = data.decode("utf-8", "replace")
        found += [s for s in textnorm.rule_lines(text) if s not in found]
    return found[:MAX_STATEMENTS]


def session_suppress(*, session_pk: int) -> list[str]:
    """Find the engrams the project's rules already state; the ids left out of injections."""
    session = AgentSession.objects.select_related("owner").filter(pk=session_pk).first()
    if session is None:
        return []
    texts = [t for t in session.project_rules if isinstance(t, str)][:MAX_STATEMENTS]
    if not texts:
        try:
            texts = read_statements(project_rule_files(session.cwd))
        except localfiles.ReadRefused as refused:
            localfiles.refusal_record(
                session=session, what=localfiles.PROJECT_RULES, reason=refused.reason
            )
            texts = []
    if not texts:
        return []
    vectors = embed_texts(texts)
    scopes = list(dict.fromkeys([session.scope, GLOBAL_SCOPE]))
    hits: dict[int, tuple[Engram, float, str]] = {}
    for scope in scopes:
        found = search.nearest_many(
            owner=session.owner, vectors=vectors, scopes=[scope] * len(texts), limit=3
        )
        for text, neighbours in zip(texts, found, strict=True):
            for engram, cosine in neighbours:
                best = hits.get(engram.pk)
                if cosine >= SAME_RULE_COSINE and (best is None or cosine > best[1]):
                    hits[engram.pk] = (engram, cosine, text)
    # The same words (whatever the case and punctuation) count whatever the embedding says: a
    # full stop alone can move the int8 embedding's cosine below 0.9.
    by_hash = {textnorm.content_hash(text): text for text in texts}
    same = Engram.objects.filter(
        owner=session.owner, scope__in=scopes, content_hash__in=list(by_hash)
    ).defer("embedding")
    for engram in same:
        hits.setdefault(engram.pk, (engram, 1.0, by_hash[engram.content_hash]))
    redundant = [e for e, _, _ in hits.values() if e.status == Engram.Status.ACTIVE]
    redundant.sort(key=lambda e: e.pk)
    now = timezone.now()
    with transaction.atomic():
        AgentSession.objects.filter(pk=session.pk).update(
            suppressed_ids=sorted(e.pk for e in redundant)
        )
        open_for = set(
            ReviewItem.objects.filter(
                engram__in=redundant,
                kind=ReviewItem.Kind.MAINTENANCE,
                state__in=(ReviewItem.State.PENDING, ReviewItem.State.DEFERRED),
            ).values_list("engram_id", flat=True)
        )
        for engram in redundant:
            if engram.pk in open_for:
                continue
            _, cosine, text = hits[engram.pk]
            item = ReviewItem.objects.create(
                owner=session.owner,
                kind=ReviewItem.Kind.MAINTENANCE,
                engram=engram,
                payload={
                    "action": "redundant",
                    "change": "redundant",
                    "fields": {"status": "retired"},
                    "before": {"status": engram.status},
                    "producer": "heuristic",
                    "evidence": {
                        "cosine": round(cosine, 4),
                        "project_rule": text,
                        "session": session.session_id,
                        "outcomes": engram.outcome_total,
                    },
                },
                reason="The project's own rules already say this; it is no longer injected.",
                created_at=now,
            )
            event_record(
                owner=session.owner,
                event=Event.MAINTENANCE_PROPOSED,
                engram=engram,
                actor="maintenance",
                data={"item": item.pk, "change": "redundant", "cosine": round(cosine, 4)},
                when=now,
            )
    return [e.engram_id for e in redundant]
