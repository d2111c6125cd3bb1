"""Ranking for recall and inject: RRF fusion, relevance, injection score, buckets, spreading, render.

Pure Python and numpy, no Django: callers read rows, build frozen `Candidate`s and get frozen
`Selection`s back (DESIGN "Retrieval (recall) and injection (inject)").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from memory.maths.textnorm import estimate_tokens

RRF_K = 60
FUSION_LEGS = 2  # lexical + dense
MAX_FUSED = FUSION_LEGS / (RRF_K + 1)  # ranked first by both legs

# Rank fusion says only how an engram compares with the others, never whether any of them is
# relevant: the dense leg always returns its nearest neighbours, however far. So relevance is the
# fused score over its maximum, times the evidence that the engram matches at all: 1 for a lexical
# (full-text) match, else a ramp on the dense cosine from DENSE_FLOOR (0, unrelated for MiniLM) to
# DENSE_FULL (1). With no lexical match and a cosine under DENSE_FLOOR an engram is irrelevant.
DENSE_FLOOR = 0.3
DENSE_FULL = 0.5
RELEVANCE_FLOOR = 0.1  # below this nothing is injected (abstention)

FB_POSITIVE_STEP = 0.05
FB_POSITIVE_CAP = 0.3
FB_NEGATIVE_STEP = 0.1
FB_NEGATIVE_FLOOR = 0.5
EMO_NEUTRAL = 5
EMO_STEP = 0.04
CONSOLIDATED_BONUS = 1.1

BUDGET_TOKENS = 2000
MAX_MAIN = 10  # constraints + directives
MAX_CONSIDER = 5
CONSIDER_TOKENS = 200
DIVERSITY_COSINE = 0.9
SPREAD_MAX_ITEMS = 3
SPREAD_MAX_TOKENS = 480

MAIN_BANDS = frozenset({"active"})
CONSIDER_BANDS = frozenset({"active", "fading"})
ESCALATION_ORDER = {"reminder": 2, "emphasised": 1, "advisory": 0}
POLARITY_DONT = "dont"

CONSTRAINTS = "constraints"
DIRECTIVES = "directives"
CONSIDER = "consider"
RELATED = "related"
SECTIONS = (
    (CONSTRAINTS, "Constraints"),
    (DIRECTIVES, "Directives"),
    (CONSIDER, "Consider"),
    (RELATED, "Related"),
)

RENDER_HEADER = (
    "## Engram memory\n"
    "Lessons from earlier work. Name an id when you report that one helped or misled.\n"
)
RENDER_MAX_CHARS = 10_000
MAX_LINE_CHARS = 400  # ~100 tokens per main or related line
CONSIDER_STATEMENT_CHARS = 120  # five consider lines fit in 200 tokens
ELLIPSIS = "…"


@dataclass(frozen=True)
class Candidate:
    """One fused retrieval hit with what injection scoring needs (rs_eff in [0,1], ew 1-10)."""

    id: str
    statement: str
    fused: float
    rs_eff: float
    polarity: str | None = None
    feedback_net: int = 0
    emotional_weight: float = EMO_NEUTRAL
    consolidated: bool = False
    band: str = "active"
    escalation: str = "advisory"
    lexical_hit: bool | None = None
    dense_cosine: float | None = None
    embedding: Any = None  # sequence of floats or numpy vector; None skips the diversity check
    consider_only: bool = False  # e.g. an imported lesson on trial: at most a consider line
    components: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Picked:
    """One engram placed in a bucket, with its statement as rendered and its line's tokens."""

    id: str
    statement: str
    score: float
    bucket: str
    rank: int
    tokens: int
    escalation: str = "advisory"

    @property
    def escalated(self) -> bool:
        return ESCALATION_ORDER.get(self.escalation, 0) > 0


@dataclass(frozen=True)
class Selection:
    """What one injection surfaces, bucket by bucket, within budget_tokens (headers included)."""

    constraints: tuple[Picked, ...] = ()
    directives: tuple[Picked, ...] = ()
    consider: tuple[Picked, ...] = ()
    related: tuple[Picked, ...] = ()
    budget_tokens: int = BUDGET_TOKENS

    @property
    def items(self) -> tuple[Picked, ...]:
        return self.constraints + self.directives + self.consider + self.related

    @property
    def main(self) -> tuple[Picked, ...]:
        return self.constraints + self.directives

    @property
    def is_empty(self) -> bool:
        return not self.items

    @property
    def tokens_used(self) -> int:
        """Tokens of all lines plus the reserved header and section headings (0 when empty)."""
        if self.is_empty:
            return 0
        return HEADER_TOKENS + sum(item.tokens for item in self.items)

    @property
    def tokens_left(self) -> int:
        return max(0, self.budget_tokens - max(self.tokens_used, HEADER_TOKENS))


HEADER_TOKENS = estimate_tokens(RENDER_HEADER) + sum(
    estimate_tokens(f"\n### {title}\n") for _, title in SECTIONS
)


def rrf(
    rankings: Sequence[Sequence[str]],
    *,
    k: int = RRF_K,
    tiebreak: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """Reciprocal rank fusion Σ 1/(k + rank), rank from 1; ties by tiebreak (higher first), then id."""
    parts: dict[str, list[float]] = {}
    for ranking in rankings:
        seen: set[str] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:  # a leg listing an id twice counts its best rank only
                continue
            seen.add(item)
            parts.setdefault(item, []).append(1.0 / (k + rank))
    # fsum is exactly rounded, so equal rank sets give equal scores whatever the leg order.
    fused = [(item, math.fsum(terms)) for item, terms in parts.items()]
    keys = tiebreak or {}
    fused.sort(key=lambda pair: (-pair[1], -keys.get(pair[0], -math.inf), pair[0]))
    return fused


def relevance(
    fused: float,
    max_possible: float = MAX_FUSED,
    *,
    lexical_hit: bool | None = None,
    dense_cosine: float | None = None,
) -> float:
    """Fused score / max_possible in [0,1], times match evidence (see DENSE_FLOOR); 0 = irrelevant.

    Evidence is 1 for a lexical match, a linear ramp of the dense cosine from DENSE_FLOOR to
    DENSE_FULL otherwise, and 1 when the caller passes neither signal (rank only).
    """
    if max_possible <= 0 or fused <= 0:
        return 0.0
    ranked = min(1.0, fused / max_possible)
    if lexical_hit or (lexical_hit is None and dense_cosine is None):
        evidence = 1.0
    elif dense_cosine is None:
        evidence = 0.0
    else:
        evidence = min(1.0, max(0.0, (dense_cosine - DENSE_FLOOR) / (DENSE_FULL - DENSE_FLOOR)))
    return ranked * evidence


def f_fb(net: int) -> float:
    """Feedback factor from net feedback count: up to 1.3 for positive, down to 0.5 for negative."""
    if net > 0:
        return 1.0 + min(FB_POSITIVE_STEP * net, FB_POSITIVE_CAP)
    if net < 0:
        return max(1.0 + FB_NEGATIVE_STEP * net, FB_NEGATIVE_FLOOR)
    return 1.0


def f_emo(emotional_weight: float) -> float:
    """Emotional-weight factor, 1 at weight 5, ±0.04 per point (weight 1..10 gives 0.84..1.2)."""
    return 1.0 + (emotional_weight - EMO_NEUTRAL) * EMO_STEP


def injection_score(
    relevance: float,
    rs_eff: float,
    net: int,
    emotional_weight: float,
    consolidated: bool,
) -> float:
    """s = relevance · (0.5 + 0.5·RS_eff) · f_fb · f_emo · (1.1 if consolidated)."""
    score = relevance * (0.5 + 0.5 * rs_eff) * f_fb(net) * f_emo(emotional_weight)
    return score * CONSOLIDATED_BONUS if consolidated else score


# The activation prior as a tie-breaker (issue #18). DESIGN's factor (0.5 + 0.5·RS_eff)·f_fb·
# f_emo·consolidation can halve a relevant engram's score, and on long conversations replayed in
# time it outweighed relevance (a turn 30 active days old against one from today: 0.63 vs 0.85).
# Relevance now comes first: a candidate's prior is compared with the best prior among the
# query's candidates, and the gap takes at most PRIOR_SPAN off its relevance, through a curve
# that passes small gaps almost unchanged (near-equals are still told apart by strength, feedback
# and emotion) and saturates for large ones. What was stated within the last RECENT_SECONDS
# (learned, repeated or edited) leads near-equals by RECENT_BONUS: a session's new rule first.
PRIOR_SPAN = 0.03
RECENT_BONUS = 0.1
RECENT_SECONDS = 86_400.0


def activation_prior(rs_eff: float, net: int, emotional_weight: float, consolidated: bool) -> float:
    """DESIGN's prior (0.5 + 0.5·RS_eff)·f_fb·f_emo·(1.1 if consolidated)."""
    prior = (0.5 + 0.5 * rs_eff) * f_fb(net) * f_emo(emotional_weight)
    return prior * CONSOLIDATED_BONUS if consolidated else prior


def prior_tiebreak(prior: float, best_prior: float, *, span: float = PRIOR_SPAN) -> float:
    """1 - span·(1 - exp(-(best_prior - prior)/span)): 1 for the best prior, never below 1 - span.

    A gap g much smaller than span costs about g (so near-equals keep the prior's order); a
    large gap costs span at most.
    """
    gap = max(0.0, best_prior - prior)
    if span <= 0:
        return 1.0
    return 1.0 - span * (1.0 - math.exp(-gap / span))


def ranked_score(
    relevance: float, prior: float, best_prior: float, *, recent: bool = False
) -> float:
    """The score recall and inject rank by: relevance · prior_tiebreak · (1 + RECENT_BONUS)."""
    score = relevance * prior_tiebreak(prior, best_prior)
    return score * (1.0 + RECENT_BONUS) if recent else score


def candidate_score(candidate: Candidate, *, max_fused: float = MAX_FUSED) -> float:
    """Injection score of a candidate; 0 when its relevance is under RELEVANCE_FLOOR."""
    rel = relevance(
        candidate.fused,
        max_fused,
        lexical_hit=candidate.lexical_hit,
        dense_cosine=candidate.dense_cosine,
    )
    if rel < RELEVANCE_FLOOR:
        return 0.0
    return injection_score(
        rel,
        candidate.rs_eff,
        candidate.feedback_net,
        candidate.emotional_weight,
        candidate.consolidated,
    )


def clip_statement(statement: str, max_chars: int = MAX_LINE_CHARS) -> str:
    """The statement on one line (whitespace collapsed), cut to max_chars with an ellipsis."""
    text = " ".join(statement.split())
    if len(text) <= max_chars:
        return text
    return text[: max_chars - len(ELLIPSIS)].rstrip() + ELLIPSIS


def render_line(engram_id: str, statement: str, escalation: str = "advisory") -> str:
    """One markdown bullet for an engram, without its newline; escalated ones say IMPORTANT."""
    emphasis = "**IMPORTANT:** " if ESCALATION_ORDER.get(escalation, 0) > 0 else ""
    return f"- {emphasis}[{engram_id}] {statement}"


def line_tokens(
    engram_id: str,
    statement: str,
    escalation: str = "advisory",
    max_chars: int = MAX_LINE_CHARS,
) -> int:
    """Tokens one engram's line costs once clipped and rendered, newline included."""
    line = render_line(engram_id, clip_statement(statement, max_chars), escalation)
    return estimate_tokens(line + "\n")


def _unit(vector: Any) -> Any:
    """The vector scaled to length 1 (float64), or None for a zero vector (similar to nothing)."""
    array = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else None


def _ordered(bucket: str, picked: list[tuple[Candidate, float, int]]) -> tuple[Picked, ...]:
    # Escalated engrams first (reminder before emphasised), then by score, then id for stability.
    picked.sort(key=lambda p: (-ESCALATION_ORDER.get(p[0].escalation, 0), -p[1], p[0].id))
    max_chars = CONSIDER_STATEMENT_CHARS if bucket == CONSIDER else MAX_LINE_CHARS
    return tuple(
        Picked(
            id=c.id,
            statement=clip_statement(c.statement, max_chars),
            score=score,
            bucket=bucket,
            rank=rank,
            tokens=tokens,
            escalation=c.escalation,
        )
        for rank, (c, score, tokens) in enumerate(picked, start=1)
    )


def select(
    candidates: Sequence[Candidate],
    *,
    budget_tokens: int = BUDGET_TOKENS,
    max_main: int = MAX_MAIN,
    max_consider: int = MAX_CONSIDER,
    consider_tokens: int = CONSIDER_TOKENS,
    diversity: float = DIVERSITY_COSINE,
    max_fused: float = MAX_FUSED,
    scores: Mapping[str, float] | None = None,
) -> Selection:
    """Fill constraints/directives (active, ≤ max_main) and consider (next best and fading).

    Candidates go by injection score (ties by id), or by `scores` when the caller has already
    scored them; one whose cosine to an already picked engram is ≥ diversity is skipped;
    dormant and retiring bands are never picked. Every line plus the header fits in
    budget_tokens, consider lines also in consider_tokens.
    """
    scored = [
        (
            c,
            scores[c.id]
            if scores is not None and c.id in scores
            else candidate_score(c, max_fused=max_fused),
        )
        for c in candidates
    ]
    scored = [(c, s) for c, s in scored if s > 0 and c.band in CONSIDER_BANDS]
    scored.sort(key=lambda pair: (-pair[1], pair[0].id))

    room = budget_tokens - HEADER_TOKENS
    consider_room = consider_tokens
    main: dict[str, list[tuple[Candidate, float, int]]] = {CONSTRAINTS: [], DIRECTIVES: []}
    consider: list[tuple[Candidate, float, int]] = []
    picked_units: Any = None  # rows: unit vectors of the picked engrams, for the diversity check
    seen: set[str] = set()

    for cand, score in scored:
        main_count = len(main[CONSTRAINTS]) + len(main[DIRECTIVES])
        if main_count >= max_main and len(consider) >= max_consider:
            break  # every bucket is full; the rest could only be skipped
        if cand.id in seen:
            continue
        unit = _unit(cand.embedding) if cand.embedding is not None else None
        if (
            unit is not None
            and picked_units is not None
            and float(np.max(picked_units @ unit)) >= diversity
        ):
            continue
        placed = False
        if cand.band in MAIN_BANDS and not cand.consider_only and main_count < max_main:
            tokens = line_tokens(cand.id, cand.statement, cand.escalation)
            if tokens <= room:
                bucket = CONSTRAINTS if cand.polarity == POLARITY_DONT else DIRECTIVES
                main[bucket].append((cand, score, tokens))
                room -= tokens
                placed = True
        if not placed and len(consider) < max_consider:
            tokens = line_tokens(
                cand.id, cand.statement, cand.escalation, max_chars=CONSIDER_STATEMENT_CHARS
            )
            if tokens <= min(room, consider_room):
                consider.append((cand, score, tokens))
                room -= tokens
                consider_room -= tokens
                placed = True
        if placed:
            seen.add(cand.id)
            if unit is not None:
                picked_units = (
                    unit[None, :] if picked_units is None else np.vstack([picked_units, unit])
                )

    return Selection(
        constraints=_ordered(CONSTRAINTS, main[CONSTRAINTS]),
        directives=_ordered(DIRECTIVES, main[DIRECTIVES]),
        consider=_ordered(CONSIDER, consider),
        budget_tokens=budget_tokens,
    )


def spread(
    selected: Sequence[tuple[str, float]],
    associations: Mapping[str, Sequence[tuple[str, float]]],
    exclude: Set[str],
    *,
    token_of: Mapping[str, int],
    max_items: int = SPREAD_MAX_ITEMS,
    max_tokens: int = SPREAD_MAX_TOKENS,
) -> list[tuple[str, float]]:
    """One-hop spreading activation: (s / max_s) · strength, best per target, ≤ max_items/tokens.

    Targets already selected, in exclude, or without a token cost in token_of are skipped, so
    nothing loops back; strength is the edge's read-time (decayed) strength in [0, 0.95].
    """
    if not selected:
        return []
    max_s = max(score for _, score in selected)
    if max_s <= 0:
        return []
    blocked = set(exclude) | {engram_id for engram_id, _ in selected}
    best: dict[str, float] = {}
    for source, score in selected:
        for target, strength in associations.get(source, ()):
            if target in blocked or target not in token_of or strength <= 0 or score <= 0:
                continue
            value = (score / max_s) * strength
            if value > best.get(target, 0.0):
                best[target] = value
    ranked = sorted(best.items(), key=lambda pair: (-pair[1], pair[0]))
    out: list[tuple[str, float]] = []
    used = 0
    for target, value in ranked:
        if len(out) >= max_items:
            break
        if used + token_of[target] > max_tokens:
            continue
        out.append((target, value))
        used += token_of[target]
    return out


def with_related(
    selection: Selection,
    related: Sequence[tuple[str, str, float]],
    *,
    max_items: int = SPREAD_MAX_ITEMS,
    max_tokens: int = SPREAD_MAX_TOKENS,
) -> Selection:
    """The selection plus (id, statement, spread score) lines that fit its remaining budget."""
    room = min(max_tokens, selection.tokens_left)
    taken: list[tuple[Candidate, float, int]] = []
    present = {item.id for item in selection.items}
    for engram_id, statement, score in related:
        if len(taken) >= max_items or engram_id in present:
            continue
        tokens = line_tokens(engram_id, statement)
        if tokens > room:
            continue
        taken.append(
            (Candidate(id=engram_id, statement=statement, fused=0.0, rs_eff=0.0), score, tokens)
        )
        present.add(engram_id)
        room -= tokens
    # Spread order is the caller's (by spread score); _ordered re-sorts by score, then id.
    return replace(selection, related=_ordered(RELATED, taken))


def render(selection: Selection) -> str:
    """Markdown block, one `- [ID] statement` line per engram, always < 10,000 chars; "" if empty."""
    if selection.is_empty:
        return ""
    out = [RENDER_HEADER]
    size = len(RENDER_HEADER)
    for bucket, title in SECTIONS:
        items: tuple[Picked, ...] = getattr(selection, bucket)
        if not items:
            continue
        max_chars = CONSIDER_STATEMENT_CHARS if bucket == CONSIDER else MAX_LINE_CHARS
        heading = f"\n### {title}\n"
        lines = []
        for item in items:
            statement = clip_statement(item.statement, max_chars)
            lines.append(render_line(item.id, statement, item.escalation) + "\n")
        for index, line in enumerate(lines):
            extra = len(line) + (len(heading) if index == 0 else 0)
            # Hard cap: drop the lines that would cross it, never cut one in the middle.
            if size + extra >= RENDER_MAX_CHARS:
                break
            if index == 0:
                out.append(heading)
            out.append(line)
            size += extra
    return "".join(out)


OLDER_VARIANT_FACTOR = 0.5  # an older variant of a rule is most likely superseded


@dataclass(frozen=True)
class Variant:
    """A ranked item for `newest_variant_first`: its scope, variant key, recency and score."""

    id: str
    scope: str
    key: str | None
    recency: float  # larger is newer: when the statement was last made (created, repeated, edited)
    score: float


def newest_variant_first(
    ranked: Sequence[Variant],
    *,
    older_factor: float = OLDER_VARIANT_FACTOR,
    contradicted: Iterable[tuple[str, str]] = (),
) -> list[tuple[str, float]]:
    """Re-rank variants of one rule (same scope and variant key) so the newest leads.

    `ranked` is in rank order. Within each group the newest member takes the group's best
    position and score; the older members take the remaining positions' scores times
    `older_factor`, as they are most likely superseded, and the list is re-sorted (stable, so
    ties keep their order). `contradicted` holds (id, id) pairs known to contradict each other
    (the write path's contradiction reviews): two such items in one scope are grouped as
    variants are, so the older one is demoted the same way even when its wording gives another
    variant key. Groups join transitively. Nothing is dropped: variants may also hold together
    (two decorators). Returns (id, score) in the new order.
    """
    parent = list(range(len(ranked)))

    def root(position: int) -> int:
        while parent[position] != position:
            parent[position] = parent[parent[position]]
            position = parent[position]
        return position

    def join(a: int, b: int) -> None:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    first: dict[tuple[str, str], int] = {}
    for position, item in enumerate(ranked):
        if item.key is not None:
            join(first.setdefault((item.scope, item.key), position), position)
    position_of = {item.id: position for position, item in enumerate(ranked)}
    for a, b in contradicted:
        pa, pb = position_of.get(a), position_of.get(b)
        if pa is not None and pb is not None and ranked[pa].scope == ranked[pb].scope:
            join(pa, pb)
    groups: dict[int, list[int]] = {}
    for position in range(len(ranked)):
        groups.setdefault(root(position), []).append(position)
    order = list(range(len(ranked)))
    older: set[int] = set()
    for positions in groups.values():
        if len(positions) < 2:
            continue
        newest = sorted(positions, key=lambda p: (-ranked[p].recency, ranked[p].id))
        for slot, member in zip(positions, newest, strict=True):
            order[slot] = member
        older.update(newest[1:])
    scored = [
        (ranked[member].id, ranked[slot].score * (older_factor if member in older else 1.0))
        for slot, member in enumerate(order)
    ]
    scored.sort(key=lambda pair: -pair[1])
    return scored
