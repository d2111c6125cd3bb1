"""The review queue and the history of every engram (lifecycle events)."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone

from memory.models.engrams import (
    Engram,
)

# --- Review and history -------------------------------------------------------------------


class ReviewItem(models.Model):
    """Something waiting for a person's decision in the daily review."""

    class Kind(models.TextChoices):
        CANDIDATE = "candidate"
        CONTRADICTION = "contradiction"
        MERGE = "merge"
        FADING = "fading"
        ABSTRACTION = "abstraction"
        CALIBRATION = "calibration"
        MAINTENANCE = "maintenance"
        SYNTHESIS = "synthesis"
        PROVISIONAL = "provisional"
        PROMPT = "prompt"  # a prompt change proposed from success patterns' recurring feedback
        SUPERSEDED = "superseded"  # a rule replaced by its newer version; restore it from here

    class State(models.TextChoices):
        PENDING = "pending"
        DEFERRED = "deferred"
        DONE = "done"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    kind = models.CharField(max_length=14, choices=Kind.choices)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    engram = models.ForeignKey(
        Engram, on_delete=models.CASCADE, null=True, blank=True, related_name="review_items"
    )
    other = models.ForeignKey(
        Engram, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    payload = models.JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True, default="")
    decision = models.CharField(max_length=30, blank=True, default="")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    deferred_until = models.DateTimeField(null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes: ClassVar = [models.Index(fields=["owner", "state", "kind"], name="review_open")]

    def __str__(self) -> str:
        return f"{self.kind} ({self.state})"


class AnsweredText(models.Model):
    """A statement answered "one-off" or "wrong" in review: capture does not take it again."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    content_hash = models.CharField(max_length=64)  # textnorm.content_hash of the statement
    answer = models.CharField(max_length=10)  # one_off | wrong
    statement = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["owner", "content_hash"], name="answered_text_once")
        ]

    def __str__(self) -> str:
        return f"{self.answer}: {self.statement[:60]}"


class Event(models.TextChoices):
    """Every lifecycle event name; `event_record` refuses any other (a typo is a bug, not a row)."""

    MAINTENANCE_PROPOSED = "maintenance_proposed"
    ENGRAM_ESCALATED = "engram_escalated"
    ENGRAM_DEESCALATED = "engram_deescalated"
    ENGRAM_CREATED = "engram_created"
    ENGRAM_UPDATED = "engram_updated"
    ENGRAM_MERGED = "engram_merged"
    ENGRAM_RETIRED = "engram_retired"
    ENGRAM_PROMOTED = "engram_promoted"
    ENGRAM_PURGED = "engram_purged"
    ENGRAM_CONSOLIDATED = "engram_consolidated"
    ENGRAM_SUPERSEDED = "engram_superseded"
    FEEDBACK_RECEIVED = "feedback_received"
    RECURRENCE_DETECTED = "recurrence_detected"
    CONTRADICTION_DETECTED = "contradiction_detected"
    SCOPE_PROMOTED = "scope_promoted"
    STATUS_CHANGED = "status_changed"
    BAND_CHANGED = "band_changed"
    REVIEW_DECIDED = "review_decided"
    SESSION_ENDED = "session_ended"
    OUTCOMES_ATTRIBUTED = "outcomes_attributed"
    EPISODE_CAPTURED = "episode_captured"
    ABSTRACT_LINKED = "abstract_linked"
    CONVERGENT_DUPLICATE = "convergent_duplicate"
    PEER_TRUSTED = "peer_trusted"
    PEER_REJECTED = "peer_rejected"
    PEER_REVOKED = "peer_revoked"
    TRIAL_RESTARTED = "trial_restarted"
    TRIAL_ENDED = "trial_ended"
    IMPORT_DISCARDED = "import_discarded"
    LESSON_CAPTURED = "lesson_captured"
    LESSON_UNDONE = "lesson_undone"
    ENGRAM_RESTORED = "engram_restored"
    REVIEW_ARCHIVED = "review_archived"
    REVIEW_RESTORED = "review_restored"


class LifecycleEvent(models.Model):
    """Append-only log of every change, exportable as monthly JSONL."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    event = models.CharField(max_length=40)
    engram = models.ForeignKey(
        Engram, on_delete=models.SET_NULL, null=True, blank=True, related_name="events"
    )
    engram_ref = models.CharField(max_length=40, blank=True, default="")
    actor = models.CharField(max_length=100, blank=True, default="")
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes: ClassVar = [
            models.Index(fields=["owner", "-created_at"], name="event_recent"),
            models.Index(fields=["engram", "created_at"], name="event_engram"),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.engram_ref}"
