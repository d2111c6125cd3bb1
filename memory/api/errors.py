"""HTTP for the REST edge: the status of each domain error kind, and errors only HTTP has."""

from __future__ import annotations

from http import HTTPStatus

from ninja.errors import HttpError

from memory.errors import DomainError, Kind

STATUS: dict[Kind, HTTPStatus] = {
    "invalid": HTTPStatus.UNPROCESSABLE_ENTITY,
    "not_found": HTTPStatus.NOT_FOUND,
    "conflict": HTTPStatus.CONFLICT,
    "forbidden": HTTPStatus.FORBIDDEN,
    "too_large": HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
    "unavailable": HTTPStatus.SERVICE_UNAVAILABLE,
}


def status_of(exc: DomainError) -> HTTPStatus:
    return STATUS[exc.kind]


class ApiError(HttpError):
    """An error only the HTTP edge raises (a malformed request shape), with a stable `code`."""

    def __init__(self, status: int, code: str, message: str, details: object | None = None) -> None:
        super().__init__(status, message)
        self.code = code
        self.details = details
