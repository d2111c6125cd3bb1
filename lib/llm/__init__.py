"""The LLM client: one JSON-schema task call over the `anthropic` SDK.

No Django here. `memory.services.llm` wraps it with what needs the database and settings: the
per-owner daily budget (reserved before each request, settled after), the circuit breaker,
secret redaction of inputs and a recorded `LlmCall` row per call. `sizing` estimates tokens and
splits a prompt's character budget among its parts; `grounding` checks that a quote the model
gives is in the text it read.
"""

from lib.llm.client import LlmClient, LlmResult, LlmUnavailable, as_data, task_tool, tool_name
from lib.llm.grounding import find_quote

__all__ = [
    "LlmClient",
    "LlmResult",
    "LlmUnavailable",
    "as_data",
    "find_quote",
    "task_tool",
    "tool_name",
]
