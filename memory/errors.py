"""Domain errors: what services raise when a rule refuses a request. Never HTTP errors.

Each carries a stable `code` (clients branch on it), a `field` when one input is to blame, a
message for people and optional `details`. Every edge maps them once: REST (`engramsite/api.py`,
the status from `kind`), the dashboard (next to the form field), MCP (a tool error
"code: message") and management commands (a CommandError). `envelope` builds the one JSON shape.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

Kind = Literal["invalid", "not_found", "conflict", "forbidden", "too_large", "unavailable"]


class DomainError(Exception):
    kind: ClassVar[Kind] = "invalid"
    default_code: ClassVar[str] = "invalid"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        field: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.field = field
        if details is None and field is not None:
            details = {"field": field}
        self.details = details

    def __str__(self) -> str:
        """The message with its field named first ("statement: too long"), as the API says it."""
        return f"{self.field}: {self.message}" if self.field else self.message

    @property
    def sentence(self) -> str:
        """The message alone as a sentence, for a form that shows it next to its field."""
        text = self.message.strip()
        text = text[:1].upper() + text[1:]
        return text if text.endswith((".", "!", "?", ")")) else text + "."


class InvalidInput(DomainError):
    default_code = "validation_error"

    def __init__(self, field: str, message: str, *, code: str | None = None) -> None:
        super().__init__(message, code=code, field=field)


class NotFound(DomainError):
    kind = "not_found"
    default_code = "not_found"

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} was not found.")


class Conflict(DomainError):
    kind = "conflict"
    default_code = "conflict"


class Forbidden(DomainError):
    kind = "forbidden"
    default_code = "forbidden"


class TooLarge(DomainError):
    kind = "too_large"
    default_code = "too_large"


class Unavailable(DomainError):
    kind = "unavailable"
    default_code = "unavailable"


def not_found(what: str) -> NotFound:
    return NotFound(what)


def envelope(code: str, message: str, details: object | None = None) -> dict[str, Any]:
    """The JSON error body every edge returns: {code, message[, details]}."""
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return body


def envelope_of(exc: DomainError) -> dict[str, Any]:
    return envelope(exc.code, str(exc), exc.details)
