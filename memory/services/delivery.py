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

from django.db.models import Count, Max, Q

from memory.maths import activation, attribution, ranking, textnorm
from memory.maths import delivery as maths
from memory.models import AgentSession, Engram, Injection, LearningSignal, scope_allowed
from memory.services.injections import access_record
from memory.strength import effective_strengths
from memory.validation import GLOBAL_SCOPE

USER_SOURCES = ("user", "person")
RECURRED = 2  # derivation count of a candidate promoted by recurrence
MAX_BRIEF_ROWS = 300
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
) -> None:
    """Injection rows (pk, bucket, rank, score, tokens, evidence) with the access rule."""
    if session is None or not picks:
        return
    rows = {
        e.pk: e
        for e in Engram.objects.filter(pk__in=[p[0] for p in picks]).defer(
            "embedding", "search_text", "extra"
        )
    }
    strengths = effective_strengths(list(rows.values()), now=now)
    access_record(
        owner=owner,
        session=session,
        picks=[p[:5] for p in picks if p[0] in rows],
        rs_eff=strengths,
        query=query,
        now=now,
        injected=True,
        evidence=[p[5] for p in picks if p[0] in rows],
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
    rows = [
        e
        for e in Engram.objects.filter(
            owner=owner,
            status=Engram.Status.ACTIVE,
            scope__in=scopes,
            superseded_by__isnull=True,
        )
        .filter(Q(source__in=USER_SOURCES) | Q(derivation_count__gte=RECURRED))
        .exclude(_fix_lessons())
        .defer("embedding", "search_text", "extra")
        .order_by("-updated_at")[:MAX_BRIEF_ROWS]
        if e.pk not in suppressed and _valid(e.valid_from, e.valid_until, now)
    ]
    if not rows:
        return Delivery()
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
        [maths.BriefItem(e.engram_id, e.statement, e.enforcement) for e in rows], scope=scope
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
        query=f"SessionStart:{source or 'startup'}",
        now=now,
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


@dataclass
class _Terms:
    version: tuple[Any, ...]
    at: float
    entries: list[_Entry]
    postings: dict[str, list[int]]
    df: dict[str, int]
    n: int


_terms_cache: dict[int, _Terms] = {}


def _active(owner_id: int) -> Any:
    return Engram.objects.filter(owner_id=owner_id, status=Engram.Status.ACTIVE)


def _owner_terms(owner_id: int) -> _Terms:
    """The owner's active engrams with their salient terms, an inverted index and idf counts."""
    version = tuple(
        _active(owner_id)
        .aggregate(n=Count("pk"), s=Count("superseded_by"), at=Max("updated_at"))
        .values()
    )
    cached = _terms_cache.get(owner_id)
    clock = time.monotonic()
    if cached is not None and cached.version == version and clock - cached.at < TTL_S:
        return cached
    entries: list[_Entry] = []
    for values in _active(owner_id).filter(superseded_by__isnull=True).values_list(
        "pk", "engram_id", "scope", "statement", "enforcement", "polarity",
        "valid_from", "valid_until", "tags",
    ):  # fmt: skip
        *head, tags = values
        words = maths.terms(values[3] + " " + " ".join(str(t) for t in tags or []))
        entries.append(_Entry(*head, terms=words))
    df, n = maths.document_frequencies(e.terms for e in entries)
    postings: dict[str, list[int]] = {}
    for index, entry in enumerate(entries):
        for term in entry.terms:
            postings.setdefault(term, []).append(index)
    made = _Terms(version, clock, entries, postings, df, n)
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
        if entry.scope not in scopes or not _valid(entry.valid_from, entry.valid_until, now):
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


def _fixed_marker(statement: str, failed: str) -> str:
    """The first word of the command that worked which the failed one lacks ("" if none): an
    input holding it is already the fix. "For Bash: use `X` instead of `Y` …": X worked."""
    fixed = maths.failed_command(statement) if "`" in statement else ""
    before = set(failed.split())
    return next((word for word in fixed.split() if word not in before), "")


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
                failed = maths.failed_command(str((extra or {}).get("anti_pattern") or ""))
                trigger = trigger or maths.tool_trigger(failed)
                fixed = _fixed_marker(statement, failed)
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
    scopes = _visible(scope, token_scopes)
    haystack = tool_input[:20_000]
    lowered = haystack.lower()
    hits: list[ToolLesson] = []
    for lesson in tool_lessons(getattr(owner, "pk", owner)):
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
