"""Exchange fitness, trial outcome and single-source cap: pure maths, no Django."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

MIN_FITNESS = 0.3
TRIAL_DAYS = 30
SOURCE_CAP_SHARE = 0.20
# Engrams one key may place however small the local store is: without it a new installation
# (0 active engrams, so 20 % of nothing) could never import anything.
SOURCE_CAP_MIN_ITEMS = 5
DUPLICATE_COSINE = 0.9

WEIGHT_REACH = 0.4
WEIGHT_RETRIEVAL = 0.3
WEIGHT_AGE = 0.2
WEIGHT_CONSISTENCY = 0.1
# log2(1 + adoption·diversity) saturates at 6, i.e. adoption·diversity = 63.
REACH_SATURATION_BITS = 6.0
# ln(1 + age_days) saturates at ln 366, i.e. one year.
AGE_SATURATION_DAYS = 365.0

# SOURCE_CAP_SHARE as an exact fraction (1/5), so the boundary is compared without rounding.
_CAP = Fraction(str(SOURCE_CAP_SHARE))

TrialOutcome = Literal["promote", "retire"]


def fitness(
    *,
    adoption: float,
    diversity: float,
    rs_avg: float,
    age_days: float,
    contradiction_rate: float,
) -> float:
    """Return exchange fitness in [0,1]; counts below 0 and NaN count as 0, rates clamp to [0,1]."""
    adoption, diversity = _non_negative(adoption), _non_negative(diversity)
    # Guarded so an infinite count times a zero one gives 0, not NaN.
    reach_product = adoption * diversity if adoption > 0 and diversity > 0 else 0.0
    reach = min(1.0, math.log2(1.0 + reach_product) / REACH_SATURATION_BITS)
    age = min(1.0, math.log1p(_non_negative(age_days)) / math.log1p(AGE_SATURATION_DAYS))
    # fsum keeps the all-saturated case at exactly 1.0 rather than 0.9999999999999999.
    score = math.fsum(
        (
            WEIGHT_REACH * reach,
            WEIGHT_RETRIEVAL * _unit(rs_avg),
            WEIGHT_AGE * age,
            WEIGHT_CONSISTENCY * (1.0 - _unit(contradiction_rate)),
        )
    )
    return min(1.0, max(0.0, score))


def source_cap_allows(items_from_key_after_import: int, active_engrams_after_import: int) -> bool:
    """Return whether one key's items stay within 20 % of active engrams, both counted post-import."""
    # Both counts are taken as if the import had happened: the numerator is every engram from the
    # key (already held plus this packet's), the denominator the owner's active engrams plus this
    # packet's items. Nothing from the key always passes; an empty denominator refuses anything.
    if items_from_key_after_import < 0 or active_engrams_after_import < 0:
        raise ValueError("counts must be non-negative")
    if items_from_key_after_import == 0:
        return True
    return (
        items_from_key_after_import * _CAP.denominator
        <= active_engrams_after_import * _CAP.numerator
    )


def source_cap_allowance(active_engrams: int, *, minimum: int = SOURCE_CAP_MIN_ITEMS) -> int:
    """Return how many live engrams one verified key may place: max(minimum, ⌊20 % · active⌋)."""
    # The share is taken of the owner's active engrams before the import; items are then
    # accepted in packet order while the key holds fewer than this, the overflow refused.
    if active_engrams < 0 or minimum < 0:
        raise ValueError("counts must be non-negative")
    return max(minimum, active_engrams * _CAP.numerator // _CAP.denominator)


def trial_outcome(followed: int, positive: int, contradicted: int, negative: int) -> TrialOutcome:
    """Return 'promote' when reinforced (followed + positive > 0, net non-negative), else 'retire'."""
    if min(followed, positive, contradicted, negative) < 0:
        raise ValueError("counts must be non-negative")
    support = followed + positive
    against = contradicted + negative
    return "promote" if support > 0 and support - against >= 0 else "retire"


def _non_negative(value: float) -> float:
    """Return value, or 0 when it is negative or NaN (infinity stays, and saturates later)."""
    return value if value > 0 else 0.0


def _unit(value: float) -> float:
    """Return value clamped to [0,1], NaN counting as 0."""
    return min(1.0, value) if value > 0 else 0.0
