"""Engrams (the memories), their associations and the activity calendar."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from django.conf import settings
from django.db import connections, models, transaction
from django.db.models import Q
from django.utils import timezone

from memory.fields import EmbeddingField

EMBEDDING_DIM = 384


# --- Engrams ------------------------------------------------------------------------------


class EngramQuerySet(models.QuerySet["Engram"]):
    def for_owner(self, owner: Any) -> EngramQuerySet:
        return self.filter(owner=owner)

    def visible_to(self, owner: Any, scopes: list[str] | None = None) -> EngramQuerySet:
        """The owner's engrams, limited to the token's scope patterns when given."""
        qs = self.filter(owner=owner)
        if scopes and "*" not in scopes:
            cond = Q()
            for pattern in scopes:
                if pattern.endswith("*"):
                    cond |= Q(scope__startswith=pattern[:-1])
                else:
                    cond |= Q(scope=pattern)
            qs = qs.filter(cond)
        return qs

    def live(self) -> EngramQuerySet:
        return self.exclude(status=Engram.Status.RETIRED)

    def insert_new(self, engrams: list[Engram]) -> list[Engram]:
        """`bulk_create` for new engrams (no conflict handling); on PostgreSQL one COPY.

        A 100-row INSERT through the ORM carries ~7,000 parameters that Django prepares one by
        one and psycopg and PostgreSQL then parse, about as long as the rows take to insert
        (their HNSW insertion included). COPY streams the same prepared values; ids are drawn
        from the table's sequence first, so each engram has its pk afterwards, as with
        `bulk_create`. Errors surface as Django's database exceptions.
        """
        connection = connections[self.db]
        if not engrams:
            return engrams
        if connection.vendor != "postgresql":
            return list(Engram.objects.using(self.db).bulk_create(engrams))
        meta = Engram._meta
        pk = meta.pk
        assert pk is not None
        fields = [f for f in meta.concrete_fields if f is not pk]
        quote = connection.ops.quote_name
        columns = ", ".join(quote(str(f.column)) for f in (pk, *fields))
        with transaction.atomic(using=self.db, savepoint=False), connection.cursor() as cursor:
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                [meta.db_table, pk.column, len(engrams)],
            )
            ids = sorted(row[0] for row in cursor.fetchall())
            with (
                connection.wrap_database_errors,
                cursor.cursor.copy(f"COPY {quote(meta.db_table)} ({columns}) FROM STDIN") as copy,
            ):
                for engram, new_id in zip(engrams, ids, strict=True):
                    copy.write_row(
                        [new_id]
                        + [f.get_db_prep_save(f.pre_save(engram, True), connection) for f in fields]
                    )
        for engram, new_id in zip(engrams, ids, strict=True):
            engram.pk = new_id
            engram._state.adding = False
            engram._state.db = self.db
        return engrams

    def valid_at(self, when: datetime) -> EngramQuerySet:
        return self.filter(
            Q(valid_from__isnull=True) | Q(valid_from__lte=when),
            Q(valid_until__isnull=True) | Q(valid_until__gt=when),
        )


class Engram(models.Model):
    """One individually addressable memory (Engram spec v2.1 fields)."""

    class Status(models.TextChoices):
        CANDIDATE = "candidate"
        ACTIVE = "active"
        DORMANT = "dormant"
        RETIRED = "retired"

    class Type(models.TextChoices):
        BEHAVIORAL = "behavioral"
        TERMINOLOGICAL = "terminological"
        PROCEDURAL = "procedural"
        ARCHITECTURAL = "architectural"

    class Visibility(models.TextChoices):
        PRIVATE = "private"
        PUBLIC = "public"
        TEMPLATE = "template"

    class Polarity(models.TextChoices):
        DO = "do"
        DONT = "dont"

    class Enforcement(models.TextChoices):
        ADVISORY = "advisory"
        EMPHASISED = "emphasised"
        REMINDER = "reminder"

    class Kind(models.TextChoices):
        CONCRETE = "ENG"
        ABSTRACT = "ABS"
        META = "META"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    engram_id = models.CharField(max_length=40)
    kind = models.CharField(max_length=4, choices=Kind.choices, default=Kind.CONCRETE)
    version = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.CANDIDATE)
    consolidated = models.BooleanField(default=False)
    type = models.CharField(max_length=16, choices=Type.choices, default=Type.BEHAVIORAL)
    scope = models.CharField(max_length=200, default="global")
    visibility = models.CharField(
        max_length=10, choices=Visibility.choices, default=Visibility.PRIVATE
    )
    # None is the spec's `null` polarity, distinct from an empty string.
    polarity = models.CharField(  # noqa: DJ001
        max_length=4, choices=Polarity.choices, null=True, blank=True
    )
    statement = models.TextField()
    rationale = models.TextField(blank=True, default="")
    contraindications = models.JSONField(default=list, blank=True)
    tags = models.JSONField(default=list, blank=True)
    domain = models.CharField(max_length=200, blank=True, default="")
    entities = models.JSONField(default=list, blank=True)
    # Abstract engrams (ABS-): the general form and when it applies.
    structure = models.TextField(blank=True, default="")
    applies_when = models.TextField(blank=True, default="")

    # temporal
    learned_at = models.DateTimeField(default=timezone.now)
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_until = models.DateTimeField(null=True, blank=True)

    # episodic
    emotional_weight = models.FloatField(default=5.0)
    confidence = models.FloatField(default=5.0)
    trigger_context = models.TextField(blank=True, default="")
    journal_ref = models.CharField(max_length=300, blank=True, default="")

    # activation: RS is stored with its anchor and never decayed in storage.
    retrieval_strength = models.FloatField(default=0.7)
    rs_anchor_at = models.DateTimeField(default=timezone.now)
    storage_strength = models.FloatField(default=0.0)
    frequency = models.PositiveIntegerField(default=0)
    last_accessed = models.DateTimeField(null=True, blank=True)

    # usage
    injections = models.PositiveIntegerField(default=0)
    hits = models.PositiveIntegerField(default=0)
    misses = models.PositiveIntegerField(default=0)
    last_hit_at = models.DateTimeField(null=True, blank=True)
    feedback_positive = models.PositiveIntegerField(default=0)
    feedback_negative = models.PositiveIntegerField(default=0)
    feedback_neutral = models.PositiveIntegerField(default=0)

    # effectiveness counters
    surfaced = models.PositiveIntegerField(default=0)
    followed = models.PositiveIntegerField(default=0)
    contradicted = models.PositiveIntegerField(default=0)
    ignored = models.PositiveIntegerField(default=0)
    irrelevant = models.PositiveIntegerField(default=0)

    # Band of RS_eff as of the last periodic run (active, fading, dormant, retire).
    band = models.CharField(max_length=8, default="active")
    enforcement = models.CharField(
        max_length=10, choices=Enforcement.choices, default=Enforcement.ADVISORY
    )
    # Effectiveness when escalated, and measurement windows at or above it since.
    pre_escalation_effectiveness = models.FloatField(null=True, blank=True)
    windows_at_or_above = models.PositiveSmallIntegerField(default=0)

    source = models.CharField(max_length=100, blank=True, default="agent")
    derivation_count = models.PositiveIntegerField(default=1)
    abstract = models.CharField(max_length=40, blank=True, default="")
    derived_from = models.JSONField(default=list, blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    exchange_metadata = models.JSONField(default=dict, blank=True)
    provisional_until = models.DateTimeField(null=True, blank=True)
    content_hash = models.CharField(max_length=64, db_index=True)
    # Concatenated indexed text (statement, rationale, tags, domain, entities,
    # contraindications) that the full-text indexes are built on.
    search_text = models.TextField(blank=True, default="")
    embedding = EmbeddingField(dimensions=EMBEDDING_DIM, null=True, blank=True)
    embedding_model = models.CharField(max_length=64, blank=True, default="")
    # Unknown fields from imports, preserved for a lossless round trip.
    extra = models.JSONField(default=dict, blank=True)
    # The newer version of this rule that replaced it (session learning); it is not injected.
    superseded_by = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="supersedes"
    )

    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    retired_at = models.DateTimeField(null=True, blank=True)

    objects = EngramQuerySet.as_manager()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["owner", "engram_id"], name="uniq_engram_id"),
            # One live engram per statement and scope: two concurrent learns of one statement
            # make one engram and a recurrence (the write path retries on this conflict).
            models.UniqueConstraint(
                fields=["owner", "scope", "content_hash"],
                condition=~Q(status="retired"),
                name="uniq_live_engram_hash",
            ),
        ]
        indexes: ClassVar = [
            models.Index(fields=["owner", "status"], name="engram_owner_status"),
            models.Index(fields=["owner", "scope"], name="engram_owner_scope"),
            models.Index(fields=["owner", "type"], name="engram_owner_type"),
            models.Index(fields=["owner", "polarity"], name="engram_owner_polarity"),
            models.Index(fields=["owner", "domain"], name="engram_owner_domain"),
            models.Index(fields=["owner", "band"], name="engram_owner_band"),
            models.Index(fields=["owner", "-updated_at", "-id"], name="engram_owner_updated"),
            models.Index(fields=["owner", "scope", "content_hash"], name="engram_owner_hash"),
            # The hooks look for reminder-level engrams on every tool call; they are few.
            models.Index(
                fields=["owner", "scope"],
                condition=models.Q(enforcement="reminder"),
                name="engram_reminders",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.engram_id}: {self.statement[:60]}"

    @property
    def feedback_net(self) -> int:
        return int(self.feedback_positive) - int(self.feedback_negative)

    @property
    def outcome_total(self) -> int:
        return self.followed + self.contradicted + self.ignored + self.irrelevant

    # --- state transitions: each returns early (None) when already there ---------------------

    def retire(self, *, now: datetime) -> str | None:
        """Retire (kept for history, never injected again); the status it left, or None."""
        if self.status == Engram.Status.RETIRED:
            return None
        previous = self.status
        self.status = Engram.Status.RETIRED
        self.retired_at = now
        self.updated_at = now
        self.save(update_fields=["status", "retired_at", "updated_at"])
        return previous

    def activate(self, *, now: datetime) -> str | None:
        """Make a candidate, dormant or retired engram active; the status it left, or None."""
        if self.status == Engram.Status.ACTIVE:
            return None
        previous = self.status
        self.status = Engram.Status.ACTIVE
        self.retired_at = None
        self.updated_at = now
        self.save(update_fields=["status", "retired_at", "updated_at"])
        return previous

    def consolidate(self, *, storage_strength: float, now: datetime) -> float | None:
        """Mark a reconsolidation survivor with its new SS; the SS it had, or None if unchanged."""
        if self.consolidated and self.storage_strength == storage_strength:
            return None
        before = self.storage_strength
        self.storage_strength = storage_strength
        self.consolidated = True
        self.updated_at = now
        self.save(update_fields=["storage_strength", "consolidated", "updated_at"])
        return before


class Association(models.Model):
    """A weighted directed link between two engrams of one owner."""

    class Type(models.TextChoices):
        SEMANTIC = "semantic"
        TEMPORAL = "temporal"
        CAUSAL = "causal"
        CO_ACCESSED = "co_accessed"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    source = models.ForeignKey(Engram, on_delete=models.CASCADE, related_name="outgoing")
    target = models.ForeignKey(Engram, on_delete=models.CASCADE, related_name="incoming")
    type = models.CharField(max_length=12, choices=Type.choices)
    strength = models.FloatField()
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["source", "target", "type"], name="uniq_association"),
            models.CheckConstraint(
                condition=Q(strength__gte=0) & Q(strength__lte=0.95),
                name="association_strength_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} -{self.type}-> {self.target_id} ({self.strength:.2f})"


class ActivityDay(models.Model):
    """A day on which a scope saw a session or a write: the ticks of the decay clock."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    scope = models.CharField(max_length=200)
    day = models.DateField()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["owner", "scope", "day"], name="uniq_activity_day")
        ]

    def __str__(self) -> str:
        return f"{self.scope} {self.day}"
