"""Success patterns: what worked for an agent, its evaluations and the feedback that recurs.

A pattern has two independent signals. Survival: the success score with its anchor (aged
0.98^weeks from the anchor, +0.1 per reuse, retired below 0.1). Ranking: the eval store (the
median of the last five EvalRecord scores). Reuse never touches the eval store, and an
evaluation never touches the success score.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone

from memory.fields import EmbeddingField
from patterns import maths


class PatternQuerySet(models.QuerySet["SuccessPattern"]):
    def for_owner(self, owner: Any) -> PatternQuerySet:
        return self.filter(owner=owner)

    def live(self) -> PatternQuerySet:
        return self.filter(status=SuccessPattern.Status.ACTIVE)

    def for_dashboard(self, owner: Any) -> PatternQuerySet:
        """The owner's patterns for the list page, newest first, without their vectors."""
        return self.for_owner(owner).defer("embedding").order_by("status", "-updated_at", "-id")


class SuccessPattern(models.Model):
    """One successful run: the task, how it was done (design, code), what it produced."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        RETIRED = "retired"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    key = models.CharField(max_length=20, unique=True)  # pat_ + 12 hex, set by the service
    task = models.TextField()
    design = models.TextField(blank=True, default="")
    code = models.TextField(blank=True, default="")
    output = models.TextField(blank=True, default="")
    # Compose contracts: the named values this pattern needs and the ones it produces.
    inputs = models.JSONField(default=list, blank=True)
    outputs = models.JSONField(default=list, blank=True)
    scope = models.CharField(max_length=200, default="global")
    # Survival: score₀ at the anchor; the current score is always derived from these two.
    success_score = models.FloatField()
    score_anchor = models.DateTimeField(default=timezone.now)
    score = models.FloatField()  # the aged score as of the last aging run (for listing)
    reuse_count = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    embedding = EmbeddingField(dimensions=384, null=True, blank=True)
    engram_id = models.CharField(max_length=40, blank=True, default="")  # once promoted
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    objects = PatternQuerySet.as_manager()

    class Meta:
        indexes: ClassVar = [
            models.Index(fields=["owner", "status"], name="pattern_owner_status"),
        ]

    def __str__(self) -> str:
        return f"{self.key}: {self.task[:60]}"

    def current_score(self, now: datetime) -> float:
        return maths.aged_score(self.success_score, self.score_anchor, now)

    def retire(self, *, now: datetime) -> bool:
        """Retire the pattern; False when it already was."""
        if self.status == self.Status.RETIRED:
            return False
        self.status = self.Status.RETIRED
        self.retired_at = now
        self.updated_at = now
        self.save(update_fields=["status", "retired_at", "updated_at"])
        return True


class EvalRecord(models.Model):
    """One evaluation: of a pattern (its rolling eval store) or of a bare task and code.

    Also the handle of an evaluation still running: `pending` until its Celery task has
    judged it, then `done` with the median score, the judges' spread and the worst feedback.
    """

    class Source(models.TextChoices):
        LLM = "llm"
        RUBRIC = "rubric"
        EXTERNAL = "external"

    class State(models.TextChoices):
        PENDING = "pending"
        DONE = "done"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    key = models.CharField(max_length=20, unique=True)  # ev_ + 12 hex, set by the service
    pattern = models.ForeignKey(
        SuccessPattern,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="evaluations",
    )
    task = models.TextField(blank=True, default="")
    code = models.TextField(blank=True, default="")
    expected_outputs = models.JSONField(default=list, blank=True)
    judges = models.PositiveSmallIntegerField(default=1)
    state = models.CharField(max_length=10, choices=State.choices, default=State.DONE)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.EXTERNAL)
    score = models.FloatField(null=True, blank=True)
    spread = models.FloatField(default=0.0)
    flagged = models.BooleanField(default=False)
    feedback = models.TextField(blank=True, default="")
    judge_scores = models.JSONField(default=list, blank=True)
    hardcoding = models.JSONField(default=list, blank=True)
    note = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes: ClassVar = [
            models.Index(fields=["pattern", "state", "created_at"], name="eval_pattern_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.state}, {self.score})"


class FeedbackCluster(models.Model):
    """Evaluation feedback that recurs: members joined at Jaccard > 0.4 of their words.

    Its weight decays 10 % per whole week since `last_seen`; it surfaces at weight >= 2.
    `vector` is the mean of its members' task vectors, to find the clusters of a task.
    """

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    text = models.TextField()
    words = models.JSONField(default=list)
    count = models.FloatField(default=1.0)  # decayed at each join: weight then + 1
    members = models.JSONField(default=list, blank=True)  # [{eval, pattern, feedback}], newest last
    vector = EmbeddingField(dimensions=384, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now)
    addressed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes: ClassVar = [models.Index(fields=["owner", "last_seen"], name="cluster_recent")]

    def __str__(self) -> str:
        return f"{self.text[:60]} (x{self.count})"

    def weight(self, now: datetime) -> float:
        return maths.cluster_weight(self.count, self.last_seen, now)

    def surfaces(self, now: datetime) -> bool:
        if self.addressed_at is not None and self.addressed_at >= self.last_seen:
            return False
        return maths.cluster_surfaces(self.count, self.last_seen, now)


class PatternSettings(models.Model):
    """Per-owner switches; off by default."""

    owner = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pattern_settings"
    )
    feed_inject = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"pattern settings of {self.owner_id}"


class Composition(models.Model):
    """A task split into stages drawn from stored patterns, with its contract check.

    Also the handle of an LLM composition still running (`pending` until `patterns.compose`
    has written its stages); the nearest-patterns fallback is written `done` at once.
    """

    class Source(models.TextChoices):
        LLM = "llm"
        NEAREST = "nearest"
        GIVEN = "given"

    class State(models.TextChoices):
        PENDING = "pending"
        DONE = "done"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    key = models.CharField(max_length=20, unique=True)  # cmp_ + 12 hex, set by the service
    task = models.TextField()
    given = models.JSONField(default=list, blank=True)
    max_stages = models.PositiveSmallIntegerField(default=4)
    state = models.CharField(max_length=10, choices=State.choices, default=State.DONE)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.NEAREST)
    stages = models.JSONField(default=list, blank=True)  # [{name, pattern, task, inputs, outputs}]
    errors = models.JSONField(default=list, blank=True)  # [{stage, field, message}]
    note = models.CharField(max_length=300, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.key} ({self.state})"

    @property
    def valid(self) -> bool:
        return self.state == self.State.DONE and not self.errors
