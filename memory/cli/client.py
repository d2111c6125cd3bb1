"""A small REST client for the `engram` command: ENGRAM_URL and ENGRAM_TOKEN, like engram-hook
(standard library only, JSON in and out, every failure a `ServerError` with a clear message)."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memory.integrations.hookclient import DEFAULT_URL

DEFAULT_TIMEOUT_SECONDS = 15.0
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
USER_AGENT = "engram-cli/1"


class ServerError(Exception):
    """The server could not be reached (status 0) or answered with an error status."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass(frozen=True)
class Server:
    url: str
    token: str
    timeout: float = DEFAULT_TIMEOUT_SECONDS

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, url: str | None = None) -> Server:
        environ = os.environ if env is None else env
        base = (url or environ.get("ENGRAM_URL") or DEFAULT_URL).strip().rstrip("/")
        return cls(url=base, token=(environ.get("ENGRAM_TOKEN") or "").strip())

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        query: Mapping[str, str] | None = None,
        auth: bool = True,
    ) -> tuple[int, Any]:
        """(status, decoded JSON body) of any answer with a status; `ServerError` when nothing
        answered."""
        target = self.url + path
        if query:
            target += "?" + urllib.parse.urlencode(query)
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if auth and self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(target, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, _decode(response.read(MAX_RESPONSE_BYTES))
        except urllib.error.HTTPError as exc:
            return exc.code, _decode(exc.read(MAX_RESPONSE_BYTES))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            message = f"nothing answered at {self.url} ({reason})"
            raise ServerError(0, "unreachable", message) from None

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON body of a 2xx answer; `ServerError` with the API's code otherwise."""
        status, body = self.request(method, path, **kwargs)
        if 200 <= status < 300:
            return body
        code = body.get("code") if isinstance(body, dict) else None
        message = body.get("message") if isinstance(body, dict) else None
        raise ServerError(status, str(code or status), str(message or f"HTTP {status}"))


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None
