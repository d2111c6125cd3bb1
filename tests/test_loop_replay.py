"""A short run of bench/loop.py: the whole loop through the hook endpoint, with a fake clock."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client

from bench.loop import controlled_clock, replay


@pytest.mark.sqlite
@pytest.mark.django_db(transaction=True)
def test_two_simulated_weeks_close_the_loop(owner: Any, api: Client, settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    with controlled_clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC)) as advance:
        report = replay(
            client=api,
            owner=owner,
            advance=advance,
            weeks=2,
            sessions_per_day=2,
            say=lambda s: None,
        )
    assert report.injections > 20
    assert report.outcome_share >= 0.9
    assert report.small_sample_proposals == 0
    assert report.weeks[0]["working"] >= 1 and report.weeks[0]["noise"] >= 1
    assert sum(report.proposals_made.values()) >= 1
    assert report.proposals_applied == report.proposals_made
