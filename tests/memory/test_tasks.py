"""Every periodic task is idempotent: run twice, the second run does nothing."""

from __future__ import annotations

from typing import Any

import pytest

from memory.models import ReviewItem
from memory.services.engrams import engram_learn
from memory.tasks import ping, reembed_stale, refresh_abstraction_prompts

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


def test_reembed_task_moves_vectors_of_an_older_model_once(owner: Any) -> None:
    from django.conf import settings

    from lib.embedder import MODEL_ID, get_embedder
    from memory.models import Engram

    for text in ("Run the linter before pushing", "Keep secrets out of the repository"):
        engram_learn(owner=owner, statement=text, source="user")
    old = Engram.objects.get(statement__startswith="Run")
    Engram.objects.filter(pk=old.pk).update(embedding_model="all-MiniLM-L6-v2-onnx-int8")
    before = Engram.objects.get(pk=old.pk).updated_at

    assert reembed_stale.apply().get() == 1
    moved = Engram.objects.get(pk=old.pk)
    assert moved.embedding_model == MODEL_ID
    assert list(moved.embedding) == list(get_embedder().embed_one(moved.statement))
    assert moved.updated_at == before  # not an edit: variant order and activation stay put
    assert reembed_stale.apply().get() == 0
    assert settings.CELERY_BEAT_SCHEDULE["reembed-stale"]["task"] == reembed_stale.name
