"""The one rule for whether a project's hooks still arrive (memory.maths.hookhealth)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.maths import hookhealth
from memory.maths.hookhealth import HookSignals, hook_health

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def test_a_project_without_any_hook_is_none_not_red() -> None:
    health = hook_health(HookSignals(None), now=NOW)
    assert health.state == hookhealth.NONE and not health.red


def test_hooks_that_arrived_recently_are_ok() -> None:
    assert hook_health(HookSignals(NOW - timedelta(minutes=5), 7), now=NOW).state == "ok"


def test_a_transcript_written_after_the_last_hook_past_the_grace_is_red() -> None:
    last = NOW - timedelta(hours=3)
    signals = HookSignals(last, 1, transcript_written_at=last + timedelta(minutes=16))
    health = hook_health(signals, now=NOW)
    assert health.red and "transcript" in health.reason


def test_a_transcript_written_within_the_grace_of_the_last_hook_is_ok() -> None:
    last = NOW - timedelta(hours=3)
    signals = HookSignals(last, 1, transcript_written_at=last + timedelta(minutes=14))
    assert hook_health(signals, now=NOW).state == "ok"


def test_the_hooks_token_revoked_after_the_last_hook_is_red() -> None:
    last = NOW - timedelta(hours=1)
    health = hook_health(HookSignals(last, token_revoked_at=last + timedelta(minutes=1)), now=NOW)
    assert health.red and "revoked" in health.reason


def test_a_token_revoked_before_the_last_hook_says_nothing() -> None:
    last = NOW - timedelta(hours=1)
    signals = HookSignals(last, token_revoked_at=last - timedelta(minutes=1))
    assert hook_health(signals, now=NOW).state == "ok"


def test_a_token_counts_as_the_hooks_one_when_used_within_the_slack_of_the_last_hook() -> None:
    last = NOW - timedelta(hours=1)
    used = hookhealth.token_used_by_hooks
    assert used(last_hook_at=last, token_last_used_at=last - timedelta(seconds=119))
    assert not used(last_hook_at=last, token_last_used_at=last - timedelta(minutes=3))
    assert not used(last_hook_at=last, token_last_used_at=None)


def test_a_daily_project_silent_for_more_than_four_days_is_quiet_not_red() -> None:
    last = NOW - timedelta(days=4, minutes=1)
    health = hook_health(HookSignals(last, active_days=3), now=NOW)
    assert health.state == "quiet" and not health.red


def test_a_weekend_or_an_occasional_project_is_not_quiet() -> None:
    assert hook_health(HookSignals(NOW - timedelta(days=3), 5), now=NOW).state == "ok"
    assert hook_health(HookSignals(NOW - timedelta(days=20), 2), now=NOW).state == "ok"
