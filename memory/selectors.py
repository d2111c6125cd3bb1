"""Dashboard reads: keyset pages, quadrants, overview figures, strength history.

Every function is owner-scoped and runs a fixed number of queries whatever the store size (the
view tests pin them). Lists are keyset-paginated on (sort value, pk), so page 400 costs what
page 1 does; cursors are opaque url-safe strings and a tampered one just restarts the list.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import BooleanField, Count, F, Max, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.expressions import RawSQL
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce
from django.utils import timezone

from memory import charts
from memory.maths import activation, coaccess, effectiveness
from memory.maths.effectiveness import Classification, EngramCounts
from memory.models import (
    ActivityDay,
    AgentSession,
    Association,
    Engram,
    Episode,
    Event,
    Injection,
    LifecycleEvent,
    Observation,
    Outcome,
    ReviewItem,
)
from memory.strength import decay_base_for

PAGE_SIZE = 25
SEARCH_LIMIT = 100  # recall's maximum: search results are ranked, not keyset-paginated
SERIES_PAST_POINTS = 80
SERIES_FUTURE_DAYS = 90
SERIES_FUTURE_POINTS = 30
# Engrams that can be surfaced take part in the quadrant median; candidates (never injected) and
# retired engrams would only drag it towards zero.
CLASSIFIED_STATUSES = (Engram.Status.ACTIVE, Engram.Status.DORMANT)
QUADRANTS: tuple[tuple[str, str, str], ...] = (
    ("working", "Working", "Often surfaced and followed. Keep them current."),
    ("leech", "Leech", "Often surfaced but rarely followed: rewrite or escalate."),
    ("hidden_gem", "Hidden Gem", "Followed when surfaced, but rarely surfaced: broaden them."),
    ("noise", "Noise", "Rarely surfaced and rarely followed: candidates to retire."),
    ("insufficient", "Insufficient data", "Fewer than 5 outcomes so far."),
)
QUADRANT_NAMES = {key: name for key, name, _ in QUADRANTS}
BANDS = ("active", "fading", "dormant", "retire")


# --- cursors and pages ----------------------------------------------------------------------


def cursor_encode(values: Sequence[Any]) -> str:
    raw = json.dumps([v.isoformat() if isinstance(v, datetime) else v for v in values])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def cursor_decode(raw: str | None, size: int) -> list[Any] | None:
    """The cursor's values, or None when it is missing or malformed (the list restarts)."""
    if not raw or len(raw) > 400:
        return None
    try:
        values = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(values, list) or len(values) != size:
        return None
    return values


def _as_datetime(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if timezone.is_aware(parsed) else None


@dataclass
class Page[T]:
    rows: list[T]
    next_cursor: str | None = None
    total: int | None = None
    page: int = 1  # ranked (search) results use numbered pages instead of a cursor
    has_next_page: bool = False


def cursor_mark(cursor: str | None, kind: str) -> tuple[Any, int] | None:
    """(sort value, pk) of a keyset cursor, or None when missing or malformed."""
    values = cursor_decode(cursor, 2)
    if values is None:
        return None
    value, pk = values
    if kind == "datetime":
        value = _as_datetime(value)
    elif not isinstance(value, int if kind == "int" else str):
        value = None
    if value is None or not isinstance(pk, int) or isinstance(pk, bool) or not 0 < pk < 2**63:
        return None
    return value, pk


def keyset(
    qs: QuerySet[Any],
    *,
    field_name: str,
    descending: bool,
    cursor: str | None,
    kind: str,
    limit: int = PAGE_SIZE,
) -> tuple[list[Any], str | None]:
    """One page of `qs` ordered by (field, pk) and the cursor of the next page."""
    mark = cursor_mark(cursor, kind)
    if mark is not None:
        value, pk = mark
        op = "lt" if descending else "gt"
        qs = qs.filter(
            Q(**{f"{field_name}__{op}": value}) | Q(**{field_name: value, f"pk__{op}": pk})
        )
    prefix = "-" if descending else ""
    rows = list(qs.order_by(f"{prefix}{field_name}", f"{prefix}pk")[: limit + 1])
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_cursor = cursor_encode([getattr(last, field_name), last.pk])
    return rows, next_cursor


# --- quadrants ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Classified:
    """The owner's quadrant classification (effectiveness.classify over CLASSIFIED_STATUSES)."""

    by_pk: dict[int, Classification]
    engram_ids: dict[int, str]
    surfaced: dict[int, int]
    median: float | None

    # Derived views are computed once per classification (which is itself cached per store).

    @cached_property
    def ranked(self) -> dict[str, list[int]]:
        """Pks per quadrant, most surfaced first (ties by pk)."""
        groups: dict[str, list[int]] = {key: [] for key, _, _ in QUADRANTS}
        for pk, c in self.by_pk.items():
            groups[c.quadrant].append(pk)
        for pks in groups.values():
            pks.sort(key=lambda pk: (-self.surfaced[pk], pk))
        return groups

    def pks_in(self, quadrant: str) -> list[int]:
        return self.ranked.get(quadrant, [])

    def counts(self) -> dict[str, int]:
        return {key: len(pks) for key, pks in self.ranked.items()}

    @cached_property
    def flagged(self) -> int:
        return sum(1 for c in self.by_pk.values() if c.flagged)

    @cached_property
    def plot(self) -> charts.Scatter:
        """The surfaced-against-effectiveness scatter of the classified engrams."""
        points = [
            charts.ScatterPoint(
                key=self.engram_ids[pk], x=self.surfaced[pk], y=c.effectiveness, quadrant=c.quadrant
            )
            for pk, c in self.by_pk.items()
            if c.quadrant != "insufficient" and c.effectiveness is not None
        ]
        return charts.scatter(points, split_x=self.median)

    @property
    def plotted(self) -> int:
        return len(self.by_pk) - len(self.ranked["insufficient"])


def _fingerprint(owner: Any) -> tuple[Any, ...]:
    """A cheap summary of every input of the classification (one aggregate query).

    Counts and pk-weighted counter sums change with any membership or counter change, and the
    latest created/updated times tell apart stores that reuse primary keys (SQLite after a
    rollback); two opposite changes cancelling in every sum at once is not a practical case.
    """
    return tuple(
        Engram.objects.for_owner(owner)
        .filter(status__in=CLASSIFIED_STATUSES)
        .aggregate(
            n=Count("pk"),
            pks=Sum("pk"),
            created=Max("created_at"),
            updated=Max("updated_at"),
            surfaced=Sum(F("pk") * F("surfaced")),
            followed=Sum(F("pk") * F("followed")),
            others=Sum(F("pk") * (F("contradicted") + 3 * F("ignored") + 7 * F("irrelevant"))),
        )
        .values()
    )


# owner pk -> (fingerprint, classification); a few owners per process at most.
_classified_cache: dict[int, tuple[tuple[Any, ...], Classified]] = {}
_CACHE_OWNERS = 32


def classified(owner: Any) -> Classified:
    """Every surfaceable engram of the owner in its quadrant.

    Classifying 10,000 engrams costs ~50 ms of Python, so the result is kept per process and
    reused while the store's fingerprint is unchanged: 1 query when nothing changed, 2 when it
    did.
    """
    fingerprint = _fingerprint(owner)
    cached = _classified_cache.get(owner.pk)
    if cached is not None and cached[0] == fingerprint:
        return cached[1]
    rows = list(
        Engram.objects.for_owner(owner)
        .filter(status__in=CLASSIFIED_STATUSES)
        .values_list(
            "pk", "engram_id", "surfaced", "followed", "contradicted", "ignored", "irrelevant"
        )
    )
    counts = [EngramCounts(str(r[0]), r[2], r[3], r[4], r[5], r[6]) for r in rows]
    result = effectiveness.classify(counts)
    value = Classified(
        by_pk={int(key): value for key, value in result.items()},
        engram_ids={r[0]: r[1] for r in rows},
        surfaced={r[0]: r[2] for r in rows},
        median=effectiveness.median([c.surfaced for c in counts]) if counts else None,
    )
    if len(_classified_cache) >= _CACHE_OWNERS:
        _classified_cache.pop(next(iter(_classified_cache)))
    _classified_cache[owner.pk] = (fingerprint, value)
    return value


# --- engram list ----------------------------------------------------------------------------

# sort key -> (field, descending, cursor value kind, label)
SORTS: dict[str, tuple[str, bool, str, str]] = {
    "updated": ("updated_at", True, "datetime", "Recently changed"),
    "created": ("created_at", True, "datetime", "Newest"),
    "oldest": ("created_at", False, "datetime", "Oldest"),
    "surfaced": ("surfaced", True, "int", "Most surfaced"),
    "followed": ("followed", True, "int", "Most followed"),
    "id": ("engram_id", False, "str", "Id"),
}


# Sources of what a person said (DESIGN: tier A/B capture, the dashboard, `source: user`);
# everything else was learned by Engram or an agent.
USER_SOURCES = frozenset({"user", "person"})
WHO_CHOICES = (("you", "You said it"), ("learned", "Learned by Engram"))


@dataclass(frozen=True)
class EngramQuery:
    q: str = ""
    who: str = ""  # you | learned (USER_SOURCES)
    tier: str = ""  # A | B | C: how a captured lesson was said
    status: str = ""
    type: str = ""
    scope: str = ""
    band: str = ""
    quadrant: str = ""
    tag: str = ""
    sort: str = "updated"

    @property
    def filtered(self) -> bool:
        return any(
            (
                self.q,
                self.who,
                self.tier,
                self.status,
                self.type,
                self.scope,
                self.band,
                self.quadrant,
                self.tag,
            )
        )


@dataclass
class EngramRow:
    engram: Engram
    rs_eff: float
    score: float | None = None

    @property
    def band(self) -> str:
        return activation.band(self.rs_eff)


def tag_filter(qs: QuerySet[Engram], tag: str) -> QuerySet[Engram]:
    """Engrams carrying exactly this tag, on both databases."""
    if connection.vendor == "postgresql":
        return qs.filter(tags__contains=[tag])
    has_tag = RawSQL(
        'EXISTS (SELECT 1 FROM json_each("memory_engram"."tags") WHERE value = %s)',
        (tag,),
        output_field=BooleanField(),
    )
    return qs.annotate(has_tag=has_tag).filter(has_tag=True)


def engrams_filtered(
    owner: Any, query: EngramQuery, *, base: QuerySet[Engram] | None = None
) -> QuerySet[Engram]:
    """The engrams a list shows for these filters; each filter means one thing everywhere.

    No status: every status but retired (retired ones only with status=retired). `base`
    narrows further (a token's visible scopes). The text query `q` every word must appear in the engram's indexed text (statement, rationale, tags,
    domain, entities, contraindications), separators read as spaces, case ignored.
    """
    qs = base if base is not None else Engram.objects.for_owner(owner)
    qs = qs.defer("embedding", "search_text", "extra").annotate(tier=KT("extra__learning__tier"))
    if query.who == "you":
        qs = qs.filter(source__in=USER_SOURCES)
    elif query.who == "learned":
        qs = qs.exclude(source__in=USER_SOURCES)
    if query.tier:
        qs = qs.filter(extra__learning__tier=query.tier)
    if query.status:
        qs = qs.filter(status=query.status)
    else:
        qs = qs.exclude(status=Engram.Status.RETIRED)
    if query.type:
        qs = qs.filter(type=query.type)
    if query.scope:
        qs = qs.filter(scope=query.scope)
    if query.band:
        qs = qs.filter(band=query.band)
    if query.tag:
        qs = tag_filter(qs, query.tag)
    for word in query_words(query.q):
        qs = qs.filter(search_text__icontains=word)
    return qs


_SEPARATORS = re.compile(r"[._:/\-]+")
MAX_QUERY_WORDS = 8
RELEVANCE = "relevance"  # the sort that ranks a text query's matches by recall


def query_words(q: str) -> list[str]:
    """The words of a text filter, split as the indexed text is (search_text_of)."""
    return _SEPARATORS.sub(" ", q).split()[:MAX_QUERY_WORDS]


def keyset_within(
    qs: QuerySet[Engram],
    allowed: set[int],
    *,
    field_name: str,
    descending: bool,
    cursor: str | None,
    kind: str,
    limit: int = PAGE_SIZE,
) -> tuple[list[Engram], str | None, int]:
    """A keyset page of `qs` restricted to the pks in `allowed` (a quadrant), and the total.

    A quadrant is thousands of pks known in Python; matching them here instead of in a SQL
    `IN (...)` list keeps both queries small: one (sort value, pk) read, one page read.
    """
    pairs = [(v, pk) for v, pk in qs.values_list(field_name, "pk").order_by() if pk in allowed]
    pairs.sort(reverse=descending)
    total = len(pairs)
    mark = cursor_mark(cursor, kind)
    if mark is not None:
        pairs = [p for p in pairs if (p < mark if descending else p > mark)]
    chosen = pairs[: limit + 1]
    next_cursor = cursor_encode(list(chosen[limit - 1])) if len(chosen) > limit else None
    by_pk = qs.in_bulk([pk for _, pk in chosen[:limit]])
    return [by_pk[pk] for _, pk in chosen[:limit] if pk in by_pk], next_cursor, total


def engram_scopes(owner: Any, limit: int = 200) -> list[str]:
    """Distinct scopes of the owner's engrams, for the filter menu."""
    return list(
        Engram.objects.for_owner(owner)
        .order_by("scope")
        .values_list("scope", flat=True)
        .distinct()[:limit]
    )


# --- engram detail --------------------------------------------------------------------------


@dataclass
class AssociationRow:
    other: Engram
    type: str
    strength: float
    direction: str  # "out" or "in"


def associations_of(engram: Engram, *, now: datetime, limit: int = 20) -> list[AssociationRow]:
    """Links from and to an engram, co-access strengths decayed to `now`; strongest first."""
    rows: list[AssociationRow] = []
    outgoing = Association.objects.filter(source=engram).select_related("target")
    incoming = Association.objects.filter(target=engram).select_related("source")
    for assoc in outgoing.order_by("-strength")[:limit]:
        rows.append(AssociationRow(assoc.target, assoc.type, _strength(assoc, now), "out"))
    seen = {(r.other.pk, r.type) for r in rows}
    for assoc in incoming.order_by("-strength")[:limit]:
        if (assoc.source_id, assoc.type) not in seen:
            rows.append(AssociationRow(assoc.source, assoc.type, _strength(assoc, now), "in"))
    rows.sort(key=lambda r: -r.strength)
    return rows[:limit]


def _strength(assoc: Association, now: datetime) -> float:
    if assoc.type != Association.Type.CO_ACCESSED:
        return assoc.strength
    days = max(0.0, (now - assoc.updated_at).total_seconds() / 86400)
    return coaccess.decayed_coaccess_strength(assoc.strength, days)


def injections_of(engram: Engram, limit: int = 15) -> list[Injection]:
    """The engram's latest surfacings with their session and outcome; one query."""
    return list(
        Injection.objects.filter(engram=engram)
        .select_related("session", "outcome")
        .order_by("-created_at", "-pk")[:limit]
    )


def events_page(
    owner: Any, *, engram: Engram | None = None, cursor: str | None = None, event: str = ""
) -> Page[LifecycleEvent]:
    """Lifecycle events newest first, for one engram or the whole store."""
    qs = LifecycleEvent.objects.filter(owner=owner)
    if engram is not None:
        qs = qs.filter(engram=engram)
    if event:
        qs = qs.filter(event=event)
    rows, next_cursor = keyset(
        qs, field_name="created_at", descending=True, cursor=cursor, kind="datetime"
    )
    return Page(rows=rows, next_cursor=next_cursor)


def _local(when: datetime) -> datetime:
    return timezone.localtime(when) if timezone.is_aware(when) else when


def strength_series(
    engram: Engram, *, now: datetime
) -> tuple[list[tuple[datetime, float]], list[tuple[datetime, float]]]:
    """RS_eff over time: the past from the stored anchors, the future from the formula.

    Anchors are the learning time (at the default RS, unless nothing moved it since), every
    event that recorded a new RS (feedback), and the current stored anchor. Between anchors the
    value decays over the scope's active days; the future assumes the scope is active every day
    (the fastest decay) and no feedback. Storage strength is taken as it is today. 2 queries.
    """
    rs_events = [
        (e.created_at, float(e.data["rs"]))
        for e in LifecycleEvent.objects.filter(engram=engram, data__has_key="rs")
        .only("created_at", "data")
        .order_by("created_at")
        if isinstance(e.data.get("rs"), int | float)
    ]
    start = engram.learned_at
    initial = float(Engram._meta.get_field("retrieval_strength").get_default())
    anchors: list[tuple[datetime, float]] = []
    if rs_events or engram.rs_anchor_at > start + timedelta(seconds=1):
        anchors.append((start, initial))
    anchors.extend(rs_events)
    if not anchors or engram.rs_anchor_at > anchors[-1][0]:
        anchors.append((engram.rs_anchor_at, engram.retrieval_strength))
    anchors = [a for a in anchors if a[0] <= now] or [(start, engram.retrieval_strength)]
    days = list(
        ActivityDay.objects.filter(
            owner_id=engram.owner_id,
            scope=engram.scope,
            day__gt=_local(anchors[0][0]).date(),
        ).values_list("day", flat=True)
    )
    return activation.rs_series(
        [(_local(when), rs) for when, rs in anchors],
        days,
        start=_local(start),
        now=_local(now),
        emotional_weight=engram.emotional_weight,
        storage_strength=engram.storage_strength,
        floor=settings.ENGRAM_RS_FLOOR,
        base=decay_base_for(engram.owner_id),
        past_points=SERIES_PAST_POINTS,
        future_points=SERIES_FUTURE_POINTS,
        future_days=SERIES_FUTURE_DAYS,
    )


# --- overview -------------------------------------------------------------------------------


def recent_sessions(owner: Any, *, since: datetime | None = None, limit: int = 10) -> list[Any]:
    qs = _sessions(owner)
    if since is not None:
        qs = qs.filter(started_at__gte=since)
    return list(qs.order_by("-started_at", "-pk")[:limit])


def _count(model: Any, group: str, **where: Any) -> Any:
    """COUNT(*) of `model` rows per outer session, as a correlated subquery (0 when none)."""
    inner = (
        model.objects.filter(**{group: OuterRef("pk")}, **where)
        .order_by()
        .values(group)
        .annotate(n=Count("*"))
        .values("n")
    )
    return Coalesce(Subquery(inner), 0)


def _sessions(owner: Any) -> QuerySet[AgentSession]:
    """Sessions with their injection, outcome and observation counts as subqueries (no fan-out)."""
    return AgentSession.objects.filter(owner=owner).annotate(
        injection_count=_count(Injection, "session"),
        followed_count=_count(Outcome, "injection__session", result=Outcome.Result.FOLLOWED),
        outcome_count=_count(Outcome, "injection__session"),
        observation_count=_count(Observation, "session"),
    )


def session_page(owner: Any, *, cursor: str | None = None) -> Page[AgentSession]:
    rows, next_cursor = keyset(
        _sessions(owner), field_name="started_at", descending=True, cursor=cursor, kind="datetime"
    )
    return Page(rows=rows, next_cursor=next_cursor)


def session_injections(session: AgentSession, limit: int = 200) -> list[Injection]:
    """A session's injections in order, each with its engram and outcome; one query."""
    return list(
        Injection.objects.filter(session=session)
        .select_related("engram", "outcome")
        .defer("engram__embedding", "engram__search_text", "engram__extra")
        .order_by("created_at", "rank", "pk")[:limit]
    )


@dataclass(frozen=True)
class EpisodeQuery:
    since: datetime | None = None
    until: datetime | None = None
    agent: str = ""
    channel: str = ""
    q: str = ""


def episode_page(qs: QuerySet[Episode], *, cursor: str | None = None) -> Page[Episode]:
    rows, next_cursor = keyset(
        qs.select_related("session"),
        field_name="timestamp",
        descending=True,
        cursor=cursor,
        kind="datetime",
    )
    return Page(rows=rows, next_cursor=next_cursor)


def episode_facets(owner: Any, limit: int = 50) -> tuple[list[str], list[str]]:
    """Known agents and channels of the owner's episodes, for the filter suggestions."""
    base = Episode.objects.filter(owner=owner).order_by()
    agents = list(base.exclude(agent="").values_list("agent", flat=True).distinct()[:limit])
    channels = list(base.exclude(channel="").values_list("channel", flat=True).distinct()[:limit])
    return sorted(agents), sorted(channels)


def store_status(*, owner: Any, now: datetime | None = None) -> dict[str, Any]:
    """Counts by status and band, open review items, sessions today."""
    now = now or timezone.now()
    engrams = Engram.objects.for_owner(owner)
    by_status = dict(engrams.values("status").annotate(n=Count("id")).values_list("status", "n"))
    by_band = dict(
        engrams.exclude(status=Engram.Status.RETIRED)
        .values("band")
        .annotate(n=Count("id"))
        .values_list("band", "n")
    )
    open_review = ReviewItem.objects.filter(
        owner=owner, state__in=[ReviewItem.State.PENDING, ReviewItem.State.DEFERRED]
    ).count()
    start_of_day = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    return {
        "engrams": sum(by_status.values()),
        "by_status": {s: by_status.get(s, 0) for s in Engram.Status.values},
        "by_band": {b: by_band.get(b, 0) for b in activation.BANDS},
        "review_open": open_review,
        "sessions_today": AgentSession.objects.filter(
            owner=owner, started_at__gte=start_of_day
        ).count(),
    }


@dataclass
class Overview:
    status: dict[str, Any]
    quadrants: dict[str, int]
    flagged: int
    events: list[LifecycleEvent]
    sessions_today: list[AgentSession]
    extras: dict[str, Any] = field(default_factory=dict)


def overview(owner: Any, *, now: datetime | None = None) -> Overview:
    """Counts by status and band, quadrant summary, recent events, today's sessions."""
    now = now or timezone.now()
    status = store_status(owner=owner, now=now)
    groups = classified(owner)
    start_of_day = timezone.localtime(now).replace(hour=0, minute=0, second=0, microsecond=0)
    return Overview(
        status=status,
        quadrants=groups.counts(),
        flagged=groups.flagged,
        events=list(LifecycleEvent.objects.filter(owner=owner).order_by("-created_at", "-pk")[:10]),
        sessions_today=recent_sessions(owner, since=start_of_day),
    )


def worker_check(timeout: float = 0.5) -> tuple[bool, str]:
    """Whether a Celery worker answers a ping within `timeout` seconds."""
    try:
        from celery import current_app

        replies = current_app.control.ping(timeout=timeout, limit=1)
    except Exception as exc:  # a health panel reports failures, it never raises them
        return False, f"{type(exc).__name__}: {exc}"
    if not replies:
        return False, "no worker answered; start one with `make run`"
    names = ", ".join(sorted(name for reply in replies for name in reply))
    return True, f"{len(replies)} answering ({names})"


# --- effectiveness over time ----------------------------------------------------------------

WINDOW_DAYS = 7
ESCALATION_EVENTS = (Event.ENGRAM_ESCALATED, Event.ENGRAM_DEESCALATED)


def effectiveness_windows(
    engram: Engram, *, since: datetime, now: datetime
) -> list[tuple[datetime, float]]:
    """(window end, effectiveness) for each complete 7-day window since `since` that has an
    outcome, oldest first (a window with none measured nothing). 1 query."""
    span = WINDOW_DAYS * 86400
    complete = int((now - since).total_seconds() // span)
    windows: dict[int, Counter[str]] = {}
    rows = Outcome.objects.filter(engram=engram, created_at__gte=since, created_at__lt=now)
    for result, created in rows.values_list("result", "created_at"):
        index = int((created - since).total_seconds() // span)
        if index < complete:
            windows.setdefault(index, Counter())[result] += 1
    series = []
    for index in sorted(windows):
        c = windows[index]
        value = effectiveness.effectiveness(
            c["followed"], c["contradicted"], c["ignored"], c["irrelevant"]
        )
        if value is not None:
            series.append((since + timedelta(days=WINDOW_DAYS * (index + 1)), value))
    return series


def escalation_steps(engram: Engram) -> list[LifecycleEvent]:
    """The engram's escalations and de-escalations, oldest first."""
    return list(
        LifecycleEvent.objects.filter(engram=engram, event__in=ESCALATION_EVENTS).order_by(
            "created_at", "pk"
        )
    )
