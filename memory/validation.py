"""Field rules for engrams and the records around them: one place for every limit and check.

The REST schemas, the dashboard forms, the import path and the services all read these, so a
statement too long for one is too long for all. No Django import: plain values in, cleaned
values out, `InvalidInput` (with the field) or a scan refusal out of the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from memory import scanner
from memory.errors import DomainError, InvalidInput

# --- limits (characters unless named otherwise) ------------------------------------------------

MAX_STATEMENT_CHARS = 4000  # an engram's statement
MAX_TEXT_CHARS = 8000  # rationale, trigger context, summaries
MAX_SHORT_CHARS = 200  # domain, one tag, one contraindication, a scope
MAX_NAME_CHARS = 100  # source, agent, channel, tool names
MAX_LIST_ITEMS = 50  # tags, contraindications, entities
MAX_TASK_CHARS = 4000  # a session's task
MAX_CWD_CHARS = 500
MAX_SESSION_ID_CHARS = 200
MAX_QUERY_CHARS = 500  # a list filter's words
MAX_LONG_TEXT_CHARS = 20000  # a prompt to inject for, a last assistant message
MIN_WEIGHT, MAX_WEIGHT = 1.0, 10.0  # emotional weight and confidence

# --- scopes ----------------------------------------------------------------------------------

GLOBAL_SCOPE = "global"
SCOPE_KINDS = ("project", "agent", "command", "space")
SCOPE_RE = re.compile(r"^(global|(project|agent|command|space):[\w.\-/]{1,180})$")
SCOPE_HELP = "use global, or project:NAME, agent:NAME, command:NAME, space:NAME"


class SecretDetected(DomainError):
    def __init__(self, categories: Iterable[str]) -> None:
        found = list(categories)
        super().__init__(
            "The text contains what looks like a secret ("
            + ", ".join(found)
            + "); nothing was stored. Remove it and try again.",
            code="secret_detected",
            details={"categories": found},
        )


class PromptInjectionDetected(DomainError):
    def __init__(self, categories: Iterable[str]) -> None:
        found = list(categories)
        super().__init__(
            "The text contains instructions aimed at the model ("
            + ", ".join(found)
            + "); nothing was stored.",
            code="prompt_injection_detected",
            details={"categories": found},
        )


def check_text(*texts: str, injections: bool = True) -> None:
    """Raise when any text holds a secret (or, optionally, a prompt injection)."""
    secrets_found: set[str] = set()
    injections_found: set[str] = set()
    for value in texts:
        if not value:
            continue
        result = scanner.scan(value)
        secrets_found.update(result.secrets)
        injections_found.update(result.injections)
    if secrets_found:
        raise SecretDetected(sorted(secrets_found))
    if injections and injections_found:
        raise PromptInjectionDetected(sorted(injections_found))


def text(name: str, value: Any, *, limit: int = MAX_TEXT_CHARS, required: bool = False) -> str:
    """A string field: NULs dropped, stripped, at most `limit` characters."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(name, "must be a string")
    value = value.replace("\x00", "").strip()
    if required and not value:
        raise InvalidInput(name, "must not be empty")
    if len(value) > limit:
        raise InvalidInput(name, f"at most {limit} characters")
    return value


def str_list(name: str, value: Any) -> list[str]:
    """A list of short strings (tags, contraindications): stripped, deduplicated, bounded."""
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidInput(name, "must be a list of strings")
    items = list(value)
    if len(items) > MAX_LIST_ITEMS:
        raise InvalidInput(name, f"at most {MAX_LIST_ITEMS} items")
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise InvalidInput(name, "must be a list of strings")
        item = item.strip()
        if len(item) > MAX_SHORT_CHARS:
            raise InvalidInput(name, f"items are at most {MAX_SHORT_CHARS} characters")
        if item and item not in out:
            out.append(item)
    return out


def scope(value: str | None) -> str:
    """A scope: global, or KIND:NAME; empty means global."""
    cleaned = (value or GLOBAL_SCOPE).strip()
    if not SCOPE_RE.match(cleaned):
        raise InvalidInput("scope", SCOPE_HELP)
    return cleaned


def choice(name: str, value: Any, choices: Iterable[str], *, nullable: bool = False) -> Any:
    if value is None and nullable:
        return None
    options = set(choices)
    if value not in options:
        raise InvalidInput(name, f"must be one of {', '.join(sorted(options))}")
    return value


def weight(name: str, value: Any) -> float:
    """Emotional weight or confidence: a number from 1 to 10."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(name, "must be a number from 1 to 10")
    if not MIN_WEIGHT <= float(value) <= MAX_WEIGHT:
        raise InvalidInput(name, "must be from 1 to 10")
    return float(value)
