"""Engram's domain model: engrams, their links, sessions, outcomes, events and API tokens.

Every row belongs to an owner; QuerySets start from `visible_to(owner)` or `for_owner(owner)`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import date, datetime
from typing import Any, ClassVar

from django.conf import settings
from django.db import connections, models, transaction
from django.db.models import F, Q
from django.utils import timezone

from memory.fields import EmbeddingField

EMBEDDING_DIM = 384


# --- API tokens ---------------------------------------------------------------------------

TOKEN_PREFIX = "eng_"
TOKEN_LOOKUP_CHARS = 12


def _token_digest(raw: str) -> str:
    # Tokens carry 256 bits of randomness, so a fast hash is enough; no salt is needed.
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True)

    def for_owner(self, owner: Any) -> ApiTokenQuerySet:
        return self.filter(owner=owner)


class ApiToken(models.Model):
    """A bearer token for agents; only its SHA-256 is stored."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    name = models.CharField(max_length=100)
    # First characters of the token, stored in clear to find the row; never enough to use it.
    lookup = models.CharField(max_length=TOKEN_LOOKUP_CHARS, unique=True)
    digest = models.CharField(max_length=64)
    # Engram scopes this token may read and write: "*" for all, or e.g. "global", "project:api".
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Requests the per-minute limit refused: shown on the tokens page, never silent.
    refused = models.PositiveIntegerField(default=0)
    last_refused_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering: ClassVar = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.lookup}…)"

    @classmethod
    def issue(
        cls, *, owner: Any, name: str, scopes: list[str] | None = None
    ) -> tuple[ApiToken, str]:
        """Create a token and return it with its clear text, which is never stored."""
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = cls.objects.create(
            owner=owner,
            name=name,
            lookup=raw[:TOKEN_LOOKUP_CHARS],
            digest=_token_digest(raw),
            scopes=list(scopes) if scopes else ["*"],
        )
        return token, raw

    @classmethod
    def authenticate(cls, raw: str) -> ApiToken | None:
        """Return the live token matching `raw`, comparing digests in constant time."""
        if not raw or len(raw) < TOKEN_LOOKUP_CHARS or len(raw) > 200:
            return None
        token = cls.objects.select_related("owner").filter(lookup=raw[:TOKEN_LOOKUP_CHARS]).first()
        candidate = token.digest if token else "0" * 64
        matches = hmac.compare_digest(candidate, _token_digest(raw))
        if token is None or not matches or token.revoked_at is not None:
            return None
        if not token.owner.is_active:
            return None
        return token

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def revoke(self) -> bool:
        if self.revoked_at is not None:
            return False
        self.revoked_at = timezone.now()
        self.save(update_fields=["revoked_at"])
        return True

    def touch(self) -> None:
        """Record use, at most once a minute, so the hot path does not write on every call."""
        now = timezone.now()
        if self.last_used_at and (now - self.last_used_at).total_seconds() < 60:
            return
        ApiToken.objects.filter(pk=self.pk).update(last_used_at=now)
        self.last_used_at = now

    def allows_scope(self, scope: str) -> bool:
        return scope_allowed(self.scopes, scope)


def scope_allowed(patterns: list[str], scope: str) -> bool:
    """True when `scope` matches one of the patterns ("*", exact, or a "project:*" prefix)."""
    for pattern in patterns or ["*"]:
        if pattern == "*" or pattern == scope:
            return True
        if pattern.endswith("*") and scope.startswith(pattern[:-1]):
            return True
    return False


# --- Owner settings -----------------------------------------------------------------------


class OwnerSettings(models.Model):
    """Per-owner preferences that change behaviour (review, injection)."""

    owner = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="engram_settings"
    )
    auto_approve = models.BooleanField(default=False)
    auto_defer = models.BooleanField(default=False)
    review_batch_size = models.PositiveSmallIntegerField(null=True, blank=True)
    decay_base = models.FloatField(null=True, blank=True)
    inject_budget_tokens = models.PositiveIntegerField(null=True, blank=True)
    # Session learning: send every captured lesson to review, the user's own words included.
    learning_review_all = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"settings of {self.owner_id}"

    @classmethod
    def for_owner(cls, owner: Any) -> OwnerSettings:
        obj, _ = cls.objects.get_or_create(owner=owner)
        return obj


# --- Id sequences -------------------------------------------------------------------------


class IdSequence(models.Model):
    """Per-owner daily counters behind ENG-/ABS-/EP- ids."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    prefix = models.CharField(max_length=8)
    day = models.DateField()
    value = models.PositiveIntegerField(default=0)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["owner", "prefix", "day"], name="uniq_id_sequence")
        ]

    def __str__(self) -> str:
        return f"{self.prefix}-{self.day}: {self.value}"

    @classmethod
    def next_id(cls, *, owner: Any, prefix: str, when: datetime | None = None) -> str:
        """Allocate the next `PREFIX-YYYY-MMDD-NNN` id; safe under concurrent writers."""
        return cls.next_ids(owner=owner, prefix=prefix, when=when, count=1)[0]

    @classmethod
    def next_ids(
        cls, *, owner: Any, prefix: str, when: datetime | None = None, count: int
    ) -> list[str]:
        """Reserve `count` consecutive ids of one day in one step (a batch of writes)."""
        if count < 1:
            return []
        day: date = (when or timezone.now()).date()
        with transaction.atomic():
            seq, _ = cls.objects.get_or_create(owner=owner, prefix=prefix, day=day)
            # The conditional UPDATE takes the row lock, so two writers never get one number.
            cls.objects.filter(pk=seq.pk).update(value=F("value") + count)
            last = cls.objects.values_list("value", flat=True).get(pk=seq.pk)
        return [
            f"{prefix}-{day:%Y}-{day:%m%d}-{value:03d}"
            for value in range(last - count + 1, last + 1)
        ]


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
        ]

    def __str__(self) -> str:
        return f"{self.kind} signal {self.pk} ({self.state})"


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
