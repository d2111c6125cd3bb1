"""Request and response schemas of the REST API v1 (explicit field lists, never "__all__").

Input schemas forbid unknown fields and clean every string before validation: NUL characters
and lone surrogates cannot be stored by PostgreSQL, so they would otherwise turn bad input into a
500. Date-times must be convertible to UTC (naive ones are taken as UTC).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import AfterValidator, ConfigDict, field_validator, model_validator

from memory import validation as limits

MAX_BATCH = 500
MAX_PAGE = 200
MAX_OBSERVATIONS = 200
MAX_FEEDBACK = 200

EngramType = Literal["behavioral", "terminological", "procedural", "architectural"]
Polarity = Literal["do", "dont"]
Visibility = Literal["private", "public", "template"]
Enforcement = Literal["advisory", "emphasised", "reminder"]
Status = Literal["candidate", "active", "dormant", "retired"]
Band = Literal["active", "fading", "dormant", "retire"]
Quadrant = Literal["working", "leech", "hidden_gem", "noise", "insufficient"]
LearnOutcome = Literal["created", "recurrence", "merge_proposed", "contradiction_flagged"]
Mode = Literal["hybrid", "lexical", "dense"]
Signal = Literal[
    "positive", "negative", "neutral", "followed", "contradicted", "ignored", "irrelevant"
]


# JSON nested deeper than this is refused (422): no payload Engram reads nests so deep, and
# walking it (here, or serialising it later) would exhaust the stack (a 500 found by fuzzing).
MAX_NESTING = 64


def clean_text(value: Any, _depth: int = 0) -> Any:
    """Drop NUL characters and replace lone surrogates, recursively through lists and dicts."""
    if _depth > MAX_NESTING:
        raise ValueError(f"nested deeper than {MAX_NESTING} levels")
    if isinstance(value, str):
        if "\x00" in value:
            value = value.replace("\x00", "")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = value.encode("utf-8", "replace").decode("utf-8")
        return value
    if isinstance(value, list):
        return [clean_text(v, _depth + 1) for v in value]
    if isinstance(value, dict):
        return {clean_text(k, _depth + 1): clean_text(v, _depth + 1) for k, v in value.items()}
    return value


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValueError("date-time out of range") from None


DateTime = Annotated[datetime, AfterValidator(_utc)]
ScopeStr = Annotated[
    str, Field(max_length=limits.MAX_SHORT_CHARS, examples=["global", "project:api"])
]


class InSchema(Schema):
    """Base of request bodies and query parameter sets."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _clean(cls, value: Any) -> Any:
        return clean_text(value)


class ErrorOut(Schema):
    code: str = Field(examples=["not_found"])
    message: str
    details: dict[str, Any] | None = None


# --- engrams --------------------------------------------------------------------------------


class EngramIn(InSchema):
    """A lesson to learn; only `statement` is required."""

    statement: str = Field(min_length=1, max_length=limits.MAX_STATEMENT_CHARS)
    scope: ScopeStr = "global"
    type: EngramType = "behavioral"
    polarity: Polarity | None = None
    rationale: str = Field("", max_length=limits.MAX_TEXT_CHARS)
    tags: list[Annotated[str, Field(max_length=limits.MAX_SHORT_CHARS)]] = Field(
        default_factory=list, max_length=limits.MAX_LIST_ITEMS
    )
    domain: str = Field("", max_length=limits.MAX_SHORT_CHARS)
    entities: list[Any] = Field(default_factory=list, max_length=limits.MAX_LIST_ITEMS)
    contraindications: list[Annotated[str, Field(max_length=limits.MAX_SHORT_CHARS)]] = Field(
        default_factory=list, max_length=limits.MAX_LIST_ITEMS
    )
    source: str = Field("agent", max_length=limits.MAX_NAME_CHARS)
    direct_instruction: bool = Field(
        False, description="The user told the agent this directly: it becomes active at once."
    )
    emotional_weight: float = Field(5.0, ge=1, le=10)
    confidence: float = Field(5.0, ge=1, le=10)
    trigger_context: str = Field("", max_length=limits.MAX_TEXT_CHARS)
    visibility: Visibility = "private"
    valid_from: DateTime | None = None
    valid_until: DateTime | None = None


class EngramPatch(InSchema):
    """Fields to change; omitted fields stay as they are."""

    statement: str | None = Field(None, min_length=1, max_length=limits.MAX_STATEMENT_CHARS)
    rationale: str | None = Field(None, max_length=limits.MAX_TEXT_CHARS)
    tags: list[Annotated[str, Field(max_length=limits.MAX_SHORT_CHARS)]] | None = Field(
        None, max_length=limits.MAX_LIST_ITEMS
    )
    domain: str | None = Field(None, max_length=limits.MAX_SHORT_CHARS)
    entities: list[Any] | None = Field(None, max_length=limits.MAX_LIST_ITEMS)
    contraindications: list[Annotated[str, Field(max_length=limits.MAX_SHORT_CHARS)]] | None = (
        Field(None, max_length=limits.MAX_LIST_ITEMS)
    )
    type: EngramType | None = None
    scope: ScopeStr | None = None
    polarity: Polarity | None = None
    visibility: Visibility | None = None
    emotional_weight: float | None = Field(None, ge=1, le=10)
    confidence: float | None = Field(None, ge=1, le=10)
    trigger_context: str | None = Field(None, max_length=limits.MAX_TEXT_CHARS)
    valid_from: DateTime | None = None
    valid_until: DateTime | None = None
    enforcement: Enforcement | None = None
    version: int | None = Field(
        None, ge=1, le=2**31 - 1, description="Expected current version; 409 when it moved on."
    )


class CountersOut(Schema):
    injections: int
    surfaced: int
    followed: int
    contradicted: int
    ignored: int
    irrelevant: int
    feedback_positive: int
    feedback_negative: int
    feedback_neutral: int


class EngramOut(Schema):
    id: str = Field(examples=["ENG-2026-0302-001"])
    statement: str
    rationale: str
    type: str
    scope: str
    status: str
    polarity: str | None
    visibility: str
    tags: list[str]
    domain: str
    entities: list[Any]
    contraindications: list[str]
    trigger_context: str
    emotional_weight: float
    confidence: float
    band: str
    rs: float = Field(description="Effective retrieval strength now, in [0, 1].")
    storage_strength: float
    consolidated: bool
    enforcement: str
    derivation_count: int
    counters: CountersOut
    valid_from: datetime | None
    valid_until: datetime | None
    created_at: datetime
    updated_at: datetime
    version: int
    source: str


class RelatedOut(Schema):
    id: str
    cosine: float
    relation: str


class LearnOut(Schema):
    engram: EngramOut
    outcome: LearnOutcome
    related: list[RelatedOut]


class BatchIn(InSchema):
    items: list[EngramIn] = Field(min_length=1, max_length=MAX_BATCH)


class BatchItemOut(Schema):
    index: int
    status: int = Field(description="HTTP status this item would have had on its own.")
    engram: EngramOut | None = None
    outcome: LearnOutcome | None = None
    related: list[RelatedOut] | None = None
    error: ErrorOut | None = None


class BatchOut(Schema):
    results: list[BatchItemOut]
    learned: int
    failed: int


class EngramFilters(InSchema):
    status: Status | None = None
    scope: ScopeStr | None = None
    type: EngramType | None = None
    tag: str | None = Field(None, max_length=200)
    band: Band | None = None
    quadrant: Quadrant | None = None
    q: str | None = Field(
        None,
        max_length=limits.MAX_QUERY_CHARS,
        description="Search text: ranks the filtered engrams by relevance (hybrid recall).",
    )
    cursor: str | None = Field(None, max_length=200)
    limit: int = Field(50, ge=1, le=MAX_PAGE)


class EngramPage(Schema):
    items: list[EngramOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page.")


class RetireOut(Schema):
    id: str
    status: str
    changed: bool


# --- recall and inject ----------------------------------------------------------------------


class RecallIn(InSchema):
    query: str = Field(min_length=1, max_length=4000)
    scope: ScopeStr | None = None
    limit: int = Field(10, ge=1, le=100)
    mode: Mode = "hybrid"
    session_id: str | None = Field(None, max_length=limits.MAX_SESSION_ID_CHARS)
    include_episodes: bool = False


class RecallItemOut(Schema):
    engram: EngramOut
    score: float
    components: dict[str, float | int | None]


class EpisodeOut(Schema):
    id: str
    timestamp: datetime
    summary: str
    agent: str
    channel: str
    session_id: str | None


class RecallOut(Schema):
    results: list[RecallItemOut]
    episodes: list[EpisodeOut] | None = None


class InjectIn(InSchema):
    prompt: str = Field(min_length=1, max_length=limits.MAX_LONG_TEXT_CHARS)
    scope: ScopeStr | None = None
    session_id: str | None = Field(None, max_length=limits.MAX_SESSION_ID_CHARS)
    budget_tokens: int | None = Field(None, ge=50, le=20000)


class InjectedOut(Schema):
    id: str
    statement: str
    score: float
    tokens: int


class InjectOut(Schema):
    directives: list[InjectedOut]
    constraints: list[InjectedOut]
    consider: list[InjectedOut]
    spread: list[InjectedOut]
    rendered: str
    tokens: int


# --- feedback -------------------------------------------------------------------------------


class FeedbackItem(InSchema):
    engram_id: str = Field(max_length=40)
    signal: Signal
    session_id: str | None = Field(None, max_length=limits.MAX_SESSION_ID_CHARS)


class FeedbackIn(InSchema):
    """One signal (`engram_id`, `signal`, `session_id?`) or several (`signals`)."""

    engram_id: str | None = Field(None, max_length=40)
    signal: Signal | None = None
    session_id: str | None = Field(None, max_length=limits.MAX_SESSION_ID_CHARS)
    signals: list[FeedbackItem] | None = Field(None, min_length=1, max_length=MAX_FEEDBACK)

    @model_validator(mode="after")
    def _one_form(self) -> FeedbackIn:
        single = self.engram_id is not None or self.signal is not None
        if self.signals is not None and single:
            raise ValueError("send either engram_id and signal, or signals, not both")
        if self.signals is None and (self.engram_id is None or self.signal is None):
            raise ValueError("engram_id and signal are required (or a signals list)")
        return self


class FeedbackResultOut(Schema):
    engram_id: str
    status: int
    signal: str
    engram: EngramOut | None = None
    error: ErrorOut | None = None


class FeedbackOut(Schema):
    results: list[FeedbackResultOut]


# --- sessions -------------------------------------------------------------------------------


class SessionIn(InSchema):
    task: str = Field("", max_length=limits.MAX_TASK_CHARS)
    scope: ScopeStr | None = None
    agent: str = Field("", max_length=100)
    session_id: str | None = Field(
        None, max_length=200, description="Resume this session (created when new)."
    )


class SessionOut(Schema):
    session_id: str
    scope: str
    agent: str
    started_at: datetime
    injection: InjectOut | None


Suggestion = Annotated[str, Field(max_length=limits.MAX_STATEMENT_CHARS)] | dict[str, Any]


class SessionEndIn(InSchema):
    summary: str = Field("", max_length=limits.MAX_TEXT_CHARS)
    engram_suggestions: list[Suggestion] = Field(
        default_factory=list, max_length=limits.MAX_LIST_ITEMS
    )
    last_assistant_message: str = Field("", max_length=limits.MAX_LONG_TEXT_CHARS)


class LearnedOut(Schema):
    id: str
    outcome: str


class SessionEndOut(Schema):
    session_id: str
    ended: bool
    learned: list[LearnedOut]


# --- episodes and observations --------------------------------------------------------------


class EpisodeIn(InSchema):
    summary: str = Field(min_length=1, max_length=limits.MAX_TEXT_CHARS)
    agent: str = Field("", max_length=100)
    channel: str = Field("", max_length=100)
    session_id: str | None = Field(None, max_length=limits.MAX_SESSION_ID_CHARS)
    timestamp: DateTime | None = None


class EpisodeFilters(InSchema):
    since: DateTime | None = None
    until: DateTime | None = None
    agent: str | None = Field(None, max_length=100)
    channel: str | None = Field(None, max_length=100)
    q: str | None = Field(None, max_length=limits.MAX_QUERY_CHARS)
    cursor: str | None = Field(None, max_length=200)
    limit: int = Field(50, ge=1, le=MAX_PAGE)


class EpisodePage(Schema):
    items: list[EpisodeOut]
    next_cursor: str | None


class ObservationItem(InSchema):
    tool: str = Field(min_length=1, max_length=100)
    input: Any = None
    output: Any = None
    success: bool = True
    session_id: str | None = Field(None, max_length=limits.MAX_SESSION_ID_CHARS)


class ObservationsIn(InSchema):
    """One tool use (`tool`, `input`, `output`, `success`, `session_id`) or `observations`."""

    tool: str | None = Field(None, min_length=1, max_length=100)
    input: Any = None
    output: Any = None
    success: bool = True
    session_id: str | None = Field(None, max_length=limits.MAX_SESSION_ID_CHARS)
    observations: list[ObservationItem] | None = Field(
        None, min_length=1, max_length=MAX_OBSERVATIONS
    )

    @model_validator(mode="after")
    def _one_form(self) -> ObservationsIn:
        if self.observations is not None and self.tool is not None:
            raise ValueError("send either one tool use or an observations list, not both")
        if self.observations is None and self.tool is None:
            raise ValueError("tool is required (or an observations list)")
        return self

    def items(self) -> list[ObservationItem]:
        if self.observations is not None:
            return self.observations
        return [
            ObservationItem(
                tool=self.tool or "",
                input=self.input,
                output=self.output,
                success=self.success,
                session_id=self.session_id,
            )
        ]


class ObservationOut(Schema):
    id: int
    tool: str
    success: bool
    redacted: list[str]


class ObservationsOut(Schema):
    stored: int
    observations: list[ObservationOut]


# --- status, import, export -----------------------------------------------------------------


class TokenInfoOut(Schema):
    name: str
    scopes: list[str]


class LessonsOut(Schema):
    yours: int = Field(description="Active lessons in the user's own words (source user).")
    learned: int = Field(description="Active lessons Engram or an agent inferred.")
    waiting: int = Field(description="Candidates waiting for review or recurrence.")


class HookHealthOut(Schema):
    state: Literal["ok", "quiet", "stopped", "none"]
    reason: str


class ProjectOut(Schema):
    scope: str
    sessions: int
    sessions_recent: int = Field(description="Sessions started in the last 30 days.")
    last_hook_at: DateTime | None
    last_capture_at: DateTime | None
    last_injection_at: DateTime | None
    lessons: LessonsOut
    health: HookHealthOut


class WorkerOut(Schema):
    alive: bool
    detail: str


class QueueOut(Schema):
    length: int | None
    oldest_seconds: float | None
    stuck: bool
    detail: str


class CheckOut(Schema):
    ok: bool
    detail: str


class LlmStateOut(Schema):
    key_set: bool
    tokens_today: int
    budget: int
    last_failed: bool
    detail: str


class StatusOut(Schema):
    engrams: int
    by_status: dict[str, int]
    by_band: dict[str, int]
    review_open: int
    sessions_today: int
    token: TokenInfoOut
    lessons: LessonsOut | None = None
    projects: list[ProjectOut] | None = Field(
        None,
        description=(
            "Projects with a session in the last 30 days: last hook received, last lesson "
            "captured, last injection, lessons, and whether hooks still arrive."
        ),
    )
    worker: WorkerOut | None = None
    queue: QueueOut | None = None
    embedder: CheckOut | None = None
    llm: LlmStateOut | None = None
    server_time: DateTime | None = None
    project_scope: str | None = Field(None, description="With ?cwd=: its project's scope.")


class ImportOut(Schema):
    format: str
    total: int
    created: int
    skipped_existing: int
    duplicates: int
    dry_run: bool
    ids: list[str]


# --- Claude Code hooks ----------------------------------------------------------------------


class HookIn(Schema):
    """A Claude Code hook payload (stdin JSON of a command hook, body of an HTTP hook).

    Only the common fields are listed; every event adds its own, which are accepted as sent.
    """

    model_config = ConfigDict(extra="allow")

    hook_event_name: str = Field(max_length=100, examples=["UserPromptSubmit"])
    session_id: str | None = Field(None, max_length=limits.MAX_SESSION_ID_CHARS)
    transcript_path: str | None = None
    cwd: str | None = None
    prompt: str | None = None
    tool_name: str | None = None
    tool_input: Any = None
    tool_response: Any = None
    error: str | None = None
    source: str | None = None
    last_assistant_message: str | None = None
    # Added by `engram-hook` at Stop / PreCompact / SessionEnd: {"offset": int, "lines": [str]}.
    engram_transcript: dict[str, Any] | None = None
    engram_rules: list[Annotated[str, Field(max_length=2000)]] | None = Field(
        None, max_length=200, description="The project's CLAUDE.md / .claude/rules lines."
    )
    engram_project_root: str | None = Field(
        None,
        max_length=4096,
        description="Added by `engram-hook`: the git checkout's main folder, which names the "
        "project (every worktree and subfolder of one repository is one project).",
    )

    @field_validator("*", mode="before")
    @classmethod
    def _clean(cls, value: Any) -> Any:
        return clean_text(value)

    @model_validator(mode="after")
    def _clean_extra(self) -> HookIn:
        extra = self.__pydantic_extra__
        if extra:
            for key, value in list(extra.items()):
                extra[key] = clean_text(value)
        return self


class HookSpecificOut(Schema):
    hookEventName: str  # Claude Code's field names
    additionalContext: str | None = None


class HookOut(Schema):
    """Empty (`{}`) when there is nothing to add; context only in `hookSpecificOutput`."""

    hookSpecificOutput: HookSpecificOut | None = None
