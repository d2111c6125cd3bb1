"""Engram over MCP (stdio): each tool is a thin call to the same services as the REST API.

The server acts for one API token (ENGRAM_TOKEN): its owner's data, limited to its scopes, with
the same 404-for-anything-not-yours rule. Errors come back as tool errors whose text carries
the API's error code, e.g. `secret_detected: ...`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.db import close_old_connections
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from memory.api.schemas import clean_text
from memory.errors import DomainError
from memory.integrations.mcp_engrams import engram_tools
from memory.integrations.mcp_learning import learning_tools
from memory.integrations.mcp_review import review_tools
from memory.integrations.mcp_sessions import session_tools
from memory.models import ApiToken

SERVER_NAME = "engram"
INSTRUCTIONS = (
    "Engram is your long-term memory. Call `inject` (or `session_start`) with the task at hand "
    "to get the lessons that apply; `learn` when you discover something worth keeping; "
    "`feedback` naming an engram id when a lesson helped or misled you; `capture` for notable "
    "events; `session_end` when you are done."
)


class TokenInvalid(Exception):
    pass


def token_from(raw: str | None) -> ApiToken:
    token = ApiToken.authenticate((raw or "").strip())
    if token is None:
        raise TokenInvalid("ENGRAM_TOKEN is missing, revoked or not an Engram API token.")
    return token


def _tool[F: Callable[..., Any]](fn: F) -> F:
    """Run a tool with fresh DB connections; domain errors become tool errors with their code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            return fn(*args, **{name: clean_text(value) for name, value in kwargs.items()})
        except DomainError as exc:
            raise ToolError(f"{exc.code}: {exc}") from None
        finally:
            close_old_connections()

    return wrapper  # type: ignore[return-value]


# Other apps add their tools from AppConfig.ready() (memory never imports them): each entry is
# called with the server and the token and registers tools on it, wrapped with `domain_tool`.
ToolProvider = Callable[[MCPServer, ApiToken], None]
TOOL_PROVIDERS: list[ToolProvider] = []


def tools_register(provider: ToolProvider) -> None:
    """Add another app's MCP tools to every server built from now on (idempotent)."""
    if provider not in TOOL_PROVIDERS:
        TOOL_PROVIDERS.append(provider)


def domain_tool[F: Callable[..., Any]](fn: F) -> F:
    """What every tool is wrapped with: fresh DB connections, domain errors as tool errors."""
    return _tool(fn)


def build_server(token: ApiToken) -> MCPServer:
    """An MCP server whose tools act for `token`, other apps' registered tools included."""
    server: MCPServer = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS)
    for register in (engram_tools, session_tools, learning_tools, review_tools):
        register(server, token, _tool)
    for provider in TOOL_PROVIDERS:
        provider(server, token)
    return server


def serve(raw_token: str | None) -> None:
    """Serve MCP over stdin/stdout until the client closes the stream."""
    token = token_from(raw_token)
    build_server(token).run("stdio")
