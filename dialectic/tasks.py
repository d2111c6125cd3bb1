"""Celery tasks: thin, idempotent wrappers around the consolidation services."""

from __future__ import annotations

from typing import Any

from celery import shared_task


@shared_task(name="dialectic.consolidate")
def consolidate() -> dict[str, Any]:
    """Periodic: embed new observations, cluster them, refresh theses, find antitheses and
    write syntheses; every stage claims its rows, so a second run finds nothing to do."""
    from dialectic.services.consolidation import consolidate as run

    return run().as_dict()
