"""Session learning: the signals hooks send and the lessons drafted from them."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone

from memory.models.engrams import (
    Engram,
)
from memory.models.sessions import (
    AgentSession,
)

# --- Session learning ---------------------------------------------------------------------


class LearningSignal(models.Model):
    """A prompt, a transcript delta or an error → fix pair waiting for extraction (redacted)."""

    class Kind(models.TextChoices):
        PROMPT = "prompt"
        TRANSCRIPT = "transcript"
        ERROR_FIX = "error_fix"

    class State(models.TextChoices):
        PENDING = "pending"
        DONE = "done"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, null=True, blank=True, related_name="signals"
    )
    kind = models.CharField(max_length=12, choices=Kind.choices)
    label = models.CharField(max_length=20, blank=True, default="")  # instruction | correction …
    text = models.TextField()
    digest = models.CharField(max_length=64, blank=True, default="")
    redacted = models.JSONField(default=list, blank=True)
    # Error → fix signals: {"tool", "failed", "fixed"}, the shapes of the command that failed
    # and of the one that worked (memory.maths.shell); {} for other signals and older rows.
    fix = models.JSONField(default=dict, blank=True)
    scope = models.CharField(max_length=200, default="global")
    # Transcript deltas: the byte range of the transcript they cover.
    offset_start = models.BigIntegerField(default=0)
    offset_end = models.BigIntegerField(default=0)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    producer = models.CharField(max_length=10, blank=True, default="")  # llm | heuristic
    created_at = models.DateTimeField(default=timezone.now)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes: ClassVar = [
            models.Index(fields=["owner", "-created_at"], name="signal_recent"),
            models.Index(fields=["session", "digest"], name="signal_session_digest"),
            models.Index(fields=["owner", "digest"], name="signal_owner_digest"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} signal {self.pk} ({self.state})"


class AgentPrompt(models.Model):
    """A prompt the agent wrote for another agent or session (a tool call's `prompt` input: a
    subagent's task, a spawned session's first prompt), by digest. The spawned session's first
    prompt arrives as a user prompt, but it is the agent's words, never the person's."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["owner", "digest"], name="agent_prompt_once")
        ]

    def __str__(self) -> str:
        return f"agent prompt {self.digest[:12]}"


class LearningDraft(models.Model):
    """One lesson extracted from a signal and what the write path made of it."""

    class Tier(models.TextChoices):
        EXPLICIT = "A"
        CORRECTION = "B"
        INFERRED = "C"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    signal = models.ForeignKey(LearningSignal, on_delete=models.CASCADE, related_name="drafts")
    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, null=True, blank=True, related_name="drafts"
    )
    engram = models.ForeignKey(
        Engram, on_delete=models.SET_NULL, null=True, blank=True, related_name="drafts"
    )
    supersedes = models.ForeignKey(
        Engram, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    statement = models.TextField()
    tier = models.CharField(max_length=1, choices=Tier.choices)
    polarity = models.CharField(max_length=4, blank=True, default="")
    anti_pattern = models.TextField(blank=True, default="")
    quote = models.TextField(blank=True, default="")
    # Where the quote was said: the transcript entry (its uuid, and its line in the signal's
    # delta, from 1); both empty for a prompt (the signal is the prompt) or an error → fix pair.
    entry_uuid = models.CharField(max_length=64, blank=True, default="")
    entry_line = models.PositiveIntegerField(default=0)
    producer = models.CharField(max_length=10, default="heuristic")
    # created | recurrence | merge_proposed | contradiction_flagged | superseded | review | rejected
    result = models.CharField(max_length=24, default="created")
    error = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes: ClassVar = [models.Index(fields=["owner", "-created_at"], name="draft_recent")]

    def __str__(self) -> str:
        return f"{self.tier}: {self.statement[:60]}"


class SweepFailure(models.Model):
    """A piece of background work the recovery sweep tried and failed: retried with back-off,
    and past the attempt limit no longer retried but shown on the health panel."""

    kind = models.CharField(max_length=20)  # transcript, attribution, signal
    object_id = models.BigIntegerField()
    attempts = models.PositiveSmallIntegerField(default=0)
    next_at = models.DateTimeField(default=timezone.now)
    error = models.CharField(max_length=200, blank=True, default="")
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["kind", "object_id"], name="uniq_sweep_failure")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.object_id} ({self.attempts})"
