"""Bearer-token authentication for the REST API, MCP and hooks."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja.security import HttpBearer

from memory.models import ApiToken


class TokenAuth(HttpBearer):
    """Resolves `Authorization: Bearer <token>` to a live ApiToken (request.auth)."""

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        api_token = ApiToken.authenticate(token.strip())
        if api_token is None:
            return None
        api_token.touch()
        request.user = api_token.owner
        return api_token


def token_of(request: HttpRequest) -> ApiToken:
    token: Any = getattr(request, "auth", None)
    assert isinstance(token, ApiToken), "endpoint must be protected by TokenAuth"
    return token
