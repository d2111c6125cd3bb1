"""Compose through the faked Claude: a valid answer is kept, a broken one falls back."""

from __future__ import annotations

from typing import Any

import pytest

from patterns.services.compose import COMPOSE_TASK, composition_request, composition_run
from patterns.tasks import compose as compose_task
from tests.patterns.helpers import make_pattern

pytestmark = pytest.mark.django_db


def two_stages(owner: Any) -> tuple[str, str]:
    render = make_pattern(
        owner, "Render the invoice report as HTML", inputs=["rows"], outputs=["html"]
    )
    load = make_pattern(owner, "Load the invoice CSV into rows", inputs=["csv"], outputs=["rows"])
    return load.key, render.key


def test_the_llm_composition_is_validated_and_kept(owner: Any, fake_claude: Any) -> None:
    load, render = two_stages(owner)
    fake_claude.on(
        COMPOSE_TASK,
        lambda body: {
            "stages": [
                {"name": "load", "pattern": load, "inputs": ["csv"], "outputs": ["rows"]},
                {"name": "render", "pattern": render, "inputs": ["rows"], "outputs": ["html"]},
            ]
        },
    )
    composition = composition_request(owner=owner, task="Invoices to HTML", given=["csv"])
    assert composition.state == "pending"
    assert fake_claude.calls() == []
    assert composition_run(composition.pk) == "llm"
    composition.refresh_from_db()
    assert composition.valid
    assert [s["pattern"] for s in composition.stages] == [load, render]
    assert compose_task(composition.pk) == "skipped"
    assert len(fake_claude.calls(COMPOSE_TASK)) == 1


def test_a_cyclic_llm_answer_falls_back_to_the_nearest_patterns(
    owner: Any, fake_claude: Any
) -> None:
    two_stages(owner)
    fake_claude.on(
        COMPOSE_TASK,
        lambda body: {
            "stages": [
                {"name": "a", "pattern": "", "inputs": ["y"], "outputs": ["x"]},
                {"name": "b", "pattern": "", "inputs": ["x"], "outputs": ["y"]},
            ]
        },
    )
    composition = composition_request(owner=owner, task="Invoices to HTML", given=["csv"])
    assert composition_run(composition.pk) == "nearest"
    composition.refresh_from_db()
    assert composition.source == "nearest"
    assert "contract" in composition.note
    assert [s["outputs"] for s in composition.stages] == [["rows"], ["html"]]
    assert composition.valid
