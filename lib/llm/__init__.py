"""The LLM client: one JSON-schema task call over the `anthropic` SDK.

No Django here. `memory.services.llm` wraps it with what needs the database and settings: the
per-owner daily budget, secret redaction of inputs and a recorded `LlmCall` row per call.
"""

from lib.llm.client import LlmClient, LlmResult, LlmUnavailable, as_data, tool_name

__all__ = ["LlmClient", "LlmResult", "LlmUnavailable", "as_data", "tool_name"]
