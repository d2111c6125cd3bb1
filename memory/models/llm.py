"""Recorded LLM calls and the breaker that stops calling when Claude is unreachable."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone

# --- LLM calls ----------------------------------------------------------------------------


class LlmCall(models.Model):
    """One call to Claude (or one refused by the daily budget): what it cost and how it ended.

    A call in flight is a `pending` row holding its reservation in `reserved`; settling it
    writes the real tokens and sets `reserved` to 0. The budget counts all three.
    """

    class Outcome(models.TextChoices):
        OK = "ok"
        REPAIRED = "repaired"  # ok after the repair turn
        FAILED = "failed"  # an API error, a timeout or an invalid answer: the fallback ran
        BUDGET = "budget"  # not sent: the owner's daily budget was spent
        PENDING = "pending"  # sent and not settled yet: its reservation counts

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True
    )
    task = models.CharField(max_length=60)
    model = models.CharField(max_length=100, blank=True, default="")
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    duration_ms = models.FloatField(default=0.0)
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    error = models.CharField(max_length=300, blank=True, default="")
    # Why a failed call failed, as `LlmUnavailable.reason` (timeout, unreachable, auth, …).
    reason = models.CharField(max_length=20, blank=True, default="")
    # Tokens held for a call in flight (estimated input + output cap); 0 once settled.
    reserved = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes: ClassVar = [
            models.Index(fields=["owner", "created_at"], name="llmcall_owner_day"),
            models.Index(fields=["-created_at"], name="llmcall_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.task} {self.outcome} ({self.tokens_in}+{self.tokens_out} tokens)"

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


class LlmGate(models.Model):
    """The row every process consults before calling Claude: the circuit breaker's state, and
    the lock that makes budget reservations one at a time (`select_for_update` on PostgreSQL;
    SQLite's immediate transactions already take one writer at a time)."""

    key = models.CharField(max_length=40, unique=True)
    # Calls in a row that could not reach Claude (unreachable, timeout, refused key).
    failures = models.PositiveIntegerField(default=0)
    reason = models.CharField(max_length=20, blank=True, default="")
    error = models.CharField(max_length=300, blank=True, default="")
    opened_at = models.DateTimeField(null=True, blank=True)
    open_until = models.DateTimeField(null=True, blank=True)  # no call before this time
    skipped = models.PositiveIntegerField(default=0)  # calls not made since it opened
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.key}: {self.failures} failure(s), open until {self.open_until}"
