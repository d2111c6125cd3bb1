"""Extra lines for inject's consider bucket from other apps (memory never imports them).

An app registers a provider from its `AppConfig.ready()`; `inject` asks every provider for
lines after it has ranked its own engrams. A provider must be cheap (no LLM, a query or two)
and decide itself whether its owner turned it on; one that raises is skipped, never breaks
inject.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memory.maths import ranking, textnorm

log = logging.getLogger(__name__)

CONSIDER_EXTRA_HEADING = "\n### Worked before\n"


@dataclass(frozen=True)
class ConsiderLine:
    id: str  # the provider's own id (e.g. a success pattern's key), never an engram id
    statement: str
    score: float


ConsiderProvider = Callable[..., list[ConsiderLine]]
PROVIDERS: list[ConsiderProvider] = []


def consider_provider_register(provider: ConsiderProvider) -> None:
    """Add a provider, called as provider(owner=, prompt=, now=, limit=) (idempotent)."""
    if provider not in PROVIDERS:
        PROVIDERS.append(provider)


def consider_extend(
    *, owner: Any, prompt: str, now: datetime, rendered: str, budget_tokens: int
) -> tuple[str, list[dict[str, Any]]]:
    """The providers' lines that fit in what is left of the budget: the markdown with them
    appended under "Worked before", and their consider items."""
    if not PROVIDERS:
        return rendered, []
    left = budget_tokens - textnorm.estimate_tokens(rendered)
    items: list[dict[str, Any]] = []
    lines: list[str] = []
    for provider in PROVIDERS:
        try:
            found = provider(owner=owner, prompt=prompt, now=now, limit=ranking.MAX_CONSIDER)
        except Exception:  # a plug-in's failure must never break inject
            log.exception("consider provider %r failed", provider)
            continue
        for line in found:
            text = ranking.render_line(
                line.id, ranking.clip_statement(line.statement, ranking.CONSIDER_STATEMENT_CHARS)
            )
            tokens = textnorm.estimate_tokens(text)
            if tokens > left:
                break
            left -= tokens
            lines.append(text + "\n")
            items.append(
                {"id": line.id, "statement": line.statement, "score": line.score, "tokens": tokens}
            )
    if not lines:
        return rendered, []
    head = rendered if rendered else ranking.RENDER_HEADER
    return head + CONSIDER_EXTRA_HEADING + "".join(lines), items
