"""The one engram list behind the REST list and the dashboard.

Filters mean one thing each (memory.selectors.engrams_filtered), the text query `q` included
(every word must appear); pages are keyset cursors of one format for every sort but
`relevance`, which ranks the filtered engrams by read-only recall (the hybrid search agents
get, with no access recorded), best first, in numbered pages of at most SEARCH_LIMIT in all.
The dashboard sorts a search by relevance unless told otherwise; REST lists newest change first.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from memory.models import Engram
from memory.selectors import (
    PAGE_SIZE,
    RELEVANCE,
    SEARCH_LIMIT,
    SORTS,
    EngramQuery,
    EngramRow,
    Page,
    classified,
    engrams_filtered,
    keyset,
    keyset_within,
)
from memory.services.retrieval import RECALL_STATUSES, recall
from memory.strength import effective_strengths


def engram_list(
    *,
    owner: Any,
    query: EngramQuery,
    cursor: str | None = None,
    page: int = 1,
    limit: int = PAGE_SIZE,
    visible: QuerySet[Engram] | None = None,
    now: datetime | None = None,
) -> Page[EngramRow]:
    """One page of the owner's engrams for `query` (see the module docstring)."""
    now = now or timezone.now()
    qs = engrams_filtered(owner, query, base=visible)
    if query.q and query.sort == RELEVANCE:
        return _ranked(owner=owner, query=query, qs=qs, page=page, limit=limit, now=now)
    field_name, descending, kind, _ = SORTS.get(query.sort, SORTS["updated"])
    if query.quadrant:
        rows, next_cursor, total = keyset_within(
            qs,
            set(classified(owner).pks_in(query.quadrant)),
            field_name=field_name,
            descending=descending,
            cursor=cursor,
            kind=kind,
            limit=limit,
        )
    else:
        total = qs.count()
        rows, next_cursor = keyset(
            qs, field_name=field_name, descending=descending, cursor=cursor, kind=kind, limit=limit
        )
    strengths = effective_strengths(rows, now=now) if rows else {}
    return Page(
        rows=[EngramRow(e, strengths[e.pk]) for e in rows],
        next_cursor=next_cursor,
        total=total,
    )


def _ranked(
    *,
    owner: Any,
    query: EngramQuery,
    qs: QuerySet[Engram],
    page: int,
    limit: int,
    now: datetime,
) -> Page[EngramRow]:
    page = max(1, min(page, max(1, SEARCH_LIMIT // limit)))
    start = (page - 1) * limit
    statuses = [query.status] if query.status else list(RECALL_STATUSES)
    # Recall's pools grow with the limit (3x lexical, 2x dense): ask for this page and one more
    # row when nothing else narrows; otherwise for all it may return, then keep the filtered.
    narrowed = bool(
        query.type or query.band or query.tag or query.quadrant or query.who or query.tier
    )
    wanted = SEARCH_LIMIT if narrowed else min(SEARCH_LIMIT, start + limit + 1)
    hits = recall(
        owner=owner,
        query=query.q,
        scopes=[query.scope] if query.scope else None,
        limit=wanted,
        statuses=statuses,
        now=now,
    )
    if hits:
        keep = set(qs.filter(pk__in=[h.engram.pk for h in hits]).values_list("pk", flat=True))
        if query.quadrant:
            keep &= set(classified(owner).pks_in(query.quadrant))
        hits = [h for h in hits if h.engram.pk in keep]
    chosen = hits[start : start + limit]
    has_next = len(hits) > start + limit
    return Page(
        rows=[EngramRow(h.engram, h.rs_eff, h.score) for h in chosen],
        total=None if has_next and not narrowed else len(hits),
        page=page,
        has_next_page=has_next,
    )
