"""Recurring evaluation feedback: clusters (Jaccard > 0.4 of their words), the top issues for a
task ready to go into a prompt, and prompt-evolution proposals (LLM only) for the review queue."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from memory.models import ReviewItem
from memory.services import llm
from patterns import maths
from patterns.models import EvalRecord, FeedbackCluster

MAX_MEMBERS = 20  # members kept per cluster (the count goes on)
# A cluster belongs to a task when the mean vector of the tasks it came from is this close.
TASK_COSINE = 0.35
DEFAULT_TOP = 5
MAX_TOP = 20
PROMPT_TASK = "patterns.prompt_evolution"
PROMPT_SCHEMA = {
    "type": "object",
    "properties": {
        "prompt_addition": {"type": "string", "maxLength": 1500},
        "rationale": {"type": "string", "maxLength": 600},
    },
    "required": ["prompt_addition", "rationale"],
}
PROMPT_INSTRUCTIONS = (
    "Evaluations of an agent's work keep finding the recurring issues listed in the data, "
    "each with how often it recurred. Write a short addition to the agent's system prompt "
    "(imperative sentences, at most six) that would prevent them, and a one-sentence "
    "rationale. Do not mention scores or this process."
)


def _vector_of(text: str) -> np.ndarray | None:
    from patterns.services.store import embed

    return embed(text) if text.strip() else None


def feedback_record(
    *, owner: Any, record: EvalRecord, text: str, now: datetime
) -> FeedbackCluster | None:
    """File one evaluation's feedback: join the closest cluster above Jaccard 0.4 or start one.

    Joining first decays the cluster's count to its weight now (10 % per whole week since it
    was last seen), then adds one, so an old issue needs fresh evidence to surface again.
    """
    words = maths.feedback_words(text)
    if not words:
        return None
    vector = _vector_of(record.task)
    member = {"eval": record.key, "pattern": record.pattern.key if record.pattern else ""}
    member["feedback"] = text[:300]
    with transaction.atomic():
        best: FeedbackCluster | None = None
        best_jaccard = 0.0
        for cluster in FeedbackCluster.objects.select_for_update().filter(owner=owner):
            similarity = maths.jaccard(words, cluster.words)
            if maths.cluster_joins(words, cluster.words) and similarity > best_jaccard:
                best, best_jaccard = cluster, similarity
        if best is None:
            return FeedbackCluster.objects.create(
                owner=owner,
                text=text[:600],
                words=sorted(words),
                count=1.0,
                members=[member],
                vector=vector,
                created_at=now,
                last_seen=now,
            )
        if any(m.get("eval") == record.key for m in best.members):
            return best  # already filed (a retried task)
        best.count = best.weight(now) + 1.0
        best.members = [*best.members, member][-MAX_MEMBERS:]
        if vector is not None:
            mean = vector if best.vector is None else np.asarray(best.vector) + vector
            norm = float(np.linalg.norm(mean))
            best.vector = mean / norm if norm else mean
        best.last_seen = now
        best.save(update_fields=["count", "members", "vector", "last_seen"])
        return best


@dataclass(frozen=True)
class Issue:
    cluster: FeedbackCluster
    weight: float
    similarity: float | None


@dataclass(frozen=True)
class TopIssues:
    issues: list[Issue]
    prompt: str


def feedback_top(
    *,
    owner: Any,
    task: str | None = None,
    limit: int = DEFAULT_TOP,
    now: datetime | None = None,
    vector: np.ndarray | None = None,
) -> TopIssues:
    """The recurring issues (surfacing clusters) of tasks like `task`, heaviest first, and a
    text block that says them, ready to put into an agent's prompt (empty when none)."""
    from patterns.services.store import clean_limit, clean_task, embed

    now = now or timezone.now()
    limit = clean_limit(limit, maximum=MAX_TOP)
    if task is not None:
        task = clean_task(task)
        vector = embed(task) if vector is None else vector
    issues: list[Issue] = []
    for cluster in FeedbackCluster.objects.filter(owner=owner).order_by("-last_seen"):
        if not cluster.surfaces(now):
            continue
        similarity: float | None = None
        if vector is not None:
            if cluster.vector is None:
                continue
            similarity = float(np.asarray(cluster.vector) @ vector)
            if similarity < TASK_COSINE:
                continue
        issues.append(Issue(cluster=cluster, weight=cluster.weight(now), similarity=similarity))
    issues.sort(key=lambda i: (-i.weight, -(i.similarity or 0.0), i.cluster.pk))
    issues = issues[:limit]
    return TopIssues(issues=issues, prompt=prompt_block(issues))


def prompt_block(issues: list[Issue]) -> str:
    if not issues:
        return ""
    lines = ["Evaluations of similar past work kept finding these issues; avoid them:"]
    lines += [f"- {i.cluster.text} (seen {i.weight:.1f}x)" for i in issues]
    return "\n".join(lines)


# --- prompt evolution -----------------------------------------------------------------------


def prompt_evolution_propose(*, owner: Any, now: datetime | None = None) -> ReviewItem | None:
    """Ask Claude for a prompt addition against the owner's surfacing clusters; file it in review.

    LLM only (a task or a command, never a request): without a key, over budget, with nothing
    recurring, or with a proposal on the same clusters still open, nothing is filed.
    """
    now = now or timezone.now()
    top = feedback_top(owner=owner, limit=MAX_TOP, now=now)
    if not top.issues:
        return None
    cluster_ids = sorted(i.cluster.pk for i in top.issues)
    open_items = ReviewItem.objects.filter(
        owner=owner,
        kind=ReviewItem.Kind.PROMPT,
        state__in=[ReviewItem.State.PENDING, ReviewItem.State.DEFERRED],
    )
    if any(sorted(item.payload.get("clusters", [])) == cluster_ids for item in open_items):
        return None
    data = "\n".join(f"- ({i.weight:.1f}x) {i.cluster.text}" for i in top.issues)
    try:
        answer = llm.llm_run(
            owner=owner,
            task=PROMPT_TASK,
            schema=PROMPT_SCHEMA,
            instructions=PROMPT_INSTRUCTIONS,
            data=data,
            max_tokens=700,
        )
    except llm.LlmUnavailable:
        return None
    text = str(answer.get("prompt_addition", "")).strip()[:1500]
    if not text:
        return None
    return ReviewItem.objects.create(
        owner=owner,
        kind=ReviewItem.Kind.PROMPT,
        payload={
            "prompt_addition": text,
            "rationale": str(answer.get("rationale", "")).strip()[:600],
            "clusters": cluster_ids,
            "issues": [i.cluster.text[:200] for i in top.issues],
            "producer": llm.PRODUCER_LLM,
        },
        reason=f"Prompt addition against {len(cluster_ids)} recurring issue(s): {text[:300]}",
        created_at=now,
    )


def prompt_proposal_apply(
    *,
    owner: Any,
    item: ReviewItem,
    action: str,
    actor: str,
    edits: Mapping[str, Any],
    now: datetime,
) -> dict[str, Any]:
    """Decide a prompt proposal (inside the review's transaction).

    approve: the addition (or an edited `statement`) becomes an active procedural engram, so
    inject delivers it, and its clusters count as addressed until new feedback joins them.
    reject: nothing changes.
    """
    from memory.services.engrams import engram_learn

    payload = item.payload if isinstance(item.payload, dict) else {}
    if action != "approve":
        return {"clusters": payload.get("clusters", [])}
    statement = str(edits.get("statement") or payload.get("prompt_addition", "")).strip()
    result = engram_learn(
        owner=owner,
        actor=actor,
        now=now,
        statement=statement,
        type="procedural",
        source="patterns",
        rationale=str(payload.get("rationale", "")),
        direct_instruction=True,
        tags=["success-patterns"],
    )
    FeedbackCluster.objects.filter(owner=owner, pk__in=payload.get("clusters", [])).update(
        addressed_at=now
    )
    return {"engram": result.engram.engram_id, "clusters": payload.get("clusters", [])}


def prompt_evolution_all(*, now: datetime | None = None) -> int:
    """Propose for every owner with a cluster seen lately; returns the proposals filed."""
    if not llm.configured():
        return 0
    owners = FeedbackCluster.objects.values_list("owner", flat=True).distinct()
    from django.contrib.auth import get_user_model

    filed = 0
    for owner in get_user_model().objects.filter(pk__in=list(owners)):
        filed += prompt_evolution_propose(owner=owner, now=now) is not None
    return filed
