"""Celery tasks: thin, idempotent wrappers around the exchange services."""

from __future__ import annotations

from celery import shared_task

from exchange.services import outgoing, trials


@shared_task(name="exchange.refresh_fitness")
def refresh_fitness() -> int:
    """Periodic: recompute every live abstract's exchange metadata; unchanged rows are not written."""
    return outgoing.fitness_refresh_all()


@shared_task(name="exchange.expire_trials")
def expire_trials() -> dict[str, int]:
    """Periodic: end due trials (promote to review or retire); a second run finds nothing due."""
    return trials.trials_expire()
