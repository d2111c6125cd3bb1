"""Queueing background work from a service without importing the tasks module (tasks import
services, never the other way): the task is named, and queued only once the caller's transaction
commits, so a worker never sees rows that are not there yet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from celery import current_app
from django.db import transaction


@dataclass(frozen=True)
class QueuedJob:
    """An on-commit callback that sends one task; its name and arguments stay readable."""

    task_name: str
    args: tuple[Any, ...]

    def __call__(self) -> None:
        current_app.signature(self.task_name, args=self.args).delay()


def job_enqueue(name: str, *args: Any) -> None:
    """Queue the Celery task registered as `name` with `args` after the current commit."""
    transaction.on_commit(QueuedJob(name, args))
