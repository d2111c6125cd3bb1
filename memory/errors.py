"""Errors with a stable code, raised by services and turned into JSON by the API."""

from __future__ import annotations

from http import HTTPStatus

from ninja.errors import HttpError


class ApiError(HttpError):
    """An HTTP error with a machine-readable `code` and optional `details`."""

    def __init__(self, status: int, code: str, message: str, details: object | None = None) -> None:
        super().__init__(status, message)
        self.code = code
        self.details = details


def not_found(what: str) -> ApiError:
    return ApiError(HTTPStatus.NOT_FOUND, "not_found", f"{what} was not found.")
