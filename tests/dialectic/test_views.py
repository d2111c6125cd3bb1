"""The Behaviour patterns pages: clusters, theses with evidence, syntheses, artifact diffs."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from dialectic import render
from dialectic.models import Artifact, Synthesis, Thesis
from dialectic.services import consolidation as stages
from dialectic.services import publish
from memory.models import ReviewItem
from memory.services.review import review_decide
from tests.dialectic.helpers import plant

pytestmark = pytest.mark.django_db


def test_an_empty_page_explains_itself(logged_in: Client) -> None:
    page = logged_in.get("/dialectic/").content.decode()
    assert "Behaviour patterns" in page
    assert "No observations consolidated yet" in page
    assert "Nothing published yet" in page


def test_the_page_shows_theses_syntheses_with_q_and_artifacts(
    owner: Any, logged_in: Client
) -> None:
    plant(owner, habit=6, exceptions=6)
    stages.consolidate(owner=owner)
    item = ReviewItem.objects.filter(kind="synthesis").first()
    assert item is not None
    review_decide(owner=owner, item=item, action="approve", actor="alice")
    page = logged_in.get("/dialectic/").content.decode()
    synthesis = Synthesis.objects.get(condition__contains="Bash call")
    assert "Glob → Grep → Read → Read → Read" in page
    assert f"{synthesis.q:.2f}" in page and "Except when" in page
    artifact = Artifact.objects.get()
    assert artifact.slug in page
    fragment = logged_in.get("/dialectic/", headers={"HX-Request": "true"}).content.decode()
    assert fragment.lstrip().startswith('<div id="theses">')


def test_a_thesis_page_lists_its_evidence_and_antitheses(owner: Any, logged_in: Client) -> None:
    plant(owner, habit=6, exceptions=6)
    stages.consolidate(owner=owner)
    thesis = Thesis.objects.get(expected_sequence=["Glob", "Grep", "Read", "Read", "Read"])
    page = logged_in.get(f"/dialectic/theses/{thesis.pk}/").content.decode()
    assert "Bash → Read → Edit → Bash → Read" in page  # an antithesis
    assert "Read .py file in src/api" in page  # evidence


def test_an_artifact_page_shows_versions_and_a_diff(owner: Any, logged_in: Client) -> None:
    plant(owner, habit=6, exceptions=6)
    stages.consolidate(owner=owner)
    synthesis = Synthesis.objects.get(condition__contains="Bash call")
    item = ReviewItem.objects.get(pk=synthesis.review_item_id)
    review_decide(owner=owner, item=item, action="approve", actor="alice")
    artifact = Artifact.objects.get(synthesis=synthesis)
    lesson = publish.lesson_of(synthesis)
    changed = render.Lesson(**{**lesson.__dict__, "statement": "Survey first, always."})
    publish.artifact_write(
        owner=owner,
        synthesis=synthesis,
        kind="rule",
        scope=artifact.scope,
        lesson=changed,
        now=timezone.now(),
    )
    page = logged_in.get(f"/dialectic/artifacts/{artifact.pk}/").content.decode()
    assert "Changes in v2 since v1" in page
    assert "<ins>+Survey first, always.</ins>" in page
    first = logged_in.get(f"/dialectic/artifacts/{artifact.pk}/?v=1").content.decode()
    assert "(first version)" in first
    response = logged_in.post(f"/dialectic/artifacts/{artifact.pk}/retire/")
    assert response.status_code == HTTPStatus.FOUND
    artifact.refresh_from_db()
    assert artifact.status == "retired"


def test_another_owners_pages_are_not_found(owner: Any, other_owner: Any) -> None:
    plant(owner, habit=4, exceptions=0)
    stages.consolidate(owner=owner)
    thesis = Thesis.objects.first()
    assert thesis is not None
    client = Client()
    client.force_login(other_owner)
    assert client.get(f"/dialectic/theses/{thesis.pk}/").status_code == HTTPStatus.NOT_FOUND
