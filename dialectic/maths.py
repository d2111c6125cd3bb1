"""Dialectic consolidation maths (DESIGN "Dialectic consolidation" and "Dialectic delivery").

Pure: plain floats, sequences and frozen dataclasses; no Django. Vectors are numpy arrays of
unit length (the embedder normalises them), so a cosine is a dot product and a cluster's
cohesion follows from the running sum of its members' vectors.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from rapidfuzz.distance import Levenshtein

# --- thresholds (normative) -----------------------------------------------------------------
CLUSTER_COSINE = 0.75  # an observation joins a cluster when cosine to its centroid > this
THESIS_MIN_OBSERVATIONS = 3
THESIS_MIN_COHESION = 0.7
THESIS_FULL_CONFIDENCE_AT = 10  # conf(T) = min(1, n/10) * cohesion
ANTITHESIS_COSINE = 0.5  # cosine to the thesis centroid > this ...
ANTITHESIS_DIVERGENCE = 0.3  # ... and D > this
SYNTHESIS_TRIGGER = 0.4  # recency-weighted antithesis weight >= 0.4 * conf(T)
SYNTHESIS_MIN_Q = 0.6  # accepted only when Q > 0.6
OUTPUT_MIN_CONFIDENCE = 0.5
OUTPUT_MIN_EXEMPLARS = 2
SKILL_MIN_DIVERSITY = 2  # tool diversity > 2
SKILL_MIN_COMPLEXITY = 0.5  # complexity > 0.5
REFINE_BELOW = 0.7  # the second-level (LLM) refinement runs below this decision confidence
PUBLISH_MIN_CONFIDENCE = 0.7
PUBLISH_MIN_EXEMPLARS = 3
PUBLISH_MIN_SESSIONS = 5  # a habit recurs across sessions: fewer is one piece of work
USER_SCOPE_MIN_PROJECTS = 3
# Not in DESIGN (a decision): a synthesis publishes only while its habit is what is done most of
# the time; "T, except when C" where C covers most of the evidence is not a habit with an
# exception but noise with a pattern found in it.
PUBLISH_MIN_SUPPORT_SHARE = 0.5
INTELLIGENCE_PLACEMENT = 0.6  # an intelligence point where D/(D+I) > 0.6
SESSION_WINDOW = 5  # the tool sequence of an observation: the 5 calls ending with it

# Not fixed by DESIGN (decisions recorded in docs and the report): antitheses lose half their
# weight every 14 days, and the antithesis weight is the recency-weighted share of the thesis's
# evidence that contradicts it, so one old exception cannot outweigh a habit.
ANTITHESIS_HALF_LIFE_DAYS = 14.0
# Not in DESIGN (decisions): antitheses are stored per distinct tool sequence, at most this many
# per thesis (the rarer ones past it share one "other" row), each with its latest exemplars.
ANTITHESIS_MAX_DISTINCT = 8
ANTITHESIS_EXEMPLARS = 5


# --- clusters and theses --------------------------------------------------------------------


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two vectors (any length; zero vectors have cosine 0)."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def cohesion_of(vectors: Sequence[np.ndarray]) -> float:
    """Mean pairwise cosine of the vectors; 1.0 for a single one, 0.0 for none."""
    n = len(vectors)
    if n == 0:
        return 0.0
    if n == 1:
        return 1.0
    units = [v / (np.linalg.norm(v) or 1.0) for v in vectors]
    total = sum(float(np.dot(units[i], units[j])) for i in range(n) for j in range(i + 1, n))
    return total / (n * (n - 1) / 2)


def cohesion_from_sum(total: np.ndarray, n: int) -> float:
    """Mean pairwise cosine of n unit vectors from their sum: (|S|^2 - n) / (n (n - 1))."""
    if n <= 0:
        return 0.0
    if n == 1:
        return 1.0
    squared = float(np.dot(total, total))
    return (squared - n) / (n * (n - 1))


def joins_cluster(similarity: float) -> bool:
    return similarity > CLUSTER_COSINE


def is_thesis(n: int, cohesion: float) -> bool:
    return n >= THESIS_MIN_OBSERVATIONS and cohesion >= THESIS_MIN_COHESION


def thesis_confidence(n: int, cohesion: float) -> float:
    """conf(T) = min(1, n/10) * cohesion."""
    return min(1.0, n / THESIS_FULL_CONFIDENCE_AT) * max(0.0, cohesion)


def is_one_tool(sequence: Sequence[str]) -> bool:
    """A sequence made of one tool name repeated (Bash, Bash, Bash): not an order of work."""
    return len(set(sequence)) <= 1


TOOL_LIST_RE = re.compile(r"^(?:[A-Z][A-Za-z_]*|then|and|→|->|,|;|\.|\s)+$")


def is_tool_list(text: str) -> bool:
    """Whether a text is only tool names strung together ("Bash then Bash", "Read → Edit")."""
    return bool(TOOL_LIST_RE.match(text.strip())) if text.strip() else False


def expected_sequence(sequences: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """The most common tool sequence. A window cut short by its session's start is shorter
    than the rest: sequences of two calls or more count first (a habit is a sequence), ties
    go to the longer, then to the one seen first."""
    if not sequences:
        return ()
    pool = [tuple(s) for s in sequences if len(s) >= 2] or [tuple(s) for s in sequences]
    counts = Counter(pool)
    order = {seq: n for n, seq in reversed(list(enumerate(pool)))}
    return max(counts, key=lambda seq: (counts[seq], len(seq), -order[seq]))


# --- antitheses -----------------------------------------------------------------------------


def divergence(sequence: Sequence[str], expected: Sequence[str]) -> float:
    """D = 1 - normalised Levenshtein similarity of two tool-name sequences."""
    return 1.0 - float(Levenshtein.normalized_similarity(list(sequence), list(expected)))


def aligned_divergence(sequence: Sequence[str], expected: Sequence[str]) -> float:
    """D for an observation's window. A window cut short by its session's start (fewer calls
    than the expected sequence) is compared with the expected sequence's start of the same
    length, since both begin where the work began; a full window is compared whole."""
    if 0 < len(sequence) < len(expected):
        return divergence(sequence, expected[: len(sequence)])
    return divergence(sequence, expected)


def contradicts(similarity: float, d: float) -> bool:
    return similarity > ANTITHESIS_COSINE and d > ANTITHESIS_DIVERGENCE


def recency_weight(observed_at: datetime, now: datetime) -> float:
    """0.5 ** (age in days / 14): today's antithesis weighs 1, a fortnight-old one 0.5."""
    age_days = max(0.0, (now - observed_at).total_seconds() / 86400.0)
    return float(0.5 ** (age_days / ANTITHESIS_HALF_LIFE_DAYS))


def sequence_key(sequence: Sequence[str]) -> str:
    """The key of a distinct tool sequence (sha-256 of its compact JSON)."""
    raw = json.dumps(list(sequence), separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()


def decayed_add(weight: float, at: datetime, observed_at: datetime) -> tuple[float, datetime]:
    """Add one observation to a recency-weighted sum kept as (weight, reference time): the sum
    of 0.5 ** ((at - t) / half-life) over its observations. The reference moves to the newest
    observation, so the stored weight never grows past the count."""
    if observed_at <= at:
        return weight + recency_weight(observed_at, at), at
    return weight * recency_weight(at, observed_at) + 1.0, observed_at


def decayed_value(weight: float, at: datetime, now: datetime) -> float:
    """A (weight, reference time) sum as seen at `now`: the same number as summing
    recency_weight(t, now) over its observations (for observations up to `now`)."""
    return weight * recency_weight(at, now)


def antithesis_weight(
    antitheses: Sequence[datetime], supporting: Sequence[datetime], now: datetime
) -> float:
    """The recency-weighted share of the evidence that contradicts the thesis, in [0, 1]."""
    against = sum(recency_weight(t, now) for t in antitheses)
    support = sum(recency_weight(t, now) for t in supporting)
    return weight_share(against, support)


def weight_share(against: float, support: float) -> float:
    """against / (against + support), 0 when both are 0: the antithesis weight from the
    recency-weighted sums of each side."""
    total = against + support
    return against / total if total > 0 else 0.0


def synthesis_triggered(weight: float, confidence: float) -> bool:
    return confidence > 0 and weight >= SYNTHESIS_TRIGGER * confidence - 1e-12


# --- synthesis quality ----------------------------------------------------------------------


@dataclass(frozen=True)
class Quality:
    coverage: float
    consistency: float
    parsimony: float

    @property
    def q(self) -> float:
        return self.coverage * self.consistency * self.parsimony

    @property
    def accepted(self) -> bool:
        return self.q > SYNTHESIS_MIN_Q


def parsimony(conditions: int) -> float:
    """1 / (1 + conditions), where `conditions` counts the clauses the exception needs beyond
    its first one: "T, except when C" with one feature is 1.0, with two features 0.5."""
    return 1.0 / (1.0 + max(0, conditions))


def quality(
    *,
    antitheses_matched: int,
    antitheses: int,
    supporting_matched: int,
    supporting: int,
    conditions: int,
) -> Quality:
    """Q of "T, except when C" over the thesis's evidence.

    coverage: the share of all evidence the synthesis predicts right (supporting observations
    outside C, antitheses inside C); consistency: of the observations C selects, the share that
    really are exceptions (C does not swallow the habit); parsimony as above.
    """
    total = antitheses + supporting
    explained = antitheses_matched + (supporting - supporting_matched)
    coverage = explained / total if total else 0.0
    selected = antitheses_matched + supporting_matched
    consistency = antitheses_matched / selected if selected else 0.0
    return Quality(coverage=coverage, consistency=consistency, parsimony=parsimony(conditions))


@dataclass(frozen=True)
class Feature:
    """One distinguishing feature of the antitheses: `kind` (tool, path, command, error), the
    value, and in what share of antitheses and of supporting observations it occurs."""

    kind: str
    value: str
    in_antitheses: float
    in_supporting: float

    @property
    def lift(self) -> float:
        return self.in_antitheses - self.in_supporting


# Equally distinguishing features read best in this order in a condition.
FEATURE_ORDER = {"error": 0, "command": 1, "path": 2, "tool": 3}


def distinguishing_features(
    antitheses: Sequence[frozenset[tuple[str, str]]],
    supporting: Sequence[frozenset[tuple[str, str]]],
    *,
    limit: int = 3,
) -> list[Feature]:
    """Features (kind, value) common among the antitheses and rare in the supporting evidence,
    best first: at least half the antitheses have it and its lift is at least 0.4."""
    if not antitheses:
        return []
    counts_a: Counter[tuple[str, str]] = Counter(f for fs in antitheses for f in fs)
    counts_s: Counter[tuple[str, str]] = Counter(f for fs in supporting for f in fs)
    found = []
    for (kind, value), count in counts_a.items():
        share_a = count / len(antitheses)
        share_s = counts_s[(kind, value)] / len(supporting) if supporting else 0.0
        feature = Feature(kind, value, share_a, share_s)
        if share_a >= 0.5 and feature.lift >= 0.4:
            found.append(feature)
    found.sort(
        key=lambda f: (-f.lift, -f.in_antitheses, FEATURE_ORDER.get(f.kind, 9), f.kind, f.value)
    )
    return found[:limit]


# --- output type ----------------------------------------------------------------------------

IMPERATIVE_RE = re.compile(
    r"\b(always|never|must|required?|ensure|don't|do not|should (?:always|never)|avoid|prefer|"
    r"(?:before|after) \w+ing)\b",
    re.IGNORECASE,
)
PROCEDURAL_RE = re.compile(
    r"(\bstep\s*\d|\bfirst\b.*\bthen\b|\bnext\b|\bfinally\b|\bworkflow\b|\bprocedure\b|"
    r"\bprocess\b|\u2192|->|^\s*\d+\.\s+\w)",
    re.IGNORECASE | re.MULTILINE,
)
CONDITIONAL_RE = re.compile(r"\b(if|unless|except when|when\b.*\bthen|depending on)\b", re.I)


def is_imperative(text: str) -> bool:
    return bool(IMPERATIVE_RE.search(text))


def is_procedural(text: str) -> bool:
    return bool(PROCEDURAL_RE.search(text))


def is_conditional(text: str) -> bool:
    return bool(CONDITIONAL_RE.search(text))


def length_score(chars: int) -> float:
    """The `len` part of K: the instruction's length, full at 500 characters."""
    return min(1.0, max(0, chars) / 500)


def tools_score(diversity: int) -> float:
    """The `tools` part of K: distinct tools, full at 4."""
    return min(1.0, max(0, diversity) / 4)


def complexity(*, length: float, tools: float, conditional: bool, procedural: bool) -> float:
    """K = 0.3*len + 0.3*tools + 0.2*conditional + 0.2*procedural (each part in [0, 1])."""
    value = 0.3 * length + 0.3 * tools + 0.2 * float(conditional) + 0.2 * float(procedural)
    return min(1.0, value)


@dataclass(frozen=True)
class OutputDecision:
    output_type: str  # none | rule | skill | rule_with_skill
    confidence: float
    reason: str

    @property
    def needs_refinement(self) -> bool:
        return self.confidence < REFINE_BELOW


OUTPUT_TYPES = ("none", "rule", "skill", "rule_with_skill")


def output_type(
    *,
    confidence: float,
    exemplars: int,
    imperative: bool,
    procedural: bool,
    diversity: int,
    k: float,
) -> OutputDecision:
    """DESIGN's decision list, in its order; an unclear case (the final "else rule") carries a
    decision confidence below 0.7, which asks for the second-level refinement."""
    if confidence < OUTPUT_MIN_CONFIDENCE or exemplars < OUTPUT_MIN_EXEMPLARS:
        return OutputDecision("none", 0.9, "too little confidence or evidence")
    if imperative and not procedural:
        return OutputDecision("rule", 0.9, "imperative, not procedural")
    if procedural and diversity > SKILL_MIN_DIVERSITY and k > SKILL_MIN_COMPLEXITY:
        return OutputDecision("skill", 0.8, "procedural, diverse tools, complex")
    if imperative and procedural and diversity > SKILL_MIN_DIVERSITY:
        return OutputDecision("rule_with_skill", 0.85, "imperative, procedural and diverse")
    return OutputDecision("rule", 0.6, "no clear signal: a rule by default")


# --- intelligence points --------------------------------------------------------------------

# (deterministic, intelligence) scores of the kinds of step a hybrid script runs: the paper's
# table, used when the LLM does not score the steps itself.
STEP_SCORES: dict[str, tuple[float, float]] = {
    "Read": (0.9, 0.1),
    "Glob": (0.95, 0.05),
    "Grep": (0.9, 0.1),
    "Bash": (0.8, 0.2),
    "Edit": (0.3, 0.7),
    "Write": (0.3, 0.7),
    "MultiEdit": (0.3, 0.7),
    "WebFetch": (0.7, 0.3),
    "WebSearch": (0.6, 0.4),
    "Task": (0.2, 0.8),
}
DEFAULT_STEP_SCORE = (0.5, 0.5)


def deterministic_share(d: float, i: float) -> float:
    """D / (D + I); 0.5 when both are 0."""
    total = d + i
    return d / total if total > 0 else 0.5


def is_deterministic_step(d: float, i: float) -> bool:
    """A step runs as plain code when D/(D+I) > 0.6, otherwise it is an intelligence point."""
    return deterministic_share(d, i) > INTELLIGENCE_PLACEMENT


def step_scores(tool: str) -> tuple[float, float]:
    return STEP_SCORES.get(tool, DEFAULT_STEP_SCORE)


def rounded(value: float, places: int = 2) -> float:
    """A confidence as written into a file: rounded half up, never `nan`."""
    if math.isnan(value):
        return 0.0
    return math.floor(value * 10**places + 0.5) / 10**places
