"""MCP tools for success patterns: the same operations (and dicts) as the REST endpoints.

Registered from PatternsConfig.ready() through memory.integrations.mcp.tools_register.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer

from memory.access import actor_of
from memory.models import ApiToken
from patterns import api
from patterns.services import compose as compose_services
from patterns.services import evaluation, feedback, promotion


def pattern_tools(server: MCPServer, token: ApiToken) -> None:
    """Register the pattern tools for `token` on `server`, each wrapped with `domain_tool`."""
    from memory.integrations.mcp import domain_tool

    tool: Callable[[Any], Any] = domain_tool

    @server.tool(name="patterns_learn")
    @tool
    def learn(
        task: str,
        eval_score: float,
        design: str = "",
        code: str = "",
        output: str = "",
        inputs: list[str] | None = None,
        outputs: list[str] | None = None,
        scope: str = "global",
        on_duplicate: Literal["replace_with_better", "keep_both", "skip"] = "replace_with_better",
    ) -> dict[str, Any]:
        """Remember a successful run (task, how it was done, its 0-10 score). A task at cosine
        >= 0.92 to a stored one follows on_duplicate. Returns the pattern's key and outcome."""
        return api.learn(
            token,
            {
                "task": task,
                "eval_score": eval_score,
                "design": design,
                "code": code,
                "output": output,
                "inputs": inputs or [],
                "outputs": outputs or [],
                "scope": scope,
                "on_duplicate": on_duplicate,
            },
        )

    @server.tool(name="patterns_recall")
    @tool
    def recall(
        task: str,
        limit: int = 5,
        eval_weighted: bool = True,
        recency_weight: float = 0.0,
        mark_used: bool = False,
    ) -> dict[str, Any]:
        """Stored patterns for a task, best first: score = similarity x quality multiplier
        (0.5 + 0.5 x median of the last 5 evals / 10) x recency. Read-only unless mark_used."""
        return api.recall(
            token,
            {
                "task": task,
                "limit": limit,
                "eval_weighted": eval_weighted,
                "recency_weight": recency_weight,
                "mark_used": mark_used,
            },
        )

    @server.tool(name="patterns_evaluate")
    @tool
    def evaluate(
        task: str = "",
        code: str = "",
        pattern_key: str = "",
        n: int = 3,
        expected_outputs: list[str] | None = None,
    ) -> dict[str, Any]:
        """Evaluate code for a task (or a stored pattern by key). With an LLM configured, n
        judges run in the background: state is pending, poll with patterns_evaluation. Without,
        a deterministic rubric answers at once (source: rubric)."""
        _, body = api.evaluate(
            token,
            pattern_key or None,
            {
                "task": task or None,
                "code": code or None,
                "n": n,
                "expected_outputs": expected_outputs or [],
            },
        )
        return body

    @server.tool(name="patterns_evaluation")
    @tool
    def evaluation_get(key: str) -> dict[str, Any]:
        """One evaluation by key (poll a pending one)."""
        return api.evaluation_dict(evaluation.evaluation_get(owner=token.owner, key=key))

    @server.tool(name="patterns_refine")
    @tool
    def refine(key: str, eval_score: float, note: str = "") -> dict[str, Any]:
        """Append an external score (CI pass rate x 10, a user's rating) to a pattern's evals."""
        return api.refine(token, key, eval_score, note)

    @server.tool(name="patterns_reused")
    @tool
    def reused(key: str) -> dict[str, Any]:
        """Say a pattern was used: +0.1 success score (capped at 10); survival only."""
        return api.reused(token, key)

    @server.tool(name="patterns_feedback")
    @tool
    def feedback_for(task: str, limit: int = 5) -> dict[str, Any]:
        """Top recurring evaluation issues for tasks like this one, and a prompt block."""
        return api.feedback_dict(feedback.feedback_top(owner=token.owner, task=task, limit=limit))

    @server.tool(name="patterns_compose")
    @tool
    def compose(
        task: str,
        given: list[str] | None = None,
        max_stages: int = 4,
        stages: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Split a task into stages from stored patterns, or validate `stages` ({name, inputs,
        outputs}): every input given or produced by an earlier stage, no cycles."""
        _, body = api.composed(
            token,
            {"task": task, "given": given or [], "max_stages": max_stages, "stages": stages},
        )
        return body

    @server.tool(name="patterns_promote")
    @tool
    def promote(key: str) -> dict[str, Any]:
        """Promote a pattern to a procedural engram; it waits in the review queue as a candidate."""
        pattern = promotion.pattern_promote(owner=token.owner, key=key, actor=actor_of(token))
        return {"key": pattern.key, "engram_id": pattern.engram_id}

    @server.tool(name="patterns_composition")
    @tool
    def composition_get(key: str) -> dict[str, Any]:
        """One composition by key (poll a pending one)."""
        return api.composition_dict(compose_services.composition_get(owner=token.owner, key=key))
