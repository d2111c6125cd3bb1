"""Dialectic consolidation: observed tool use → clusters → thesis / antithesis / synthesis →
Claude Code rules and skills (DESIGN "Dialectic consolidation" and "Dialectic delivery").

A `Trace` is what the consolidation task learned about one `memory.Observation` (its session
window's tool sequence, the features conditions are drawn from, its cluster). Every stage
writes rows keyed so that running it again finds nothing new to do.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from django.conf import settings
from django.db import models
from django.utils import timezone

from memory.models import Observation, ReviewItem


def vector_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def vector_of(raw: bytes | memoryview | None, dim: int = 384) -> np.ndarray:
    if not raw:
        return np.zeros(dim, dtype=np.float32)
    return np.frombuffer(bytes(raw), dtype=np.float32).copy()


class Cluster(models.Model):
    """Observations of one owner and scope whose vectors lie close (cosine > 0.75 to the
    centroid). The running sum of the member vectors gives the centroid and the cohesion."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    scope = models.CharField(max_length=200, default="global")
    label = models.CharField(max_length=300, blank=True, default="")
    size = models.PositiveIntegerField(default=0)
    vector_sum = models.BinaryField(default=b"")
    cohesion = models.FloatField(default=1.0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes: ClassVar = [
            models.Index(fields=["owner", "scope"], name="dialectic_cluster_scope")
        ]

    def __str__(self) -> str:
        return f"cluster {self.pk} ({self.size})"

    @property
    def centroid(self) -> np.ndarray:
        total = vector_of(self.vector_sum)
        norm = float(np.linalg.norm(total))
        return total / norm if norm else total


class Trace(models.Model):
    """One observation as consolidation sees it."""

    observation = models.OneToOneField(
        Observation, on_delete=models.CASCADE, primary_key=True, related_name="dialectic_trace"
    )
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    scope = models.CharField(max_length=200, default="global")
    project = models.CharField(max_length=500, blank=True, default="")
    tool = models.CharField(max_length=100)
    text = models.CharField(max_length=500, blank=True, default="")  # what was embedded
    sequence = models.JSONField(default=list)  # tool names of the session window, oldest first
    features = models.JSONField(default=list)  # [[kind, value], ...] of the window
    paths = models.JSONField(default=list)  # file paths the observation touched
    previous = models.CharField(max_length=500, blank=True, default="")  # the call before's text
    # Theses this observation contradicts (ids): its own cluster's thesis's supporting evidence
    # leaves it out.
    against = models.JSONField(default=list)
    cluster = models.ForeignKey(
        Cluster, on_delete=models.SET_NULL, null=True, blank=True, related_name="traces"
    )
    observed_at = models.DateTimeField()

    class Meta:
        indexes: ClassVar = [
            models.Index(fields=["owner", "scope", "cluster"], name="dialectic_trace_open")
        ]

    def __str__(self) -> str:
        return f"{self.tool} → {' → '.join(self.sequence)}"


class Thesis(models.Model):
    """A cohesive cluster's habit: its most common tool sequence, with conf(T)."""

    class Status(models.TextChoices):
        ACTIVE = "active"
        DORMANT = "dormant"  # the cluster fell below the thesis thresholds

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="thesis")
    scope = models.CharField(max_length=200, default="global")
    statement = models.TextField()
    expected_sequence = models.JSONField(default=list)
    size = models.PositiveIntegerField(default=0)
    cohesion = models.FloatField(default=0.0)
    confidence = models.FloatField(default=0.0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    # Antitheses are looked for among traces with a larger observation id than this.
    checked_upto = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "theses"

    def __str__(self) -> str:
        return self.statement[:80]


class Antithesis(models.Model):
    """The observations close to a thesis (cosine > 0.5) done another way (D > 0.3), one row per
    distinct tool sequence: how many, their recency-weighted weight, the feature sets they had
    (with counts) and the latest few exemplars. Storage grows with distinct behaviour, not with
    traffic: past `MAX_DISTINCT` sequences a thesis's rarer ones fold into one "other" row."""

    OTHER = "other"  # sequence_key of the row that holds the sequences past the cap

    thesis = models.ForeignKey(Thesis, on_delete=models.CASCADE, related_name="antitheses")
    sequence = models.JSONField(default=list)  # the tool sequence ([] for the "other" row)
    sequence_key = models.CharField(max_length=64)
    count = models.PositiveIntegerField(default=0)
    # sum of 0.5 ** ((weight_at - observed_at) / 14 days) over its observations; decays from
    # weight_at on (maths.decayed_value).
    weight = models.FloatField(default=0.0)
    weight_at = models.DateTimeField(default=timezone.now)
    variants = models.JSONField(default=list)  # [[[[kind, value], ...], count], ...]
    exemplars = models.JSONField(default=list)  # observation ids, oldest first, the latest few
    projects = models.JSONField(default=list)
    trace = models.ForeignKey(  # the latest exemplar
        Trace, on_delete=models.SET_NULL, null=True, blank=True, related_name="antitheses"
    )
    similarity = models.FloatField()  # of the latest exemplar
    divergence = models.FloatField()
    observed_at = models.DateTimeField()  # the latest
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "antitheses"
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["thesis", "sequence_key"], name="dialectic_uniq_antithesis_sequence"
            )
        ]

    def __str__(self) -> str:
        return f"against thesis {self.thesis_id}: {' → '.join(self.sequence)} ({self.count})"


class Synthesis(models.Model):
    """ "T, except when C", with its quality Q = coverage · consistency · parsimony."""

    class State(models.TextChoices):
        REJECTED_Q = "rejected_q"  # Q <= 0.6: kept for the record, never reviewed
        HELD = "held"  # accepted, but output type none or below the publication gates
        REVIEW = "review"  # waiting in the review queue
        APPROVED = "approved"  # published as artifacts
        REJECTED = "rejected"  # a person said no
        SUPERSEDED = "superseded"  # a newer synthesis of the same thesis replaced it

    class OutputType(models.TextChoices):
        NONE = "none"
        RULE = "rule"
        SKILL = "skill"
        RULE_WITH_SKILL = "rule_with_skill"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    thesis = models.ForeignKey(Thesis, on_delete=models.CASCADE, related_name="syntheses")
    scope = models.CharField(max_length=200, default="global")
    evidence_key = models.CharField(max_length=64)
    statement = models.TextField()
    condition = models.TextField(blank=True, default="")
    features = models.JSONField(default=list)  # the condition's features [[kind, value], ...]
    clauses = models.PositiveSmallIntegerField(default=0)
    coverage = models.FloatField(default=0.0)
    consistency = models.FloatField(default=0.0)
    parsimony = models.FloatField(default=1.0)
    q = models.FloatField(default=0.0)
    antithesis_weight = models.FloatField(default=0.0)
    confidence = models.FloatField(default=0.0)  # conf(T) when written
    exemplars = models.PositiveIntegerField(default=0)
    # Of the habit's evidence, the share that follows it (supporting / supporting + antitheses).
    support_share = models.FloatField(default=1.0)
    projects = models.JSONField(default=list)
    output_type = models.CharField(
        max_length=16, choices=OutputType.choices, default=OutputType.NONE
    )
    decision_confidence = models.FloatField(default=0.0)
    decision_reason = models.CharField(max_length=300, blank=True, default="")
    characteristics = models.JSONField(default=dict)
    producer = models.CharField(max_length=10, default="heuristic")
    state = models.CharField(max_length=12, choices=State.choices, default=State.HELD)
    review_item = models.ForeignKey(
        ReviewItem, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "syntheses"
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["thesis", "evidence_key"], name="dialectic_uniq_synthesis"
            )
        ]

    def __str__(self) -> str:
        return self.statement[:80]

    @property
    def accepted(self) -> bool:
        return self.state != self.State.REJECTED_Q


class Artifact(models.Model):
    """A rule or a skill delivered into `.claude/`; every version is kept."""

    class Kind(models.TextChoices):
        RULE = "rule"
        SKILL = "skill"

    class Status(models.TextChoices):
        ACTIVE = "active"
        RETIRED = "retired"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    kind = models.CharField(max_length=5, choices=Kind.choices)
    slug = models.CharField(max_length=80)
    scope = models.CharField(max_length=200, default="global")  # a project scope, or "user"
    thesis = models.ForeignKey(
        Thesis, on_delete=models.SET_NULL, null=True, blank=True, related_name="artifacts"
    )
    synthesis = models.ForeignKey(
        Synthesis, on_delete=models.SET_NULL, null=True, blank=True, related_name="artifacts"
    )
    version = models.PositiveIntegerField(default=1)
    content_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["owner", "kind", "slug", "scope"], name="dialectic_uniq_artifact"
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.slug} v{self.version}"


class ArtifactVersion(models.Model):
    """The files of one version: {relative path under .claude/: content}."""

    artifact = models.ForeignKey(Artifact, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    files = models.JSONField(default=dict)
    synthesis = models.ForeignKey(
        Synthesis, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["artifact", "version"], name="dialectic_uniq_version")
        ]

    def __str__(self) -> str:
        return f"{self.artifact} v{self.version}"
