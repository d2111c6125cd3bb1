"""REST API v1 for memory: every endpoint is a thin call to a service."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Schema

from memory.auth import TokenAuth, token_of

router = Router(auth=TokenAuth(), tags=["memory"])


class WhoAmIOut(Schema):
    owner: str
    token: str
    scopes: list[str]


@router.get("/whoami", response=WhoAmIOut, summary="The token's owner and allowed scopes")
def whoami(request: HttpRequest) -> WhoAmIOut:
    token = token_of(request)
    return WhoAmIOut(owner=token.owner.get_username(), token=token.name, scopes=token.scopes)
