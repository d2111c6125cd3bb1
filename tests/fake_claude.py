"""A fake Claude at the HTTP transport: the anthropic SDK's own request and response code runs,
only the network is replaced. Use the `fake_claude` fixture (tests/conftest.py)."""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2

Responder = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class FakeClaude:
    """Queue answers with `reply(...)` (tool input), `fail(status)`, `timeout()`, or register a
    per-task responder with `on(task, fn)`; `requests` holds every request body the SDK sent."""

    model: str = "claude-fake-1"
    tokens_in: int = 120
    tokens_out: int = 40
    requests: list[dict[str, Any]] = field(default_factory=list)
    _queue: deque[Callable[[dict[str, Any]], httpx2.Response]] = field(default_factory=deque)
    _responders: dict[str, Responder] = field(default_factory=dict)

    # --- scripting ------------------------------------------------------------------------

    def reply(self, tool_input: Any, *, tokens_in: int | None = None) -> FakeClaude:
        self._queue.append(lambda body: self._tool_use(body, tool_input, tokens_in))
        return self

    def reply_content(
        self, content: list[dict[str, Any]], *, stop_reason: str = "tool_use"
    ) -> FakeClaude:
        """An answer with exactly these content blocks (extra keys included, as the API may add
        fields the SDK keeps)."""
        self._queue.append(lambda body: self._message(body, content, stop_reason=stop_reason))
        return self

    def reply_text(self, text: str) -> FakeClaude:
        """An answer with no tool call at all."""
        self._queue.append(lambda body: self._message(body, [{"type": "text", "text": text}]))
        return self

    def fail(self, status: int = 529, message: str = "Overloaded") -> FakeClaude:
        payload = {"type": "error", "error": {"type": "overloaded_error", "message": message}}
        self._queue.append(
            lambda body: httpx2.Response(status, json=payload, headers={"retry-after-ms": "1"})
        )
        return self

    def timeout(self) -> FakeClaude:
        def _raise(body: dict[str, Any]) -> httpx2.Response:
            raise httpx2.ReadTimeout("fake timeout")

        self._queue.append(_raise)
        return self

    def unreachable(self, times: int = 1) -> FakeClaude:
        """No connection to the API, `times` times."""

        def _raise(body: dict[str, Any]) -> httpx2.Response:
            raise httpx2.ConnectError("fake: connection refused")

        for _ in range(times):
            self._queue.append(_raise)
        return self

    def slow_failure(self, seconds: float, times: int = 1) -> FakeClaude:
        """Answer nothing for `seconds`, then time out (a slow, failing Claude), `times` times."""

        def _slow(body: dict[str, Any]) -> httpx2.Response:
            time.sleep(seconds)
            raise httpx2.ReadTimeout("fake slow timeout")

        for _ in range(times):
            self._queue.append(_slow)
        return self

    def on(self, task: str, responder: Responder) -> FakeClaude:
        """Answer every call of `task` (its tool name) with `responder(request_body)`."""
        from lib.llm import tool_name

        self._responders[tool_name(task)] = responder
        return self

    # --- reading --------------------------------------------------------------------------

    def calls(self, task: str | None = None) -> list[dict[str, Any]]:
        from lib.llm import tool_name

        if task is None:
            return list(self.requests)
        name = tool_name(task)
        return [r for r in self.requests if r.get("tool_choice", {}).get("name") == name]

    @staticmethod
    def prompt_of(request: dict[str, Any]) -> str:
        content = request["messages"][0]["content"]
        return content if isinstance(content, str) else json.dumps(content)

    # --- transport ------------------------------------------------------------------------

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self._handle)

    def _handle(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        if self._queue:
            return self._queue.popleft()(body)
        name = body.get("tool_choice", {}).get("name", "")
        if name in self._responders:
            return self._tool_use(body, self._responders[name](body), None)
        raise AssertionError(f"fake Claude got an unscripted call for {name!r}")

    def _tool_use(
        self, body: dict[str, Any], tool_input: Any, tokens_in: int | None
    ) -> httpx2.Response:
        name = body.get("tool_choice", {}).get("name", "answer")
        block = {"type": "tool_use", "id": f"toolu_{len(self.requests)}", "name": name}
        block["input"] = tool_input
        return self._message(body, [block], tokens_in)

    def _message(
        self,
        body: dict[str, Any],
        content: list[dict[str, Any]],
        tokens_in: int | None = None,
        *,
        stop_reason: str = "tool_use",
    ) -> httpx2.Response:
        return httpx2.Response(
            200,
            json={
                "id": f"msg_{len(self.requests)}",
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": content,
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": self.tokens_in if tokens_in is None else tokens_in,
                    "output_tokens": self.tokens_out,
                },
            },
        )
