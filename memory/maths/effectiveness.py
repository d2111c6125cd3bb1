"""Effectiveness quadrants, maintenance proposals and the escalation ladder.

Pure Python (no Django). One implementation of the quadrant definition serves every screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Quadrant = Literal["working", "leech", "hidden_gem", "noise", "insufficient"]
Action = Literal["staleness_review", "rewrite_or_escalate", "broaden", "retire", "refine_keywords"]
Level = Literal["advisory", "emphasised", "reminder"]

MIN_OUTCOMES = 5
HIGH_EFFECTIVENESS = 0.5
FLAG_BELOW = 0.4
STALE_AFTER_DAYS = 90.0
IRRELEVANT_SHARE_ABOVE = 0.6
DEESCALATE_WINDOWS = 3

LEVELS: tuple[Level, ...] = ("advisory", "emphasised", "reminder")


@dataclass(frozen=True)
class EngramCounts:
    """Effectiveness counters of one engram; surfaced counts injections, the rest outcomes."""

    id: str
    surfaced: int
    followed: int
    contradicted: int
    ignored: int
    irrelevant: int

    @property
    def outcomes(self) -> int:
        return self.followed + self.contradicted + self.ignored + self.irrelevant


@dataclass(frozen=True)
class Classification:
    """Quadrant of one engram with the figures it was derived from (shares are in [0, 1])."""

    quadrant: Quadrant
    effectiveness: float | None
    often: bool
    flagged: bool
    irrelevant_share: float | None
    outcomes: int


def effectiveness(followed: int, contradicted: int, ignored: int, irrelevant: int) -> float | None:
    """followed / (followed + contradicted + ignored + irrelevant); None with no outcomes."""
    total = followed + contradicted + ignored + irrelevant
    if total == 0:
        return None
    return followed / total


def median(values: Sequence[float]) -> float:
    """Median of a non-empty sequence; the mean of the two middle values for an even count."""
    if not values:
        raise ValueError("median of an empty sequence")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[mid])
    return (ordered[mid - 1] + ordered[mid]) / 2.0


def classify(
    counts: Sequence[EngramCounts],
    *,
    min_outcomes: int = MIN_OUTCOMES,
    high: float = HIGH_EFFECTIVENESS,
    flag_below: float = FLAG_BELOW,
) -> dict[str, Classification]:
    """Classify all of one owner's engrams: often = surfaced strictly above the owner's median.

    The median is taken over every engram passed in, including those with too few outcomes to be
    classified, because it is the owner's median of surfaced counts. Engrams with fewer than
    `min_outcomes` outcomes are "insufficient" and never flagged; the rest are flagged when their
    effectiveness is below `flag_below`.
    """
    if not counts:
        return {}
    surfaced_median = median([c.surfaced for c in counts])
    result: dict[str, Classification] = {}
    for c in counts:
        outcomes = c.outcomes
        eff = effectiveness(c.followed, c.contradicted, c.ignored, c.irrelevant)
        often = c.surfaced > surfaced_median
        share = c.irrelevant / outcomes if outcomes else None
        quadrant: Quadrant
        if outcomes < min_outcomes or eff is None:
            quadrant = "insufficient"
            flagged = False
        else:
            is_high = eff >= high
            if often:
                quadrant = "working" if is_high else "leech"
            else:
                quadrant = "hidden_gem" if is_high else "noise"
            flagged = eff < flag_below
        result[c.id] = Classification(
            quadrant=quadrant,
            effectiveness=eff,
            often=often,
            flagged=flagged,
            irrelevant_share=share,
            outcomes=outcomes,
        )
    return result


def maintenance_action(
    classification: Classification,
    *,
    updated_days_ago: float,
    stale_after_days: float = STALE_AFTER_DAYS,
    irrelevant_share_above: float = IRRELEVANT_SHARE_ABOVE,
    min_outcomes: int = MIN_OUTCOMES,
) -> Action | None:
    """Maintenance proposal for one classified engram, or None; days are calendar days.

    "refine_keywords" wins over the quadrant proposals: an engram mostly judged irrelevant is being
    surfaced in the wrong contexts, so retiring (noise) or rewriting it (leech) would treat the
    retrieval symptom as a content problem. It can only coincide with leech or noise, because a
    share above 0.6 irrelevant keeps effectiveness below 0.4.
    """
    share = classification.irrelevant_share
    if (
        classification.outcomes >= min_outcomes
        and share is not None
        and share > irrelevant_share_above
    ):
        return "refine_keywords"
    quadrant = classification.quadrant
    if quadrant == "working":
        return "staleness_review" if updated_days_ago >= stale_after_days else None
    if quadrant == "leech":
        return "rewrite_or_escalate"
    if quadrant == "hidden_gem":
        return "broaden"
    if quadrant == "noise":
        return "retire"
    return None


def next_level(level: Level) -> Level | None:
    """The escalation level after `level`, or None when it is already the top (reminder)."""
    index = LEVELS.index(level)
    return LEVELS[index + 1] if index + 1 < len(LEVELS) else None


def previous_level(level: Level) -> Level | None:
    """The escalation level before `level`, or None when it is already advisory."""
    index = LEVELS.index(level)
    return LEVELS[index - 1] if index > 0 else None


def should_deescalate(
    window_effectiveness: Sequence[float],
    pre_escalation: float,
    *,
    windows: int = DEESCALATE_WINDOWS,
) -> bool:
    """True when the last 3 measurement windows (oldest first) are all ≥ the pre-escalation value."""
    if len(window_effectiveness) < windows:
        return False
    return all(value >= pre_escalation for value in window_effectiveness[-windows:])


def should_escalate_further(
    window_effectiveness: Sequence[float],
    pre_escalation: float,
    *,
    windows: int = DEESCALATE_WINDOWS,
) -> bool:
    """True when the last 3 measurement windows (oldest first) are all below the pre-escalation
    value: escalating did not help, so the next rung (reminder) is proposed."""
    if len(window_effectiveness) < windows:
        return False
    return all(value < pre_escalation for value in window_effectiveness[-windows:])
