"""How big a task call is before it is sent: token estimates for the budget's reservation, a fair
split of a character budget among the parts of one prompt, and packing lines into calls.

Pure Python (no Django, no SDK). Estimates err on the high side: a reservation that is too large
is settled with the real usage afterwards, one that is too small could let the budget be passed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

# Claude's tokenizer averages about 3.5 to 4 characters per token of English prose; code, JSON
# and other languages run denser. 3 keeps the estimate above the real count for most text.
CHARS_PER_TOKEN = 3.0
# The system prompt the Messages API adds when a tool is forced (Anthropic's pricing page lists
# 313 to 346 tokens by model), plus the request's own framing.
TOOL_USE_OVERHEAD_TOKENS = 350


def estimate_tokens(text: str) -> int:
    """Tokens `text` costs at most, roughly: characters / CHARS_PER_TOKEN, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def input_tokens(*, system: str, prompt: str, tool: Mapping[str, Any]) -> int:
    """Input tokens of one forced-tool request: system, user prompt, tool definition, overhead."""
    return (
        estimate_tokens(system)
        + estimate_tokens(prompt)
        + estimate_tokens(json.dumps(tool, ensure_ascii=False))
        + TOOL_USE_OVERHEAD_TOKENS
    )


def output_tokens(*, chars: int, items: int = 1, base_chars: int = 0) -> int:
    """The output cap (max_tokens) for an answer of `items` objects of at most `chars` characters
    each (JSON keys and quoting included) plus `base_chars` of framing."""
    return math.ceil((base_chars + chars * max(items, 0)) / CHARS_PER_TOKEN)


def share(total: int, wants: Mapping[str, int], weights: Mapping[str, float]) -> dict[str, int]:
    """Split `total` characters among parts that each want `wants[name]` characters.

    Each part gets its weighted share of what is left, never more than it wants; what a small
    part leaves goes to the others (water-filling), so the sum never exceeds `total` and no part
    gets less than its weighted share of the total unless it wants less.
    """
    alloc = dict.fromkeys(wants, 0)
    remaining = max(total, 0)
    active = [name for name, want in wants.items() if want > 0 and weights.get(name, 0) > 0]
    while active and remaining > 0:
        weight_sum = sum(weights[name] for name in active)
        offered = {name: int(remaining * weights[name] / weight_sum) for name in active}
        satisfied = [name for name in active if wants[name] - alloc[name] <= offered[name]]
        if not satisfied:
            for name in active:
                alloc[name] += offered[name]
            break
        for name in satisfied:
            give = wants[name] - alloc[name]
            alloc[name] += give
            remaining -= give
            active.remove(name)
    return alloc


def pack(sizes: Sequence[int], max_size: int, *, separator: int = 1) -> list[tuple[int, int]]:
    """Group consecutive items into runs of at most `max_size` (a separator counted between two
    items): `(start, end)` index ranges, in order. An item larger than `max_size` is a run alone."""
    runs: list[tuple[int, int]] = []
    start, used = 0, 0
    for index, size in enumerate(sizes):
        needed = size if index == start else used + separator + size
        if index > start and needed > max_size:
            runs.append((start, index))
            start, needed = index, size
        used = needed
    if sizes:
        runs.append((start, len(sizes)))
    return runs
