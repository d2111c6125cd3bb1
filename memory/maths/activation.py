"""Activation maths: read-time retrieval-strength decay, feedback, storage strength and bands.

Pure Python (no Django). Retrieval strength is never decayed in storage; callers keep the stored
value plus its anchor and compute the effective value here at read time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Literal

RS_FLOOR = 0.05
LAMBDA_BASE = 0.05  # per active day
EMOTIONAL_WEIGHT_SCALE = 20.0
STORAGE_STRENGTH_DAMPING = 0.5

POSITIVE_FEEDBACK_STEP = 0.05
NEGATIVE_FEEDBACK_STEP = 0.10
STORAGE_STRENGTH_STEP = 0.05
RECONSOLIDATION_SEED = 0.3

ACTIVE_ABOVE = 0.5
FADING_FROM = 0.3
DORMANT_FROM = 0.1

Band = Literal["active", "fading", "dormant", "retire"]
BANDS: tuple[Band, ...] = ("active", "fading", "dormant", "retire")
Status = Literal["candidate", "active", "dormant", "retired"]
Signal = Literal["positive", "negative", "neutral"]


@dataclass(frozen=True)
class FeedbackResult:
    """Outcome of one feedback signal: the new stored RS, whether to re-anchor, and the SS rise."""

    rs: float
    reanchor: bool
    storage_strength_delta: float


def _clamp01(value: float) -> float:
    return min(1.0, max(0.0, value))


def decay_rate(
    emotional_weight: float,
    storage_strength: float,
    *,
    base: float = LAMBDA_BASE,
) -> float:
    """λ per active day: base·(1 - emotional_weight/20)·(1 - 0.5·SS); weight 1-10, SS in [0, 1]."""
    return (
        base
        * (1.0 - emotional_weight / EMOTIONAL_WEIGHT_SCALE)
        * (1.0 - STORAGE_STRENGTH_DAMPING * storage_strength)
    )


def effective_rs(
    rs: float,
    active_days: float,
    emotional_weight: float,
    storage_strength: float,
    *,
    floor: float = RS_FLOOR,
    base: float = LAMBDA_BASE,
) -> float:
    """RS_eff = F + (RS - F)·exp(-λ·d), d in active days since the anchor; clamped to [0, 1].

    A stored RS below the floor rises toward the floor, exactly as the formula says.
    """
    if active_days < 0:
        raise ValueError("active_days must be non-negative")
    lam = decay_rate(emotional_weight, storage_strength, base=base)
    return _clamp01(floor + (rs - floor) * math.exp(-lam * active_days))


def count_active_days(activity_days: Iterable[date], anchor: datetime, now: datetime) -> float:
    """Distinct activity dates d with anchor.date() < d ≤ now.date(); 0 when now precedes anchor.

    Dates are compared as given, so callers pass the anchor, now and the scope's activity dates in
    one timezone (the owner's). Activity on the anchor's own day does not count: the anchor already
    reflects that day. A scope with no activity since the anchor gives 0 however long ago it was.
    """
    start = anchor.date()
    end = now.date()
    seen: set[date] = set()
    for day in activity_days:
        # datetime subclasses date and does not compare with it, so reduce to the calendar day.
        as_date = day.date() if isinstance(day, datetime) else day
        if start < as_date <= end:
            seen.add(as_date)
    return float(len(seen))


def storage_strength_after_positive(
    storage_strength: float, *, step: float = STORAGE_STRENGTH_STEP
) -> float:
    """SS after a positive feedback or followed outcome: +0.05, capped at 1."""
    return min(1.0, storage_strength + step)


def storage_strength_after_reconsolidation(
    storage_strength: float, *, seed: float = RECONSOLIDATION_SEED
) -> float:
    """SS of a reconsolidation survivor: min(1, 2·SS), or 0.3 when SS was 0."""
    if storage_strength <= 0.0:
        return seed
    return min(1.0, 2.0 * storage_strength)


def apply_feedback(
    rs_eff: float,
    signal: Signal,
    *,
    positive_step: float = POSITIVE_FEEDBACK_STEP,
    negative_step: float = NEGATIVE_FEEDBACK_STEP,
    storage_step: float = STORAGE_STRENGTH_STEP,
) -> FeedbackResult:
    """New stored RS from the current effective RS: positive +0.05 (≤ 1), negative -0.10 (≥ 0).

    Positive and negative re-anchor at the returned value; positive also raises SS by 0.05.
    Neutral changes nothing but the caller's counter.
    """
    if signal == "positive":
        return FeedbackResult(
            rs=min(1.0, rs_eff + positive_step), reanchor=True, storage_strength_delta=storage_step
        )
    if signal == "negative":
        return FeedbackResult(
            rs=max(0.0, rs_eff - negative_step), reanchor=True, storage_strength_delta=0.0
        )
    if signal == "neutral":
        return FeedbackResult(rs=rs_eff, reanchor=False, storage_strength_delta=0.0)
    raise ValueError(f"unknown feedback signal: {signal!r}")


def band(
    rs_eff: float,
    *,
    active_above: float = ACTIVE_ABOVE,
    fading_from: float = FADING_FROM,
    dormant_from: float = DORMANT_FROM,
) -> Band:
    """Band of an effective RS: > 0.5 active, [0.3, 0.5] fading, [0.1, 0.3) dormant, < 0.1 retire.

    Active is strictly above 0.5, so 0.5 itself is fading; the other bands are closed at their
    lower end, so 0.3 is fading and 0.1 is dormant.
    """
    if rs_eff > active_above:
        return "active"
    if rs_eff >= fading_from:
        return "fading"
    if rs_eff >= dormant_from:
        return "dormant"
    return "retire"


def lifecycle_status_for_band(current_status: Status, current_band: Band) -> Status:
    """Status the periodic job moves to: active ↔ dormant only; candidate and retired unchanged.

    Active engrams in the dormant or retire band become dormant; dormant engrams back in the active
    or fading band become active. Applying it twice gives the same status (idempotent).
    """
    if current_status == "active" and current_band in ("dormant", "retire"):
        return "dormant"
    if current_status == "dormant" and current_band in ("active", "fading"):
        return "active"
    return current_status


def rs_series(
    anchors: Sequence[tuple[datetime, float]],
    active_days: Iterable[date],
    *,
    start: datetime,
    now: datetime,
    emotional_weight: float,
    storage_strength: float,
    floor: float,
    base: float,
    past_points: int,
    future_points: int,
    future_days: float,
) -> tuple[list[tuple[datetime, float]], list[tuple[datetime, float]]]:
    """RS_eff over time from stored anchors (time, RS), oldest first, in local time.

    Past: `past_points` even steps from `start` to `now`, plus a step at each later anchor (the
    decayed value just before it, then its stored value); between anchors the value decays
    over the active days. Future: `future_points` steps over `future_days` from the latest
    anchor, assuming every day active (the fastest decay) and no feedback.
    """
    days = list(active_days)

    def value(anchor: tuple[datetime, float], when: datetime, extra_days: float = 0.0) -> float:
        active = count_active_days(days, anchor[0], when)
        return effective_rs(
            anchor[1],
            active + extra_days,
            emotional_weight,
            storage_strength,
            floor=floor,
            base=base,
        )

    span = max((now - start).total_seconds(), 1.0)
    times = sorted(
        {start + timedelta(seconds=span * i / past_points) for i in range(past_points + 1)}
    )
    past: list[tuple[datetime, float]] = []
    index = 0
    for when in times:
        while index + 1 < len(anchors) and anchors[index + 1][0] <= when:
            nxt = anchors[index + 1]
            past.append((nxt[0], value(anchors[index], nxt[0])))
            past.append(nxt)
            index += 1
        past.append((when, value(anchors[index], when)))
    past.sort(key=lambda point: point[0])
    current = anchors[index]
    today_active = count_active_days(days, current[0], now)
    future = []
    for i in range(future_points + 1):
        ahead = future_days * i / future_points
        rs = effective_rs(
            current[1],
            today_active + math.floor(ahead),
            emotional_weight,
            storage_strength,
            floor=floor,
            base=base,
        )
        future.append((now + timedelta(days=ahead), rs))
    return past, future
