"""Request and response schemas of the success-pattern API (explicit field lists)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ninja import Field, Schema

from memory.api.schemas import InSchema, ScopeStr

OnDuplicate = Literal["replace_with_better", "keep_both", "skip"]
Names = list[str]


class PatternIn(InSchema):
    task: str = Field(max_length=4000, examples=["Parse a CSV export and load it into Postgres"])
    eval_score: float = Field(ge=0, le=10, description="How well the run went, 0-10.")
    design: str = Field("", max_length=20000, description="How it was done, in words.")
    code: str = Field("", max_length=100000)
    output: str = Field("", max_length=20000, description="What the run produced.")
    inputs: Names = Field(default_factory=list, description="Values the pattern needs (compose).")
    outputs: Names = Field(default_factory=list, description="Values it produces (compose).")
    scope: ScopeStr = "global"
    on_duplicate: OnDuplicate = Field(
        "replace_with_better",
        description="When a live pattern's task is at cosine >= 0.92: replace it if the new "
        "score is better, keep both, or skip (return the existing one).",
    )


class LearnOut(Schema):
    key: str = Field(examples=["pat_3f2a9c0d1e4b"])
    outcome: Literal["created", "replaced", "kept_existing", "skipped"]
    duplicate_of: str = ""
    similarity: float | None = None


class PatternOut(Schema):
    key: str
    task: str
    design: str
    code: str
    output: str
    inputs: Names
    outputs: Names
    scope: str
    status: Literal["active", "retired"]
    success_score: float = Field(description="Survival: the aged score now (0-10).")
    reuse_count: int
    quality_multiplier: float = Field(description="Ranking: 0.5 + 0.5 x median(last 5)/10.")
    eval_scores: list[float] = Field(description="The last five evaluation scores, oldest first.")
    engram_id: str
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None


class RecallIn(InSchema):
    task: str = Field(max_length=4000)
    limit: int = Field(5, ge=1, le=50)
    eval_weighted: bool = True
    recency_weight: float = Field(
        0.0, ge=0, le=1, description="0: age ignored; 1: a 30-day-old pattern counts half."
    )
    scope: ScopeStr | None = None
    mark_used: bool = Field(False, description="Count the top result as reused (survival).")


class RecalledOut(Schema):
    key: str
    task: str
    design: str
    code: str
    output: str
    similarity: float
    quality_multiplier: float
    recency: float
    score: float
    success_score: float
    reuse_count: int
    eval_scores: list[float]


class RecallOut(Schema):
    results: list[RecalledOut]


class EvaluateIn(InSchema):
    task: str | None = Field(None, max_length=4000, description="Default: the pattern's task.")
    code: str | None = Field(None, max_length=100000, description="Default: the pattern's code.")
    n: int = Field(3, ge=1, le=5, description="Independent judges (LLM path).")
    expected_outputs: Names = Field(
        default_factory=list, description="Outputs a cheat would hard-code (adversarial check)."
    )


class EvaluationOut(Schema):
    key: str = Field(examples=["ev_0b1c2d3e4f5a"])
    pattern: str | None
    state: Literal["pending", "done"]
    source: Literal["llm", "rubric", "external"]
    judges: int
    score: float | None
    spread: float
    flagged: bool = Field(description="The judges disagree: spread (max - min) > 1.5.")
    judge_scores: list[float]
    feedback: str = Field(description="The worst judge's feedback (or the rubric's findings).")
    hardcoding: list[str] = Field(description="Why the code looks like it hard-codes outputs.")
    note: str
    poll: str = Field(description="GET this URL for the evaluation's state.")
    created_at: datetime
    finished_at: datetime | None


class RefineIn(InSchema):
    eval_score: float = Field(ge=0, le=10)
    note: str = Field("", max_length=300, examples=["CI pass rate 0.9"])


class RefineOut(Schema):
    key: str
    evaluation: str
    quality_multiplier: float
    eval_scores: list[float]


class ReusedOut(Schema):
    key: str
    success_score: float
    reuse_count: int


class IssueOut(Schema):
    text: str
    weight: float = Field(description="Count decayed 10 % per whole week since last seen.")
    members: int
    similarity: float | None
    last_seen: datetime


class FeedbackOut(Schema):
    issues: list[IssueOut]
    prompt: str = Field(description="The issues as a block to put into an agent's prompt.")


class StageIn(InSchema):
    name: str = Field(max_length=200)
    inputs: Names = Field(default_factory=list)
    outputs: Names = Field(default_factory=list)


class ComposeIn(InSchema):
    task: str = Field(max_length=4000)
    given: Names = Field(default_factory=list, description="Values available before stage 1.")
    max_stages: int = Field(4, ge=1, le=8)
    stages: list[StageIn] | None = Field(
        None, description="Validate this pipeline instead of composing one."
    )


class StageOut(Schema):
    name: str
    pattern: str
    task: str
    inputs: Names
    outputs: Names


class ContractErrorOut(Schema):
    stage: str
    field: str
    message: str


class CompositionOut(Schema):
    key: str
    task: str
    state: Literal["pending", "done"]
    source: Literal["llm", "nearest", "given"]
    given: Names
    stages: list[StageOut]
    valid: bool
    errors: list[ContractErrorOut]
    note: str
    poll: str
    created_at: datetime
    finished_at: datetime | None


class PromoteOut(Schema):
    key: str
    engram_id: str


class SettingsIn(InSchema):
    feed_inject: bool


class SettingsOut(Schema):
    feed_inject: bool = Field(description="Recall feeds inject's consider bucket.")
