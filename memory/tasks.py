"""Celery tasks: thin, idempotent wrappers that take ids and call one service."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="engram.ping")
def ping(value: str = "pong") -> str:
    """Echo a value; used by health checks and tests to prove a worker runs tasks."""
    return value
