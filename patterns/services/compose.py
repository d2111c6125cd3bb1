"""Compose: split a task into stages drawn from stored patterns, and check the contracts.

Three ways in. Stages given by the caller are only validated (a broken contract is a 422
naming the stage and field, and nothing is stored). Otherwise, without an LLM, the nearest
patterns are taken in dependency order at once (`source: nearest`); with one, a pending
Composition is queued for `patterns.compose`, whose answer is validated the same way and
falls back to the nearest patterns when it breaks a contract.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory import validation
from memory.errors import DomainError, InvalidInput, NotFound
from memory.services import llm
from memory.services.jobs import job_enqueue
from patterns import maths
from patterns.models import Composition, SuccessPattern
from patterns.services.store import (
    Recalled,
    clean_names,
    clean_task,
    new_key,
    pattern_recall,
)

DEFAULT_STAGES = 4
MAX_STAGES = 8
# A pattern this far from the task is not one of its stages.
MIN_SIMILARITY = 0.3
CANDIDATES = 8  # patterns the LLM may choose from
COMPOSE_TASK = "patterns.compose"
COMPOSE_SCHEMA = {
    "type": "object",
    "properties": {
        "stages": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "pattern": {"type": "string"},
                    "inputs": {"type": "array", "items": {"type": "string"}},
                    "outputs": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["name", "pattern", "inputs", "outputs"],
            },
        }
    },
    "required": ["stages"],
}
COMPOSE_INSTRUCTIONS = (
    "Split the task into at most {max_stages} stages, each done by one of the stored patterns "
    "listed in the data (use its key as `pattern`). Order them so that every stage's inputs "
    "are given ({given}) or produced by an earlier stage. Name each stage in a few words."
)


class PipelineInvalid(DomainError):
    """A pipeline whose contracts do not hold; details list every error."""

    def __init__(self, errors: Sequence[maths.ContractError]) -> None:
        first = errors[0]
        super().__init__(
            f"stage {first.stage!r}, field {first.field!r}: {first.message}",
            code="pipeline_invalid",
            details={"errors": [_error_dict(e) for e in errors]},
        )


def _error_dict(error: maths.ContractError) -> dict[str, str]:
    return {"stage": error.stage, "field": error.field, "message": error.message}


def _clean_stages(value: Any) -> list[maths.Stage]:
    if not isinstance(value, list) or not value:
        raise InvalidInput("stages", "must be a non-empty list of {name, inputs, outputs}")
    if len(value) > MAX_STAGES * 2:
        raise InvalidInput("stages", f"at most {MAX_STAGES * 2} stages")
    stages = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise InvalidInput(f"stages[{index}]", "must be an object")
        name = validation.text(f"stages[{index}].name", item.get("name"), limit=200, required=True)
        stages.append(
            maths.Stage(
                name=name,
                inputs=tuple(clean_names(f"stages[{index}].inputs", item.get("inputs"))),
                outputs=tuple(clean_names(f"stages[{index}].outputs", item.get("outputs"))),
            )
        )
    return stages


def _stage_dict(stage: maths.Stage, pattern: SuccessPattern | None = None) -> dict[str, Any]:
    return {
        "name": stage.name,
        "pattern": pattern.key if pattern else "",
        "task": pattern.task if pattern else "",
        "inputs": list(stage.inputs),
        "outputs": list(stage.outputs),
    }


def dependency_order(stages: Sequence[maths.Stage], given: Sequence[str]) -> list[int]:
    """Indices of `stages` in an order where each comes after the producers of its inputs,
    keeping the given (rank) order wherever the contracts allow it; stages that cannot be
    placed (a cycle, a missing input) keep their rank order at the end."""
    available = set(given)
    placed: list[int] = []
    left = list(range(len(stages)))
    while left:
        ready = next((i for i in left if set(stages[i].inputs) <= available), None)
        if ready is None:
            placed += left
            break
        placed.append(ready)
        left.remove(ready)
        available |= set(stages[ready].outputs)
    return placed


def _nearest_stages(
    recalled: Sequence[Recalled], given: Sequence[str], max_stages: int
) -> tuple[list[dict[str, Any]], list[maths.ContractError]]:
    chosen = [r.pattern for r in recalled if r.similarity >= MIN_SIMILARITY][:max_stages]
    stages = [
        maths.Stage(name=p.task[:80], inputs=tuple(p.inputs), outputs=tuple(p.outputs))
        for p in chosen
    ]
    order = dependency_order(stages, given)
    ordered = [stages[i] for i in order]
    return (
        [_stage_dict(stages[i], chosen[i]) for i in order],
        maths.pipeline_validate(ordered, given),
    )


def composition_request(
    *,
    owner: Any,
    task: Any,
    given: Any = None,
    stages: Any = None,
    max_stages: Any = DEFAULT_STAGES,
    now: datetime | None = None,
) -> Composition:
    """Validate given stages (422 when broken), or compose from stored patterns."""
    task = clean_task(task)
    given_names = clean_names("given", given)
    if isinstance(max_stages, bool) or not isinstance(max_stages, int):
        raise InvalidInput("max_stages", f"must be a whole number from 1 to {MAX_STAGES}")
    if not 1 <= max_stages <= MAX_STAGES:
        raise InvalidInput("max_stages", f"must be from 1 to {MAX_STAGES}")
    now = now or timezone.now()
    base = {
        "owner": owner,
        "task": task,
        "given": given_names,
        "max_stages": max_stages,
        "created_at": now,
    }
    if stages is not None:
        pipeline = _clean_stages(stages)
        errors = maths.pipeline_validate(pipeline, given_names)
        if errors:
            raise PipelineInvalid(errors)
        return Composition.objects.create(
            key=new_key("cmp"),
            source=Composition.Source.GIVEN,
            stages=[_stage_dict(s) for s in pipeline],
            finished_at=now,
            **base,
        )
    if llm.configured():
        with transaction.atomic():
            composition = Composition.objects.create(
                key=new_key("cmp"),
                state=Composition.State.PENDING,
                source=Composition.Source.LLM,
                **base,
            )
            job_enqueue("patterns.compose", composition.pk)
        return composition
    recalled = pattern_recall(owner=owner, task=task, limit=max_stages, now=now)
    stage_rows, errors = _nearest_stages(recalled, given_names, max_stages)
    return Composition.objects.create(
        key=new_key("cmp"),
        source=Composition.Source.NEAREST,
        stages=stage_rows,
        errors=[_error_dict(e) for e in errors],
        note="no LLM key: the nearest patterns in dependency order",
        finished_at=now,
        **base,
    )


def composition_get(*, owner: Any, key: str) -> Composition:
    composition = Composition.objects.filter(owner=owner, key=str(key or "")[:20]).first()
    if composition is None:
        raise NotFound(f"Composition {key}")
    return composition


def composition_run(composition_id: int, *, now: datetime | None = None) -> str:
    """The `patterns.compose` task's body: ask Claude, validate, fall back; idempotent."""
    composition = Composition.objects.filter(pk=composition_id).select_related("owner").first()
    if composition is None or composition.state != Composition.State.PENDING:
        return "skipped"
    owner = composition.owner
    given = list(composition.given)
    recalled = pattern_recall(
        owner=owner, task=composition.task, limit=max(CANDIDATES, composition.max_stages)
    )
    by_key = {r.pattern.key: r.pattern for r in recalled}
    stage_rows: list[dict[str, Any]] = []
    errors: list[maths.ContractError] = []
    source, note = Composition.Source.LLM, ""
    try:
        if not recalled:
            raise llm.LlmUnavailable("empty", "no stored pattern to compose from")
        data = "\n".join(
            f"{r.pattern.key}: {r.pattern.task} (inputs: {', '.join(r.pattern.inputs) or '-'}; "
            f"outputs: {', '.join(r.pattern.outputs) or '-'})"
            for r in recalled
        )
        answer = llm.llm_run(
            owner=owner,
            task=COMPOSE_TASK,
            schema=COMPOSE_SCHEMA,
            instructions=COMPOSE_INSTRUCTIONS.format(
                max_stages=composition.max_stages, given=", ".join(given) or "nothing"
            ),
            data=f"Task: {composition.task}\n\nStored patterns:\n{data}",
            max_tokens=1200,
        )
        raw = answer.get("stages")
        if not isinstance(raw, list) or not raw:
            raise llm.LlmUnavailable("invalid", "the answer has no stages")
        pipeline = _clean_stages(raw[: composition.max_stages])
        errors = maths.pipeline_validate(pipeline, given)
        if errors:
            raise llm.LlmUnavailable("contract", f"{errors[0].stage}: {errors[0].message}")
        stage_rows = [
            _stage_dict(stage, by_key.get(str(item.get("pattern", ""))))
            for stage, item in zip(pipeline, raw, strict=False)
        ]
    except (llm.LlmUnavailable, DomainError) as exc:
        reason = f"{exc.reason}: {exc.message}" if isinstance(exc, llm.LlmUnavailable) else str(exc)
        stage_rows, errors = _nearest_stages(recalled, given, composition.max_stages)
        source = Composition.Source.NEAREST
        note = f"LLM answer unusable ({reason}); the nearest patterns in dependency order"[:300]
    with transaction.atomic():
        locked = Composition.objects.select_for_update().get(pk=composition_id)
        if locked.state != Composition.State.PENDING:
            return "skipped"
        locked.state = Composition.State.DONE
        locked.source = source
        locked.stages = stage_rows
        locked.errors = [_error_dict(e) for e in errors]
        locked.note = note
        locked.finished_at = now or timezone.now()
        locked.save()
    return source
