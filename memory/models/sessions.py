"""Agent sessions and what happened in them: injections, outcomes, observations, episodes."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.utils import timezone

from memory.fields import EmbeddingField
from memory.models.engrams import (
    EMBEDDING_DIM,
    Engram,
)

# --- Sessions, injections, outcomes -------------------------------------------------------


class AgentSession(models.Model):
    """An agent's working session."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    session_id = models.CharField(max_length=200)
    task = models.TextField(blank=True, default="")
    scope = models.CharField(max_length=200, default="global")
    agent = models.CharField(max_length=100, blank=True, default="")
    cwd = models.CharField(max_length=500, blank=True, default="")
    started_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)
    summary = models.TextField(blank=True, default="")
    last_assistant_message = models.TextField(blank=True, default="")
    attributed_at = models.DateTimeField(null=True, blank=True)
    # Engrams already counted for co-access in this session: a session that a Stop ended and a
    # later event reopened must not strengthen the same pairs twice.
    coaccess_ids = models.JSONField(default=list, blank=True)
    # The project's own rules (CLAUDE.md, .claude/rules/*.md) as engram-hook sent them, and the
    # engrams they already state (cosine >= 0.9): those are not injected in this session.
    project_rules = models.JSONField(default=list, blank=True)
    suppressed_ids = models.JSONField(default=list, blank=True)
    # Session learning: the Claude Code transcript and how many of its bytes were captured.
    transcript_path = models.CharField(max_length=1000, blank=True, default="")
    transcript_offset = models.BigIntegerField(default=0)
    # Files this session named that the server would not read, and why (memory.services.localfiles).
    read_refusals = models.JSONField(default=list, blank=True)
    # The last compaction (SessionStart source "compact"): what was delivered before it may be
    # delivered again, since the agent's context no longer holds it.
    compacted_at = models.DateTimeField(null=True, blank=True)
    # The session's latest prompts (redacted, cut): what it was about, for outcome attribution,
    # now that most prompts inject nothing (an injection's query used to say it).
    prompts = models.JSONField(default=list, blank=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["owner", "session_id"], name="uniq_session_id")
        ]
        indexes: ClassVar = [models.Index(fields=["owner", "-started_at"], name="session_recent")]

    def __str__(self) -> str:
        return self.session_id

    def reopen(self) -> bool:
        """A later event of a session a Stop ended: open it again so the next Stop attributes
        again. Conditional, so two concurrent events reopen it once; False if it was open."""
        if self.ended_at is None:
            return False
        reopened = AgentSession.objects.filter(pk=self.pk, ended_at__isnull=False).update(
            ended_at=None, attributed_at=None
        )
        self.ended_at = None
        self.attributed_at = None
        return bool(reopened)


class Injection(models.Model):
    """One surfacing of one engram in one session."""

    class Bucket(models.TextChoices):
        CONSTRAINT = "constraint"
        DIRECTIVE = "directive"
        CONSIDER = "consider"
        SPREAD = "spread"
        REMINDER = "reminder"
        RECALL = "recall"
        BRIEF = "brief"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="injections")
    engram = models.ForeignKey(Engram, on_delete=models.CASCADE, related_name="injection_rows")
    bucket = models.CharField(max_length=12, choices=Bucket.choices)
    rank = models.PositiveSmallIntegerField(default=0)
    score = models.FloatField(default=0.0)
    tokens = models.PositiveIntegerField(default=0)
    query = models.TextField(blank=True, default="")
    # Why it was delivered (score parts): the shared terms and their coverage on the prompt
    # path, the trigger at tool time, the rule's source in the brief.
    evidence = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes: ClassVar = [models.Index(fields=["session", "engram"], name="injection_session")]

    def __str__(self) -> str:
        return f"{self.engram_id} in {self.session_id} ({self.bucket})"


class Outcome(models.Model):
    """Whether one injection was followed; explicit sources override automatic ones."""

    class Result(models.TextChoices):
        FOLLOWED = "followed"
        CONTRADICTED = "contradicted"
        IGNORED = "ignored"
        IRRELEVANT = "irrelevant"

    class Source(models.TextChoices):
        AUTO_LLM = "auto-llm"
        AUTO_HEURISTIC = "auto-heuristic"
        AGENT = "agent"
        PERSON = "person"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    injection = models.OneToOneField(Injection, on_delete=models.CASCADE, related_name="outcome")
    engram = models.ForeignKey(Engram, on_delete=models.CASCADE, related_name="outcomes")
    result = models.CharField(max_length=12, choices=Result.choices)
    source = models.CharField(max_length=16, choices=Source.choices)
    evidence = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.engram_id}: {self.result} ({self.source})"

    @property
    def is_explicit(self) -> bool:
        return self.source in {Outcome.Source.AGENT, Outcome.Source.PERSON}


class Observation(models.Model):
    """One tool use reported by a hook; input and output are redacted before storage."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="observations", null=True, blank=True
    )
    tool = models.CharField(max_length=100)
    tool_input = models.TextField(blank=True, default="")
    tool_output = models.TextField(blank=True, default="")
    input_digest = models.CharField(max_length=64, blank=True, default="")
    output_digest = models.CharField(max_length=64, blank=True, default="")
    success = models.BooleanField(default=True)
    redacted = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    embedding = EmbeddingField(dimensions=EMBEDDING_DIM, null=True, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes: ClassVar = [
            models.Index(fields=["owner", "-created_at"], name="observation_recent")
        ]

    def __str__(self) -> str:
        return f"{self.tool} at {self.created_at:%Y-%m-%d %H:%M}"


class Episode(models.Model):
    """An append-only record of something that happened."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    episode_id = models.CharField(max_length=40)
    timestamp = models.DateTimeField(default=timezone.now)
    summary = models.TextField()
    agent = models.CharField(max_length=100, blank=True, default="")
    channel = models.CharField(max_length=100, blank=True, default="")
    session = models.ForeignKey(
        AgentSession, on_delete=models.SET_NULL, null=True, blank=True, related_name="episodes"
    )

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["owner", "episode_id"], name="uniq_episode_id")
        ]
        indexes: ClassVar = [models.Index(fields=["owner", "-timestamp"], name="episode_recent")]

    def __str__(self) -> str:
        return f"{self.episode_id}: {self.summary[:60]}"
