"""Queueing background work from a service without importing the tasks module (tasks import
services, never the other way): the task is named, and queued only once the caller's transaction
commits, so a worker never sees rows that are not there yet.

Queueing never fails the request that committed the work: when the broker cannot take the task
(Redis down, the data directory's broker folder unwritable), the failure is logged and the work
stays in the database for the periodic sweep (`memory.services.recovery.pending_sweep`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from celery import current_app
from django.db import transaction

logger = logging.getLogger(__name__)

# A broker that refuses connections is retried briefly (about 0.2 s in all), never for long:
# the caller is usually a hook an agent waits for, and the sweep recovers what was not queued.
PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.1,
    "interval_max": 0.1,
}


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
        try:
            # Nobody waits for these results: ignoring them keeps the result backend (Redis)
            # off the request path, where a dead backend would block for its 20 retries.
            app.signature(self.task_name, args=self.args).apply_async(
                ignore_result=True, retry=True, retry_policy=PUBLISH_RETRY_POLICY
            )
        except Exception as exc:
            if app.conf.task_always_eager:
                raise  # an eager task's own error is the caller's (tests, bench replays)
            logger.warning(
                "job %s%r not queued (%s: %s); the periodic sweep will run it",
                self.task_name,
                self.args,
                type(exc).__name__,
                exc,
            )


def job_enqueue(name: str, *args: Any) -> None:
    """Queue the Celery task registered as `name` with `args` after the current commit."""
    transaction.on_commit(QueuedJob(name, args))
