"""Celery tasks: thin, idempotent wrappers around the success-pattern services."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="patterns.age")
def age() -> dict[str, int]:
    """Periodic: every live pattern's score from its anchor; a second run changes nothing."""
    from patterns.services.store import patterns_age

    result = patterns_age()
    return {"aged": result.aged, "retired": result.retired}


@shared_task(name="patterns.evaluate")
def evaluate(record_id: int) -> str:
    """Judge one pending evaluation; a finished one is skipped."""
    from patterns.services.evaluation import evaluation_run

    return evaluation_run(record_id)


@shared_task(name="patterns.compose")
def compose(composition_id: int) -> str:
    """Compose one pending composition; a finished one is skipped."""
    from patterns.services.compose import composition_run

    return composition_run(composition_id)


@shared_task(name="patterns.evolve_prompts")
def evolve_prompts() -> int:
    """Periodic: a prompt proposal per owner with recurring issues (LLM only; none without)."""
    from patterns.services.feedback import prompt_evolution_all

    return prompt_evolution_all()


@shared_task(name="patterns.evolve_prompt")
def evolve_prompt(owner_id: int) -> bool:
    """One owner's prompt proposal, asked for from the dashboard; an open one is not repeated."""
    from django.contrib.auth import get_user_model

    from patterns.services.feedback import prompt_evolution_propose

    owner = get_user_model().objects.filter(pk=owner_id).first()
    return owner is not None and prompt_evolution_propose(owner=owner) is not None
