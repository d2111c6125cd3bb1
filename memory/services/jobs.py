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
        app = current_app
        if self.task_name not in app.tasks:
            # Tasks register when their modules are imported; a web process has not imported
            # them yet (a worker has). Unregistered, the call would go out by name and ignore
            # CELERY_TASK_ALWAYS_EAGER, so load the discovered task modules first.
            app.loader.import_default_modules()
        app.signature(self.task_name, args=self.args).delay()


def job_enqueue(name: str, *args: Any) -> None:
    """Queue the Celery task registered as `name` with `args` after the current commit."""
    transaction.on_commit(QueuedJob(name, args))
