"""The one NinjaAPI: mounts every app's router under /api/v1/ and shapes errors as JSON."""

from __future__ import annotations

from http import HTTPStatus

from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.operation import Operation

from dialectic.api import router as dialectic_router
from exchange.api import router as exchange_router
from memory.api.endpoints import router as memory_router
from memory.api.errors import status_of
from memory.api.learning import router as learning_router
from memory.api.review import router as review_router
from memory.api.transcripts import router as transcripts_router
from memory.errors import DomainError, envelope, envelope_of
from patterns.api import router as patterns_router


class EngramApi(NinjaAPI):
    """Operation ids stay `<app>_api_<function>` whichever module of the app's API holds the view."""

    def get_openapi_operation_id(self, operation: Operation) -> str:
        func = operation.view_func
        return f"{func.__module__.split('.')[0]}_api_{func.__name__}"


api = EngramApi(
    title="Engram API",
    version="1",
    description="Memory for AI coding agents. Authenticate with `Authorization: Bearer <token>`.",
    urls_namespace="api",
    docs_url="/docs",
    openapi_url="/openapi.json",
)

api.add_router("/v1/", memory_router)
api.add_router("/v1/", review_router)
api.add_router("/v1/", learning_router)
api.add_router("/v1/", transcripts_router)
api.add_router("/v1/exchange/", exchange_router)
api.add_router("/v1/patterns", patterns_router)
api.add_router("/v1/", dialectic_router)


def error(
    request: HttpRequest, status: int, code: str, message: str, details: object | None = None
) -> HttpResponse:
    return api.create_response(request, envelope(code, message, details), status=status)


@api.exception_handler(DomainError)
def on_domain_error(request: HttpRequest, exc: DomainError) -> HttpResponse:
    """A service refused: the kind of refusal picks the status, the rest is the error's own."""
    return api.create_response(request, envelope_of(exc), status=status_of(exc))


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    return error(
        request,
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "validation_error",
        "The request is not valid.",
        {"errors": exc.errors},
    )


@api.exception_handler(AuthenticationError)
def on_auth_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error(
        request,
        HTTPStatus.UNAUTHORIZED,
        "unauthorized",
        "A valid API token is required: send `Authorization: Bearer <token>`.",
    )


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    code = getattr(exc, "code", None) or HTTPStatus(exc.status_code).phrase.lower().replace(
        " ", "_"
    )
    return error(request, exc.status_code, code, str(exc), getattr(exc, "details", None))
