"""Success-pattern maths (DESIGN "Success patterns"): pure functions, no Django.

Ranking (the eval store: quality multiplier, recency) and survival (success score, reuse,
aging) are separate signals on purpose: nothing here lets reuse or age change a ranking, and
nothing lets an evaluation keep a stale pattern alive.
"""

from __future__ import annotations

import graphlib
import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

DUPLICATE_COSINE = 0.92
MULTIPLIER_WINDOW = 5  # evaluations the quality multiplier reads, newest last
MULTIPLIER_NONE = 0.75  # the multiplier of a pattern never evaluated
RECENCY_HALF_LIFE_DAYS = 30.0
REUSE_BONUS = 0.1
SCORE_MAX = 10.0
NEUTRAL_SCORE = 5.0  # the score whose multiplier is MULTIPLIER_NONE
RUBRIC_SOURCE = "rubric"
RUBRIC_WEIGHT = 0.25  # a rubric score moves the multiplier a quarter as far as a judge's
AGING_WEEKLY = 0.98
RETIRE_BELOW = 0.1
SPREAD_FLAG = 1.5  # judges disagree when max - min is above this
CLUSTER_JACCARD = 0.4  # feedback joins a cluster when Jaccard is above this
CLUSTER_SURFACES_AT = 2.0
CLUSTER_WEEKLY = 0.9  # a cluster's count loses 10 % per whole week since it was last seen
WEEK_SECONDS = 7 * 86400.0

_WORD = re.compile(r"[a-z0-9_]+")
# Words that say nothing about what was wrong; removed before Jaccard so that two feedbacks do
# not cluster only because both are English sentences.
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "into",
        "is",
        "it",
        "its",
        "no",
        "not",
        "of",
        "on",
        "or",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "were",
        "which",
        "while",
        "will",
        "with",
        "without",
        "should",
        "could",
        "would",
        "does",
        "did",
        "do",
        "can",
    ]
)


def clamp_score(value: float) -> float:
    """A 0-10 score clamped to its range (NaN counts as 0)."""
    if math.isnan(value):
        return 0.0
    return max(0.0, min(SCORE_MAX, float(value)))


# --- ranking -------------------------------------------------------------------------------


def ranked_score(score: float, source: str = "") -> float:
    """The score as ranking reads it: a rubric's (no key, a heuristic) moves a quarter as far
    from the neutral 5 as a judge's or a caller's, so it shifts the multiplier by at most a
    quarter of their weight (0.75 +- 0.0625 instead of +- 0.25)."""
    score = clamp_score(score)
    if source == RUBRIC_SOURCE:
        return NEUTRAL_SCORE + RUBRIC_WEIGHT * (score - NEUTRAL_SCORE)
    return score


def quality_multiplier(scores: Sequence[float], sources: Sequence[str] = ()) -> float:
    """0.5 + 0.5·median(last 5 scores)/10, scores oldest first; 0.75 with none. In [0.5, 1].

    `sources` (parallel to `scores`, when given) weighs rubric scores by RUBRIC_WEIGHT."""
    start = max(0, len(scores) - MULTIPLIER_WINDOW)
    recent = [
        ranked_score(s, sources[start + i] if len(sources) == len(scores) else "")
        for i, s in enumerate(scores[start:])
    ]
    if not recent:
        return MULTIPLIER_NONE
    return 0.5 + 0.5 * statistics.median(recent) / SCORE_MAX


def recency_factor(age_days: float) -> float:
    """0.5^(age/30 days): 1 when new, 0.5 at 30 days; a negative age (clock skew) counts as 0."""
    return 0.5 ** (max(0.0, age_days) / RECENCY_HALF_LIFE_DAYS)


def recall_score(
    *,
    similarity: float,
    multiplier: float,
    age_days: float,
    eval_weighted: bool = True,
    recency_weight: float = 0.0,
) -> float:
    """similarity x multiplier (1 when not eval-weighted) x ((1 - w) + w·recency), w in [0, 1].

    With w = 0 age plays no part; with w = 1 a 30-day-old pattern counts half.
    """
    w = max(0.0, min(1.0, recency_weight))
    quality = multiplier if eval_weighted else 1.0
    return similarity * quality * ((1.0 - w) + w * recency_factor(age_days))


# --- survival ------------------------------------------------------------------------------


def weeks_between(anchor: datetime, now: datetime) -> float:
    """Fractional weeks from `anchor` to `now`, never negative."""
    return max(0.0, (now - anchor).total_seconds() / WEEK_SECONDS)


def aged_score(score0: float, anchor: datetime, now: datetime) -> float:
    """score₀ · 0.98^weeks since the anchor: computed from the anchor, so it never compounds."""
    return clamp_score(score0) * AGING_WEEKLY ** weeks_between(anchor, now)


def is_retired(score: float) -> bool:
    return score < RETIRE_BELOW


def reused_score(current: float) -> float:
    """The success score after one reuse: +0.1, capped at 10 (survival only)."""
    return min(SCORE_MAX, clamp_score(current) + REUSE_BONUS)


# --- judges --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """Several judges' scores combined: median, spread (max - min), whether they disagree, and
    the index of the worst judge (whose feedback is kept)."""

    median: float
    spread: float
    flagged: bool
    worst: int


def judges_combine(scores: Sequence[float]) -> Verdict:
    """Median of the clamped scores, spread max - min, flagged when spread > 1.5."""
    if not scores:
        raise ValueError("no judge scores")
    clamped = [clamp_score(s) for s in scores]
    spread = max(clamped) - min(clamped)
    worst = min(range(len(clamped)), key=lambda i: (clamped[i], i))
    return Verdict(
        median=float(statistics.median(clamped)),
        spread=spread,
        flagged=spread > SPREAD_FLAG,
        worst=worst,
    )


# --- feedback clusters ---------------------------------------------------------------------


def feedback_words(text: str) -> frozenset[str]:
    """The content words of a feedback text, lower-cased, stop words removed."""
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1)


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    """|a & b| / |a | b|; 0 when both are empty."""
    sa, sb = set(a), set(b)
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0


def cluster_joins(a: Iterable[str], b: Iterable[str]) -> bool:
    return jaccard(a, b) > CLUSTER_JACCARD


def cluster_weight(count: float, last_seen: datetime, now: datetime) -> float:
    """count · 0.9^(whole weeks since last seen): 10 % less each full week without a new member."""
    return count * CLUSTER_WEEKLY ** math.floor(weeks_between(last_seen, now))


def cluster_surfaces(count: float, last_seen: datetime, now: datetime) -> bool:
    """A cluster is a recurring issue while its decayed count is at least 2."""
    return cluster_weight(count, last_seen, now) >= CLUSTER_SURFACES_AT - 1e-9


# --- compose: contract validation ----------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class ContractError:
    """One broken contract: the stage, the field and why."""

    stage: str
    field: str
    message: str


def pipeline_validate(stages: Sequence[Stage], given: Iterable[str] = ()) -> list[ContractError]:
    """Every input is given or produced by an earlier stage, and the stages have no cycle.

    A cycle (stage A needs what B makes and B needs what A makes, directly or through others)
    is reported once per stage on it; an input produced only later is reported as out of order;
    an input nobody produces as missing. An empty list means the pipeline is valid.
    """
    errors: list[ContractError] = []
    given_set = set(given)
    producers: dict[str, list[int]] = {}
    for index, stage in enumerate(stages):
        for out in stage.outputs:
            producers.setdefault(out, []).append(index)
    names = [s.name for s in stages]
    for name in sorted({n for n in names if names.count(n) > 1}):
        errors.append(ContractError(name, "name", f"stage name {name!r} is used more than once"))

    graph: dict[int, set[int]] = {i: set() for i in range(len(stages))}
    for index, stage in enumerate(stages):
        for field in stage.inputs:
            if field in given_set:
                continue
            graph[index].update(p for p in producers.get(field, []) if p != index)
    on_cycle: set[int] = set()
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        on_cycle = set(exc.args[1])
    for index, stage in enumerate(stages):
        for field in stage.inputs:
            if field in given_set:
                continue
            makers = producers.get(field, [])
            if any(p < index for p in makers):
                continue
            if index in on_cycle and any(p in on_cycle for p in makers):
                cycle = " → ".join(stages[i].name for i in sorted(on_cycle))
                errors.append(
                    ContractError(stage.name, field, f"input {field!r} is part of a cycle: {cycle}")
                )
            elif makers == [index] or (makers and all(p == index for p in makers)):
                errors.append(
                    ContractError(stage.name, field, f"input {field!r} is only its own output")
                )
            elif makers:
                later = stages[min(p for p in makers if p != index)].name
                errors.append(
                    ContractError(
                        stage.name,
                        field,
                        f"input {field!r} is produced only by the later stage {later!r}",
                    )
                )
            else:
                errors.append(
                    ContractError(
                        stage.name,
                        field,
                        f"input {field!r} is neither given nor produced by an earlier stage",
                    )
                )
    return errors


# --- adversarial detection and the deterministic rubric ------------------------------------

_LITERAL = r"""("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|-?\d+(?:\.\d+)?)"""
_RETURN_LITERAL = re.compile(rf"\b(?:return|print|console\.log|puts|echo)\b\s*\(?\s*{_LITERAL}")
_IF_EQ_RETURN = re.compile(
    rf"\bif\b[^\n]*?==\s*{_LITERAL}[^\n]*?(?::|\)\s*\{{?|\bthen\b)\s*\n?\s*return\s+{_LITERAL}"
)
_TEST_MARKERS = re.compile(
    r"(\bdef test_\w+|\bassert\b|\bdescribe\(|\bit\(|\btest\(|#\[test\]|@Test\b|"
    r"\bunittest\b|\bpytest\b|\bexpect\()"
)
_DEFINITIONS = re.compile(r"^\s*(?:async\s+)?(?:def|class|function|fn|func)\s+\w+", re.MULTILINE)
_COMMENT = re.compile(r'(^\s*(#|//|/\*|\*)|"""|\'\'\')', re.MULTILINE)
HARDCODED_BRANCHES = 3  # `if x == literal: return literal` this many times is a lookup table


def _unquote(literal: str) -> str:
    return literal[1:-1] if literal[:1] in "\"'" else literal


def hardcoding_signals(code: str, expected_outputs: Iterable[str] = ()) -> list[str]:
    """Reasons to believe `code` hard-codes the expected outputs instead of computing them.

    Two checks: an expected output (when known) returned or printed as a literal; and
    `if input == literal: return literal` repeated HARDCODED_BRANCHES times or more.
    """
    reasons: list[str] = []
    returned = {_unquote(m.group(1)) for m in _RETURN_LITERAL.finditer(code)}
    for expected in expected_outputs:
        text = str(expected).strip()
        if text and text in returned:
            reasons.append(f"the expected output {text!r} is returned as a literal")
    branches = len(_IF_EQ_RETURN.findall(code))
    if branches >= HARDCODED_BRANCHES:
        reasons.append(f"{branches} branches map a literal input straight to a literal output")
    return reasons


@dataclass(frozen=True)
class RubricResult:
    """The deterministic rubric's score (0-10), what it checked and why it took points away."""

    score: float
    checks: Mapping[str, bool]
    feedback: str
    hardcoding: tuple[str, ...]


RUBRIC_POINTS = {
    "non_empty": 2.0,  # there is code at all
    "structured": 2.0,  # it defines functions or classes
    "documented": 1.0,  # it has comments or docstrings
    "has_tests": 3.0,  # it carries tests or assertions
    "no_hardcoding": 2.0,  # it does not hard-code expected outputs
}


def rubric_score(code: str, expected_outputs: Iterable[str] = ()) -> RubricResult:
    """Score what can be checked without running anything: structure, tests, hard-coding.

    Points (sum 10): non-empty 2, defines functions/classes 2, comments 1, tests 3, no
    hard-coding 2. A hard-coded solution also loses its test points: its tests prove nothing.
    """
    text = code.strip()
    hardcoding = tuple(hardcoding_signals(code, expected_outputs)) if text else ()
    checks = {
        "non_empty": bool(text),
        "structured": bool(_DEFINITIONS.search(code)),
        "documented": bool(_COMMENT.search(code)),
        "has_tests": bool(_TEST_MARKERS.search(code)) and not hardcoding,
        "no_hardcoding": bool(text) and not hardcoding,
    }
    score = sum(RUBRIC_POINTS[name] for name, ok in checks.items() if ok)
    missing = {
        "non_empty": "there is no code",
        "structured": "no function or class is defined",
        "documented": "no comment or docstring says why",
        "has_tests": "no tests or assertions",
        "no_hardcoding": "it hard-codes expected outputs",
    }
    problems = [missing[name] for name, ok in checks.items() if not ok]
    feedback = "; ".join([*problems, *hardcoding]) or "structure, tests and no hard-coding: ok"
    return RubricResult(score=score, checks=checks, feedback=feedback, hardcoding=hardcoding)
