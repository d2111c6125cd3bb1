"""API tokens, an owner's settings and the id sequences every owner's rows draw from."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import date, datetime
from typing import Any, ClassVar

from django.conf import settings
from django.db import models, transaction
from django.db.models import F
from django.utils import timezone

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
