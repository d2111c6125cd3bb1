"""What the Claude Code hooks deliver, and when (DESIGN v3 "Delivery (hooks)", issue #25).

- `session_brief` (SessionStart): the standing rules of the session's project and global —
  active engrams the user stated (source user/person) or that recurred (derivation count ≥ 2),
  project scope first, strongest first, within 800 tokens; a closing line counts the rest.
- `prompt_deliver` (UserPromptSubmit): an engram only with evidence from this prompt that one
  shared common word cannot give (`memory.maths.delivery.evidence`), and only if this session
  has not had it yet (since its last compaction) unless it is escalated. Most prompts: nothing.
- `tool_deliver` (PreToolUse): an error → fix lesson or a reminder-level engram whose trigger
  matches the tool input (the reminders' matcher), once per session.
Every delivery is an Injection row with its evidence, shown on the session page.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Max, Q

from memory.maths import activation, attribution, ranking, textnorm
from memory.maths import delivery as maths
from memory.models import AgentSession, Engram, Injection, LearningSignal, scope_allowed
from memory.services.injections import access_record
from memory.strength import effective_strengths
from memory.validation import GLOBAL_SCOPE

USER_SOURCES = ("user", "person")
RECURRED = 2  # derivation count of a candidate promoted by recurrence
MAX_BRIEF_ROWS = 40  # per scope; the brief shows ~30 lines
# What the brief reads per rule (effective strength included): model instances cost ~0.5 ms
# each with every JSON field decoded.
BRIEF_FIELDS = (
    "pk", "owner_id", "engram_id", "scope", "statement", "enforcement", "source",
    "derivation_count", "retrieval_strength", "rs_anchor_at", "storage_strength",
    "emotional_weight", "valid_from", "valid_until", "updated_at",
)  # fmt: skip
MAX_TOOL_LESSONS = 300
MAX_TOOL_HITS = 3
# Per-process caches of what the hot paths match against, per owner. A version (count and
# latest change of the owner's active engrams) is checked on every call, so a new rule is seen
# at once; TTL_S bounds how long a change the version misses can go unseen.
TTL_S = 60.0
TOOL_TTL_S = 10.0
NOT_AGAIN = (Injection.Bucket.RECALL,)  # everything else counts as delivered


def cache_clear() -> None:
    _terms_cache.clear()
    _tool_cache.clear()


# --- shared ------------------------------------------------------------------------------------


def _visible(scope: str, token_scopes: Sequence[str] | None) -> set[str]:
    wanted = {scope, GLOBAL_SCOPE}
    if not token_scopes or "*" in token_scopes:
        return wanted
    return {s for s in wanted if scope_allowed(list(token_scopes), s)}


def _valid(valid_from: datetime | None, valid_until: datetime | None, now: datetime) -> bool:
    return (valid_from is None or valid_from <= now) and (valid_until is None or valid_until > now)


def _record(
    *,
    owner: Any,
    session: AgentSession | None,
    picks: Sequence[tuple[int, str, int, float, int, dict[str, Any]]],
    query: str,
    now: datetime,
    strengths: dict[int, float] | None = None,
) -> None:
    """Injection rows (pk, bucket, rank, score, tokens, evidence) with the access rule."""
    if session is None or not picks:
        return
    if strengths is None:
        rows = Engram.objects.filter(pk__in=[p[0] for p in picks]).defer(
            "embedding", "search_text", "extra"
        )
        strengths = effective_strengths(list(rows), now=now)
    kept = [p for p in picks if p[0] in strengths]
    access_record(
        owner=owner,
        session=session,
        picks=[p[:5] for p in kept],
        rs_eff=strengths,
        query=query,
        now=now,
        injected=True,
        evidence=[p[5] for p in kept],
    )


def _delivered(session: AgentSession | None) -> set[int]:
    """Engrams this session already had (since its last compaction), escalated ones left out."""
    if session is None:
        return set()
    rows = Injection.objects.filter(session=session).exclude(bucket__in=NOT_AGAIN)
    if session.compacted_at is not None:
        rows = rows.filter(created_at__gte=session.compacted_at)
    return set(
        rows.filter(engram__enforcement=Engram.Enforcement.ADVISORY).values_list(
            "engram_id", flat=True
        )
    )


# --- SessionStart brief ------------------------------------------------------------------------


@dataclass(frozen=True)
class Delivery:
    """What one hook call delivers: the rendered text and the engram ids in it."""

    rendered: str = ""
    ids: tuple[str, ...] = ()
    evidence: dict[str, dict[str, Any]] = field(default_factory=dict)


def _fix_lessons() -> Q:
    return Q(drafts__signal__kind=LearningSignal.Kind.ERROR_FIX)


def session_brief(
    *,
    owner: Any,
    scope: str,
    session: AgentSession | None,
    now: datetime,
    token_scopes: Sequence[str] | None = None,
    source: str = "",
) -> Delivery:
    """The standing rules of `scope` and global, one line each, within 800 tokens (see module)."""
    scopes = _visible(scope, token_scopes)
    if not scopes:
        return Delivery()
    suppressed = set(session.suppressed_ids or []) if session is not None else set()
    stated = (
        Engram.objects.filter(
            owner=owner,
            status=Engram.Status.ACTIVE,
            scope__in=scopes,
            superseded_by__isnull=True,
        )
        .filter(Q(source__in=USER_SOURCES) | Q(derivation_count__gte=RECURRED))
        .exclude(_fix_lessons())
        .exclude(pk__in=suppressed)
    )
    # The brief shows ~30 lines; the strongest MAX_BRIEF_ROWS per scope (by stored strength,
    # re-ranked by effective strength below) are all it can need, the rest are only counted.
    rows: list[Engram] = []
    for one in sorted(scopes, key=lambda s: s == GLOBAL_SCOPE):
        rows += [
            e
            for e in stated.filter(scope=one)
            .only(*BRIEF_FIELDS)
            .order_by("-enforcement", "-retrieval_strength", "-updated_at")[:MAX_BRIEF_ROWS]
            if _valid(e.valid_from, e.valid_until, now)
        ]
    if not rows:
        return Delivery()
    total = stated.count()
    strengths = effective_strengths(rows, now=now)
    rows.sort(
        key=lambda e: (
            e.scope == GLOBAL_SCOPE,  # the project's own rules first
            -ranking.ESCALATION_ORDER.get(e.enforcement, 0),
            -round(strengths[e.pk], 3),
            -e.derivation_count,
            -e.updated_at.timestamp(),
            e.engram_id,
        )
    )
    made = maths.brief(
        [maths.BriefItem(e.engram_id, e.statement, e.enforcement) for e in rows],
        scope=scope,
        total=total,
    )
    by_id = {e.engram_id: e for e in rows}
    evidence = {
        eid: {
            "brief": source or "startup",
            "source": by_id[eid].source,
            "derivation_count": by_id[eid].derivation_count,
            "rs_eff": round(strengths[by_id[eid].pk], 3),
        }
        for eid in made.shown
    }
    _record(
        owner=owner,
        session=session,
        picks=[
            (
                by_id[eid].pk,
                Injection.Bucket.BRIEF,
                rank,
                strengths[by_id[eid].pk],
                tokens,
                evidence[eid],
            )
            for rank, (eid, tokens) in enumerate(zip(made.shown, made.tokens, strict=True), start=1)
        ],
        query="",  # no prompt: maintenance reads a followed engram's queries for keywords
        now=now,
        strengths=strengths,
    )
    return Delivery(made.rendered, made.shown, evidence)


# --- UserPromptSubmit --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    pk: int
    engram_id: str
    scope: str
    statement: str
    enforcement: str
    polarity: str | None
    valid_from: datetime | None
    valid_until: datetime | None
    terms: frozenset[str]
    avoid: tuple[frozenset[str], ...] = ()  # its contraindications' terms


@dataclass
class _Terms:
    version: tuple[Any, ...]
    at: float
    entries: list[_Entry | None]  # None: replaced by a later position (an edit, a recurrence)
    postings: dict[str, list[int]]
    df: dict[str, int]
    n: int
    position_of: dict[int, int] = field(default_factory=dict)


_terms_cache: dict[int, _Terms] = {}


def _active(owner_id: int) -> Any:
    return Engram.objects.filter(owner_id=owner_id, status=Engram.Status.ACTIVE)


_TERM_COLUMNS = (
    "pk", "engram_id", "scope", "statement", "enforcement", "polarity",
    "valid_from", "valid_until", "tags", "updated_at", "contraindications",
)  # fmt: skip


def _entries(rows: Any) -> list[tuple[_Entry, datetime]]:
    out = []
    for pk, eid, scope, statement, enforcement, polarity, since, until, tags, at, contra in rows:
        words = maths.terms(statement + " " + " ".join(str(t) for t in tags or []))
        avoid = maths.contraindication_terms(contra)
        entry = _Entry(pk, eid, scope, statement, enforcement, polarity, since, until, words, avoid)
        out.append((entry, at))
    return out


def _add(index: _Terms, entries: Sequence[_Entry]) -> None:
    for entry in entries:
        before = index.position_of.get(entry.pk)
        if before is not None:  # changed since: its old terms no longer count
            old = index.entries[before]
            index.entries[before] = None
            if old is not None:
                index.n -= 1
                for term in old.terms:
                    index.df[term] -= 1
        position = len(index.entries)
        index.entries.append(entry)
        index.position_of[entry.pk] = position
        index.n += 1
        for term in entry.terms:
            index.df[term] = index.df.get(term, 0) + 1
            index.postings.setdefault(term, []).append(position)


def _owner_terms(owner_id: int) -> _Terms:
    """The owner's active engrams with their salient terms, an inverted index and idf counts.

    Version: (active count, the owner's latest change). When only new engrams came since
    the cached version, they are appended (capture adds rules one by one); any other change
    rebuilds the index.
    """
    # Two index-only reads (owner+status, owner+updated_at): reading the rows themselves
    # (vectors inline) cost ~20 ms at 1,000 engrams on SQLite.
    version = (
        _active(owner_id).count(),
        Engram.objects.filter(owner_id=owner_id).aggregate(at=Max("updated_at"))["at"],
    )
    cached = _terms_cache.get(owner_id)
    clock = time.monotonic()
    if cached is not None and clock - cached.at < TTL_S:
        if cached.version == version:
            return cached
        if cached.version[1] is not None:
            rows = _entries(
                _active(owner_id)
                .filter(superseded_by__isnull=True, updated_at__gt=cached.version[1])
                .values_list(*_TERM_COLUMNS)
            )
            new = sum(1 for e, _ in rows if e.pk not in cached.position_of)
            if version[0] == cached.version[0] + new:  # nothing left the active set
                _add(cached, [e for e, _ in rows])
                cached.version = version
                return cached
    made = _Terms(version, clock, [], {}, {}, 0)
    _add(made, [e for e, _ in _entries(
        _active(owner_id).filter(superseded_by__isnull=True).values_list(*_TERM_COLUMNS)
    )])  # fmt: skip
    _terms_cache[owner_id] = made
    return made


def prompt_deliver(
    *,
    owner: Any,
    prompt: str,
    scope: str,
    session: AgentSession | None,
    now: datetime,
    token_scopes: Sequence[str] | None = None,
    floor: float = maths.COVERAGE_FLOOR,
    min_shared: int = maths.MIN_SHARED,
) -> Delivery:
    """The engrams this prompt gives evidence for and the session has not had (see module)."""
    text = (prompt or "").replace("\x00", " ")[: maths.PROMPT_TERMS_CHARS]
    prompt_terms = maths.terms(text)
    if len(prompt_terms) < min_shared:
        return Delivery()
    scopes = _visible(scope, token_scopes)
    index = _owner_terms(getattr(owner, "pk", owner))
    hits: dict[int, int] = {}
    for term in prompt_terms:
        for position in index.postings.get(term, ()):
            hits[position] = hits.get(position, 0) + 1
    found: list[tuple[_Entry, maths.Evidence]] = []
    for position, count in hits.items():
        if count < min_shared:
            continue
        entry = index.entries[position]
        if entry is None:
            continue
        if entry.scope not in scopes or not _valid(entry.valid_from, entry.valid_until, now):
            continue
        if maths.contraindicated(prompt_terms, entry.avoid):
            continue
        proof = maths.evidence(prompt_terms, entry.terms, index.df, index.n)
        if proof.admitted(floor=floor, min_shared=min_shared):
            found.append((entry, proof))
    if not found:
        return Delivery()
    skip = _delivered(session) | set(session.suppressed_ids or [] if session else [])
    found = [(e, p) for e, p in found if e.pk not in skip]
    if not found:
        return Delivery()
    found.sort(
        key=lambda pair: (
            -ranking.ESCALATION_ORDER.get(pair[0].enforcement, 0),
            -pair[1].coverage,
            -pair[1].weight,
            pair[0].engram_id,
        )
    )
    rows = {
        e.pk: e
        for e in Engram.objects.filter(pk__in=[e.pk for e, _ in found]).defer(
            "embedding", "search_text", "extra"
        )
    }
    strengths = effective_strengths(list(rows.values()), now=now)
    chosen = [
        (entry, proof)
        for entry, proof in found
        if entry.pk in rows and activation.band(strengths[entry.pk]) in ranking.MAIN_BANDS
    ][: maths.PROMPT_MAX_ITEMS]
    if not chosen:
        return Delivery()
    rendered = maths.render_prompt([(e.engram_id, e.statement, e.enforcement) for e, _ in chosen])
    evidence = {e.engram_id: {"prompt": p.parts()} for e, p in chosen}
    _record(
        owner=owner,
        session=session,
        picks=[
            (
                entry.pk,
                Injection.Bucket.CONSTRAINT
                if entry.polarity == ranking.POLARITY_DONT
                else Injection.Bucket.DIRECTIVE,
                rank,
                proof.coverage,
                ranking.line_tokens(entry.engram_id, entry.statement, entry.enforcement),
                evidence[entry.engram_id],
            )
            for rank, (entry, proof) in enumerate(chosen, start=1)
        ],
        query=text,
        now=now,
        strengths=strengths,
    )
    return Delivery(rendered, tuple(e.engram_id for e, _ in chosen), evidence)


# --- PreToolUse --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolLesson:
    """A reminder-level engram or an error → fix lesson, with the trigger the matcher reads."""

    pk: int
    engram_id: str
    statement: str
    scope: str
    trigger_context: str
    fixed: str  # a word only the command that worked has (error → fix), "" for a reminder
    kind: str  # "reminder" | "fix"
    valid_from: datetime | None
    valid_until: datetime | None


_tool_cache: dict[int, tuple[float, list[ToolLesson]]] = {}


def tool_lessons(owner_id: int) -> list[ToolLesson]:
    """Reminder-level engrams and error → fix lessons (active, or recurred candidates)."""
    cached = _tool_cache.get(owner_id)
    clock = time.monotonic()
    if cached is not None and clock - cached[0] < TOOL_TTL_S:
        return cached[1]
    columns = (
        "pk", "engram_id", "statement", "scope", "trigger_context", "extra",
        "valid_from", "valid_until",
    )  # fmt: skip
    reminders = (
        Engram.objects.filter(
            owner_id=owner_id,
            status=Engram.Status.ACTIVE,
            enforcement=Engram.Enforcement.REMINDER,
        )
        .order_by("-emotional_weight", "engram_id")
        .values_list(*columns)[:MAX_TOOL_LESSONS]
    )
    fixes = (
        Engram.objects.filter(owner_id=owner_id, superseded_by__isnull=True)
        .filter(
            Q(status=Engram.Status.ACTIVE)
            | Q(status=Engram.Status.CANDIDATE, derivation_count__gte=RECURRED)
        )
        .filter(_fix_lessons())
        .exclude(enforcement=Engram.Enforcement.REMINDER)
        .distinct()
        .order_by("-derivation_count", "engram_id")
        .values_list(*columns)[:MAX_TOOL_LESSONS]
    )
    lessons: list[ToolLesson] = []
    for kind, rows in (("reminder", reminders), ("fix", fixes)):
        for pk, eid, statement, scope, trigger, extra, since, until in rows:
            fixed = ""
            if kind == "fix":
                failed, fixed = maths.error_fix_commands(statement, extra)
                trigger = trigger or maths.fix_trigger(statement, failed)
                if not trigger:
                    continue
            lessons.append(
                ToolLesson(pk, eid, statement, scope, trigger, fixed, kind, since, until)
            )
    _tool_cache[owner_id] = (clock, lessons)
    return lessons


def tool_deliver(
    *,
    owner: Any,
    tool_input: str,
    scope: str,
    session: AgentSession | None,
    now: datetime,
    token_scopes: Sequence[str] | None = None,
) -> Delivery:
    """Lessons whose trigger fires for this tool input, each at most once per session."""
    if not tool_input:
        return Delivery()
    lessons = tool_lessons(getattr(owner, "pk", owner))
    if not lessons:
        return Delivery()
    scopes = _visible(scope, token_scopes)
    # What the command says about itself (a commit message, a PR body) is not what it runs.
    haystack = attribution.without_prose(tool_input[:20_000])
    lowered = haystack.lower()
    hits: list[ToolLesson] = []
    for lesson in lessons:
        if lesson.scope not in scopes or not _valid(lesson.valid_from, lesson.valid_until, now):
            continue
        if lesson.fixed and attribution.has_term(lesson.fixed.lower(), lowered):
            continue  # the agent is already running what worked
        if attribution.trigger_matches(
            trigger_context=lesson.trigger_context,
            statement=lesson.statement,
            tool_input=haystack,
        ):
            hits.append(lesson)
    if not hits:
        return Delivery()
    if session is not None:
        had = set(
            Injection.objects.filter(
                session=session,
                bucket=Injection.Bucket.REMINDER,
                engram_id__in=[h.pk for h in hits],
            ).values_list("engram_id", flat=True)
        )
        hits = [h for h in hits if h.pk not in had]
    hits = hits[:MAX_TOOL_HITS]
    if not hits:
        return Delivery()
    lines = [
        ranking.render_line(h.engram_id, ranking.clip_statement(h.statement), "reminder")
        for h in hits
    ]
    evidence = {h.engram_id: {"tool": {"trigger": h.trigger_context, "kind": h.kind}} for h in hits}
    _record(
        owner=owner,
        session=session,
        picks=[
            (
                h.pk,
                Injection.Bucket.REMINDER,
                rank,
                1.0,
                textnorm.estimate_tokens(line + "\n"),
                evidence[h.engram_id],
            )
            for rank, (h, line) in enumerate(zip(hits, lines, strict=True), start=1)
        ],
        query=haystack[:2000],
        now=now,
    )
    return Delivery(
        maths.TOOL_HEADER + "\n".join(lines), tuple(h.engram_id for h in hits), evidence
    )
