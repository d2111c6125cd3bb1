"""A task call: Claude is forced to answer through one tool whose input schema is the task's JSON
schema, the answer is validated, and an invalid answer gets one repair turn.

Everything that can go wrong ends in `LlmUnavailable` with a short `reason`, so a caller has
exactly one exception to handle with its deterministic fallback:

- ``no_key``: no API key configured (raised by the caller's wrapper, never a network call)
- ``budget``: the owner's daily token budget has no room for the call (also the wrapper's)
- ``circuit_open``: recent calls could not reach Claude; calls pause for a few minutes (the
  wrapper's circuit breaker)
- ``timeout``: the request timed out (after the SDK's retries)
- ``unreachable``: no connection to the API
- ``rate_limited`` / ``api_error``: 429 or 5xx still failing after the retries, or another
  status the API refused the request with
- ``auth``: the key was refused
- ``invalid_output``: the answer did not match the schema even after the repair turn
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import jsonschema

from lib.llm import sizing

DEFAULT_TIMEOUT_S = 20.0
DEFAULT_RETRIES = 2
MAX_ERRORS_SHOWN = 5  # validation errors quoted back to the model in the repair turn

_TOOL_NAME = re.compile(r"[^a-zA-Z0-9_-]+")


def tool_name(task: str) -> str:
    """The tool name for a task ("dialectic.synthesis" -> "dialectic_synthesis")."""
    return _TOOL_NAME.sub("_", task).strip("_")[:64] or "answer"


class LlmUnavailable(Exception):
    """No validated answer: the caller runs its fallback. `tokens_*` count what was spent anyway."""

    def __init__(
        self, reason: str, message: str = "", *, tokens_in: int = 0, tokens_out: int = 0
    ) -> None:
        super().__init__(f"{reason}: {message}" if message else reason)
        self.reason = reason
        self.message = message or reason
        self.tokens_in = tokens_in
        self.tokens_out = tokens_out


@dataclass(frozen=True)
class LlmResult:
    data: dict[str, Any]
    model: str
    tokens_in: int
    tokens_out: int
    duration_ms: float
    repaired: bool  # the first answer was invalid and the repair turn fixed it


class LlmClient:
    """One configured connection to Claude. `transport` (an httpx transport, as the SDK's HTTP
    client takes) replaces the network: tests hand in a fake one so the SDK's own request and
    response code runs."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_RETRIES,
        transport: Any | None = None,
        base_url: str | None = None,
    ) -> None:
        if not api_key:
            raise LlmUnavailable("no_key", "no API key configured")
        http_client = anthropic.DefaultHttpxClient(transport=transport) if transport else None
        self.model = model
        self._sdk = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            http_client=http_client,
        )

    def call(
        self,
        *,
        task: str,
        schema: dict[str, Any],
        system: str,
        prompt: str,
        max_tokens: int = 1024,
        description: str = "",
        admit: Callable[[int], None] | None = None,
    ) -> LlmResult:
        """Ask for one object matching `schema`; raises LlmUnavailable when none comes back.

        `admit(tokens)` runs before each request (the first and the repair turn) with what that
        request may cost at most (estimated input plus `max_tokens`); it raises LlmUnavailable
        to stop the call (a budget with no room left). Refused before the repair turn, the call
        ends as `invalid_output`.
        """
        validator = jsonschema.Draft202012Validator(schema)
        name = tool_name(task)
        tool = task_tool(task, schema, description)
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        started = time.perf_counter()
        spent_in = spent_out = 0
        repaired = False
        if admit is not None:
            admit(sizing.input_tokens(system=system, prompt=prompt, tool=tool) + max_tokens)
        for attempt in range(2):
            response = self._create(
                name, tool, system, messages, max_tokens, tokens=(spent_in, spent_out)
            )
            spent_in += response.usage.input_tokens
            spent_out += response.usage.output_tokens
            block = next(
                (b for b in response.content if b.type == "tool_use" and b.name == name), None
            )
            data = block.input if block is not None else None
            errors = _errors(validator, data)
            if errors and response.stop_reason == "max_tokens":
                errors.insert(0, "the answer was cut off at the output limit, keep it shorter")
            if not errors:
                assert isinstance(data, dict)
                return LlmResult(
                    data=data,
                    model=response.model or self.model,
                    tokens_in=spent_in,
                    tokens_out=spent_out,
                    duration_ms=round((time.perf_counter() - started) * 1000, 1),
                    repaired=repaired,
                )
            if attempt == 1 or block is None:
                break
            feedback = (
                "The input did not match the schema: "
                + "; ".join(errors)
                + f". Call {name} again with a corrected input."
            )
            if admit is not None:
                # The repair request resends the first one, the answer and the feedback.
                extra = sizing.estimate_tokens(feedback) + response.usage.output_tokens
                try:
                    admit(response.usage.input_tokens + extra + max_tokens)
                except LlmUnavailable as exc:
                    raise LlmUnavailable(
                        "invalid_output",
                        f"the answer did not match the task's schema and no repair turn was "
                        f"allowed ({exc.reason})",
                        tokens_in=spent_in,
                        tokens_out=spent_out,
                    ) from exc
            repaired = True
            messages += [
                {"role": "assistant", "content": _echo(response.content, block)},
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": block.id,
                            "is_error": True,
                            "content": feedback,
                        }
                    ],
                },
            ]
        raise LlmUnavailable(
            "invalid_output",
            "the answer did not match the task's schema"
            + (" after one repair attempt" if repaired else ""),
            tokens_in=spent_in,
            tokens_out=spent_out,
        )

    def _create(
        self,
        name: str,
        tool: dict[str, Any],
        system: str,
        messages: list[dict[str, Any]],
        max_tokens: int,
        *,
        tokens: tuple[int, int],
    ) -> Any:
        spent = {"tokens_in": tokens[0], "tokens_out": tokens[1]}
        try:
            create: Any = self._sdk.messages.create  # plain dicts, checked by the schema
            return create(
                model=self.model,
                max_tokens=max_tokens,
                system=system,
                messages=messages,
                tools=[tool],
                tool_choice={"type": "tool", "name": name},
            )
        except anthropic.APITimeoutError as exc:
            raise LlmUnavailable("timeout", str(exc), **spent) from exc
        except anthropic.APIConnectionError as exc:
            raise LlmUnavailable("unreachable", str(exc), **spent) from exc
        except anthropic.AuthenticationError as exc:
            raise LlmUnavailable("auth", _status_message(exc), **spent) from exc
        except anthropic.RateLimitError as exc:
            raise LlmUnavailable("rate_limited", _status_message(exc), **spent) from exc
        except anthropic.APIStatusError as exc:
            raise LlmUnavailable("api_error", _status_message(exc), **spent) from exc
        except anthropic.APIError as exc:  # a malformed response body, among others
            raise LlmUnavailable("api_error", str(exc), **spent) from exc


def task_tool(task: str, schema: dict[str, Any], description: str = "") -> dict[str, Any]:
    """The one tool a task call forces: its name, a description and the task's schema."""
    return {
        "name": tool_name(task),
        "description": description or f"Return the result of the task '{task}'.",
        "input_schema": schema,
    }


def _echo(content: list[Any], answered: Any) -> list[dict[str, Any]]:
    """The assistant turn sent back in a repair request, with only the fields the Messages API
    accepts in a request: the SDK's response objects carry more (``caller``, ``citations``,
    ``toolset_name``, …) and the API refuses unknown keys. Text blocks are kept when not empty
    (the API refuses empty ones); of the tool calls only the one answered here, since every
    tool_use needs its tool_result in the next turn."""
    echoed: list[dict[str, Any]] = []
    for block in content:
        if block.type == "text" and str(block.text).strip():
            echoed.append({"type": "text", "text": str(block.text)})
        elif block is answered:
            echoed.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            )
    return echoed


def _status_message(exc: anthropic.APIStatusError) -> str:
    return f"HTTP {exc.status_code}: {exc.message}"[:300]


def _errors(validator: jsonschema.Draft202012Validator, data: Any) -> list[str]:
    if not isinstance(data, dict):
        return ["the answer was not a JSON object"]
    found = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    return [
        f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
        for e in found[:MAX_ERRORS_SHOWN]
    ]


def as_data(text: str, label: str = "data") -> str:
    """Wrap untrusted text (transcripts, prompts, code) in delimiters it cannot close itself; the
    system prompt tells the model that what is inside is material to read, never instructions."""
    body = text.replace(f"</{label}>", f"<\\/{label}>")
    return f"<{label}>\n{body}\n</{label}>"
