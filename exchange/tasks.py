"""Celery tasks: thin, idempotent wrappers around the exchange services."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="exchange.refresh_fitness")
def refresh_fitness() -> int:
    """Periodic: recompute every live abstract's exchange metadata; unchanged rows are not written."""
    from exchange.services import outgoing

    return outgoing.fitness_refresh_all()


@shared_task(name="exchange.expire_trials")
def expire_trials() -> dict[str, int]:
    """Periodic: end due trials (promote to review or retire); a second run finds nothing due."""
    from exchange.services import trials

    return trials.trials_expire()
