"""Engram's domain model: engrams, their links, sessions, outcomes, events and API tokens.

Every row belongs to an owner; QuerySets start from `visible_to(owner)` or `for_owner(owner)`.

One module per aggregate: `owners` (tokens, settings, id sequences), `engrams`, `sessions`,
`review` (queue and lifecycle events), `llm`, `learning`.
"""

from __future__ import annotations

from memory.models.engrams import (
    EMBEDDING_DIM,
    ActivityDay,
    Association,
    Engram,
    EngramQuerySet,
)
from memory.models.learning import (
    AgentPrompt,
    LearningDraft,
    LearningSignal,
    SweepFailure,
)
from memory.models.llm import (
    LlmCall,
    LlmGate,
)
from memory.models.owners import (
    TOKEN_LOOKUP_CHARS,
    TOKEN_PREFIX,
    ApiToken,
    ApiTokenQuerySet,
    IdSequence,
    OwnerSettings,
    scope_allowed,
)
from memory.models.review import (
    AnsweredText,
    Event,
    LifecycleEvent,
    ReviewItem,
)
from memory.models.sessions import (
    AgentSession,
    Episode,
    Injection,
    Observation,
    Outcome,
)

__all__ = [
    "EMBEDDING_DIM",
    "TOKEN_LOOKUP_CHARS",
    "TOKEN_PREFIX",
    "ActivityDay",
    "AgentPrompt",
    "AgentSession",
    "AnsweredText",
    "ApiToken",
    "ApiTokenQuerySet",
    "Association",
    "Engram",
    "EngramQuerySet",
    "Episode",
    "Event",
    "IdSequence",
    "Injection",
    "LearningDraft",
    "LearningSignal",
    "LifecycleEvent",
    "LlmCall",
    "LlmGate",
    "Observation",
    "Outcome",
    "OwnerSettings",
    "ReviewItem",
    "SweepFailure",
    "scope_allowed",
]
