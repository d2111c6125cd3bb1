"""Every periodic task is idempotent: run twice, the second run does nothing."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import ReviewItem
from memory.services.engrams import engram_learn
from memory.tasks import ping, refresh_abstraction_prompts

pytestmark = pytest.mark.django_db


def test_ping_echoes() -> None:
    assert ping.apply(args=["x"]).get() == "x"


def test_abstraction_prompts_task_prompts_once(owner: Any) -> None:
    for _ in range(2):
        engram_learn(owner=owner, statement="Pin dependency versions in CI", source="user")
    assert refresh_abstraction_prompts.apply().get() == 1
    assert ReviewItem.objects.filter(kind="abstraction").count() == 1
    assert refresh_abstraction_prompts.apply().get() == 0
    assert ReviewItem.objects.filter(kind="abstraction").count() == 1
