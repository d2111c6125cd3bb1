"""Consolidation stage 1, observations in: each unprocessed observation becomes a `Trace` (what
it did as text and features, its session window) with its vector; embedded in batches."""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from django.db import transaction
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from dialectic import maths, observe
from dialectic.models import Trace
from memory.models import Observation
from memory.services.engrams import embed_texts

EMBED_BATCH = 500

logger = logging.getLogger(__name__)


def _data(observation: Observation) -> dict[str, Any]:
    return observe.tool_input(observation.tool_input)


def _features(observation: Observation, data: dict[str, Any], project: str) -> set[Any]:
    return observe.observation_features(
        observation.tool,
        data,
        project,
        success=observation.success,
        output=observation.tool_output,
    )


def observations_embed(
    *,
    owner: Any | None = None,
    batch: int = EMBED_BATCH,
    limit: int | None = None,
    skipped: list[str] | None = None,
) -> int:
    """Embed unprocessed observations in batches and record each one's trace (its session
    window's tool sequence and features); returns how many. Claim and result commit together:
    a batch re-checks `processed_at IS NULL` under a row lock, so two workers never double up.
    An observation whose text cannot be made is processed without a vector (never clustered)
    and its reason added to `skipped`; it never stops the run."""
    done = 0
    while limit is None or done < limit:
        size = batch if limit is None else min(batch, limit - done)
        with transaction.atomic():
            rows = Observation.objects.filter(processed_at__isnull=True).order_by("id")
            if owner is not None:
                rows = rows.filter(owner=owner)
            claimed = list(
                rows.select_related("session")
                .select_for_update(skip_locked=True, of=("self",))
                .defer("embedding")[:size]
            )
            if not claimed:
                break
            _traces_build(claimed, skipped if skipped is not None else [])
        done += len(claimed)
    return done


def _traces_build(claimed: list[Observation], skipped: list[str]) -> None:
    now = timezone.now()
    # The session window: the calls of the same session ending with this one (earlier ones may
    # be in an earlier batch, so they are read back).
    sessions = {o.session_id for o in claimed if o.session_id}
    first_id = claimed[0].pk
    earlier: dict[Any, list[Observation]] = defaultdict(list)
    if sessions:
        # The last 4 calls of each session before this batch, in one query.
        position = Window(RowNumber(), partition_by=[F("session_id")], order_by=F("id").desc())
        before = (
            Observation.objects.filter(session_id__in=sessions, id__lt=first_id)
            .annotate(position=position)
            .filter(position__lt=maths.SESSION_WINDOW)
            .order_by("id")
            .only("id", "session_id", "tool", "tool_input", "tool_output", "success")
        )
        for found in before:
            earlier[found.session_id].append(found)
    traces: list[Trace] = []
    texts: list[str | None] = []
    per_session_feats: dict[Any, list[set[tuple[str, str]]]] = defaultdict(list)
    per_session_texts: dict[Any, list[str]] = defaultdict(list)
    for session_id, rows in earlier.items():
        for row in rows:
            data = _data(row)
            per_session_feats[session_id].append(_features(row, data, ""))
            per_session_texts[session_id].append(
                observe.observation_text(row.tool, data, "", success=row.success)
            )
    for observation in claimed:
        session = observation.session
        project = (session.cwd if session else "") or ""
        scope = session.scope if session else "global"
        key = observation.session_id or ("solo", observation.pk)
        earlier[key].append(observation)
        window = earlier[key][-maths.SESSION_WINDOW :]
        try:
            data = _data(observation)
            own = _features(observation, data, project)
            text = observe.observation_text(
                observation.tool, data, project, success=observation.success
            )
        except Exception as error:  # never a crash of the run: the reason is kept instead
            reason = f"observation {observation.pk} ({observation.tool[:40]}) skipped: {error!r}"
            logger.warning(reason)
            skipped.append(reason[:300])
            data, own, text = {}, {("tool", observation.tool)}, None
        previous = per_session_texts[key][-1] if per_session_texts[key] else ""
        per_session_feats[key].append(own)
        per_session_texts[key].append(text or observation.tool)
        feats: set[tuple[str, str]] = set()
        for part in per_session_feats[key][-maths.SESSION_WINDOW :]:
            feats |= part
        texts.append(text)
        traces.append(
            Trace(
                observation=observation,
                owner_id=observation.owner_id,
                scope=scope,
                project=project[:500],
                tool=observation.tool,
                text=(text or "")[:500],
                previous=previous[:500],
                sequence=[o.tool for o in window],
                features=sorted([list(f) for f in feats]),
                paths=[observe.relative_path(p, project) for p in observe.paths_of(data)],
                observed_at=observation.created_at,
            )
        )
    # Texts name the kind of action, so a batch repeats many: each distinct one is embedded once.
    distinct = list(dict.fromkeys(t for t in texts if t))
    embedded = dict(zip(distinct, embed_texts(distinct), strict=True)) if distinct else {}
    # One UPDATE per distinct text (observations with the same text share their vector).
    ids_by_text: dict[str | None, list[int]] = defaultdict(list)
    for observation, text in zip(claimed, texts, strict=True):
        ids_by_text[text].append(observation.pk)
        observation.embedding = embedded.get(text) if text else None
    for text, ids in ids_by_text.items():
        vector = embedded.get(text) if text else None
        Observation.objects.filter(pk__in=ids).update(embedding=vector, processed_at=now)
    Trace.objects.bulk_create(traces, ignore_conflicts=True)
