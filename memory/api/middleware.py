"""API guard: body-size limit (413), per-token rate limit (429), JSON for stray API errors.

Runs before sessions and auth so an oversized or rate-limited request costs no database query.
Only paths under /api/ are guarded; the dashboard keeps Django's own handling.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from http import HTTPStatus

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, connection
from django.db import OperationalError as DatabaseOperationalError
from django.db.models import F
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from memory.api import ratelimit
from memory.models import TOKEN_LOOKUP_CHARS, ApiToken

API_PREFIX = "/api/"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# What a 503 tells a client to wait when the database is unreachable.
DB_RETRY_AFTER_SECONDS = 5

logger = logging.getLogger(__name__)


def error_response(
    status: int, code: str, message: str, details: object | None = None
) -> JsonResponse:
    body: dict[str, object] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return JsonResponse(body, status=status)


def _too_large(limit: int) -> JsonResponse:
    return error_response(
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        "payload_too_large",
        f"The request body is over the limit of {limit} bytes.",
        {"limit_bytes": limit},
    )


def _bearer(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


class ApiGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        refused = self._check_body(request) or self._check_rate(request)
        if refused is not None:
            return refused
        response = self.get_response(request)
        return self._as_json(response)

    def _check_body(self, request: HttpRequest) -> HttpResponse | None:
        limit = int(settings.ENGRAM_MAX_BODY_BYTES)
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return error_response(
                HTTPStatus.BAD_REQUEST, "bad_request", "Content-Length is not a number."
            )
        if declared > limit:
            return _too_large(limit)
        if request.method in BODY_METHODS:
            # Reading here also catches bodies that arrive without (or with a false)
            # Content-Length, e.g. chunked uploads through ASGI.
            try:
                body = request.body
            except RequestDataTooBig:
                return _too_large(limit)
            if len(body) > limit:
                return _too_large(limit)
        return None

    def _check_rate(self, request: HttpRequest) -> HttpResponse | None:
        key = ratelimit.client_key(_bearer(request), request.META.get("REMOTE_ADDR"))
        decision = ratelimit.hit(key)
        if decision.allowed:
            return None
        raw = _bearer(request)
        logger.warning(
            "Rate limit: refused %s %s (%d per minute for this client)",
            request.method,
            request.path,
            decision.limit,
        )
        if raw:
            # Counted where a person sees it (the tokens page); one UPDATE, only when refusing.
            ApiToken.objects.filter(lookup=raw[:TOKEN_LOOKUP_CHARS]).update(
                refused=F("refused") + 1, last_refused_at=timezone.now()
            )
        response = error_response(
            HTTPStatus.TOO_MANY_REQUESTS,
            "rate_limited",
            f"Too many requests: the limit is {decision.limit} per minute for this token.",
            {"limit_per_minute": decision.limit, "retry_after_seconds": decision.retry_after},
        )
        response["Retry-After"] = str(decision.retry_after)
        return response

    def _as_json(self, response: HttpResponse) -> HttpResponse:
        """Errors raised outside the API's handlers (unknown path, wrong method) as JSON too."""
        if response.status_code < 400 or "json" in response.get("Content-Type", ""):
            return response
        status = HTTPStatus(response.status_code)
        code = status.phrase.lower().replace(" ", "_").replace("-", "_")
        message = {
            HTTPStatus.NOT_FOUND: "No such endpoint.",
            HTTPStatus.METHOD_NOT_ALLOWED: "This endpoint does not accept that method.",
        }.get(status, status.phrase + ".")
        details = None
        if status == HTTPStatus.METHOD_NOT_ALLOWED and response.has_header("Allow"):
            details = {"allow": [m.strip() for m in response["Allow"].split(",")]}
        converted = error_response(response.status_code, code, message, details)
        for header in ("Allow", "Retry-After"):
            if response.has_header(header):
                converted[header] = response[header]
        return converted

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX):
            return None
        if isinstance(exception, DatabaseOperationalError | InterfaceError):
            # The database is down or restarting: say so at once (a hook gives up, the agent
            # goes on); the next request reconnects (CONN_HEALTH_CHECKS), no restart needed.
            text = str(exception).lower()
            details: dict[str, object] = {"retry_after_seconds": DB_RETRY_AFTER_SECONDS}
            if connection.vendor == "sqlite" or "full" in text or "read-only" in text:
                # The embedded default's data directory (disk full, read-only, gone): someone
                # has to act, so it is an error in the log and the answer says what it is.
                logger.error(
                    "Database cannot be used on %s %s: %s", request.method, request.path, exception
                )
                message = (
                    "The database cannot be written: its disk may be full, or its data "
                    "directory read-only or missing. The request did not complete."
                )
                details["reason"] = str(exception)[:200]
            else:
                logger.warning(
                    "Database unavailable on %s %s: %s", request.method, request.path, exception
                )
                message = (
                    "The database is not reachable right now; the request did not complete. "
                    "Try again shortly."
                )
            response = error_response(
                HTTPStatus.SERVICE_UNAVAILABLE,
                "database_unavailable",
                message,
                details,
            )
            response["Retry-After"] = str(DB_RETRY_AFTER_SECONDS)
            return response
        logger.exception("Unhandled error on %s %s", request.method, request.path)
        return error_response(
            HTTPStatus.INTERNAL_SERVER_ERROR,
            "server_error",
            "Something went wrong on the server; it has been logged.",
        )
