"""Review, then publish: gates, the exact file formats, versioning and user-scope proposals."""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Any

import pytest
import yaml
from django.test import Client

from dialectic import render
from dialectic.models import Artifact, ArtifactVersion, Synthesis
from dialectic.services import consolidation as stages
from dialectic.services import publish
from memory.models import ReviewItem
from memory.services.review import review_decide
from tests.dialectic.helpers import breadth_first, depth_first, plant, replay, workflow

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]
METADATA = re.compile(
    r"^<!-- engram:pattern:(\d+):synthesis:(\d+):v(\d+):(\d{4}-\d{2}-\d{2}):confidence:"
    r"(\d\.\d\d) -->$",
    re.MULTILINE,
)


def frontmatter(text: str) -> dict[str, Any]:
    assert text.startswith("---\n")
    end = text.index("\n---\n", 4)
    data = yaml.safe_load(text[4:end])
    assert isinstance(data, dict)
    return data


def _synthesis_item(owner: Any) -> tuple[Synthesis, ReviewItem]:
    plant(owner, habit=6, exceptions=6)
    stages.consolidate(owner=owner)
    synthesis = Synthesis.objects.get(condition__contains="Bash call")
    item = ReviewItem.objects.get(pk=synthesis.review_item_id)
    return synthesis, item


def test_the_review_item_carries_the_rule_exactly_as_it_will_be_written(owner: Any) -> None:
    synthesis, item = _synthesis_item(owner)
    ((path, planned),) = item.payload["files"].items()
    review_decide(owner=owner, item=item, action="approve", actor="alice")
    artifact = Artifact.objects.get(synthesis=synthesis)
    version = ArtifactVersion.objects.get(artifact=artifact)
    assert version.files == {path: planned}
    assert artifact.version == 1 and artifact.kind == "rule"
    assert frontmatter(planned) == {"paths": ["src/api/**/*.py"]}
    match = METADATA.search(planned)
    assert match is not None
    pattern, synth, v, _, confidence = match.groups()
    assert (int(pattern), int(synth), int(v)) == (synthesis.thesis.cluster_id, synthesis.pk, 1)
    assert float(confidence) == pytest.approx(synthesis.confidence, abs=0.005)
    synthesis.refresh_from_db()
    assert synthesis.state == Synthesis.State.APPROVED


def test_a_rejected_synthesis_publishes_nothing(owner: Any) -> None:
    synthesis, item = _synthesis_item(owner)
    review_decide(owner=owner, item=item, action="reject", actor="alice")
    synthesis.refresh_from_db()
    assert synthesis.state == Synthesis.State.REJECTED
    assert not Artifact.objects.exists()
    assert stages.consolidate(owner=owner).syntheses == 0  # not proposed again


def test_publication_needs_confidence_07_and_3_exemplars(owner: Any) -> None:
    synthesis, _ = _synthesis_item(owner)
    assert publish.publishable(synthesis)
    synthesis.confidence = 0.69
    assert not publish.publishable(synthesis)
    synthesis.confidence, synthesis.exemplars = 0.9, 2
    assert not publish.publishable(synthesis)
    synthesis.exemplars, synthesis.support_share = 5, 0.49  # the "habit" is the exception
    assert not publish.publishable(synthesis)


def test_a_content_change_bumps_the_version_and_the_same_content_does_not(owner: Any) -> None:
    synthesis, item = _synthesis_item(owner)
    review_decide(owner=owner, item=item, action="approve", actor="alice")
    artifact = Artifact.objects.get()
    lesson = publish.lesson_of(synthesis)
    from django.utils import timezone

    now = timezone.now()
    _, written = publish.artifact_write(
        owner=owner, synthesis=synthesis, kind="rule", scope=artifact.scope, lesson=lesson, now=now
    )
    assert not written
    changed = render.Lesson(**{**lesson.__dict__, "statement": lesson.statement + " Really."})
    artifact, written = publish.artifact_write(
        owner=owner, synthesis=synthesis, kind="rule", scope=artifact.scope, lesson=changed, now=now
    )
    assert written and artifact.version == 2
    files = ArtifactVersion.objects.get(artifact=artifact, version=2).files
    assert ":v2:" in next(iter(files.values()))
    assert ArtifactVersion.objects.filter(artifact=artifact).count() == 2


def test_a_workflow_becomes_a_skill_with_a_hybrid_script(owner: Any) -> None:
    for _ in range(10):
        replay(owner, workflow())
    stages.consolidate(owner=owner)
    synthesis = Synthesis.objects.get(state=Synthesis.State.REVIEW)
    assert synthesis.output_type in ("skill", "rule_with_skill")
    item = ReviewItem.objects.get(pk=synthesis.review_item_id)
    files = item.payload["files"]
    skill = next(p for p in files if p.endswith("/SKILL.md"))
    name = skill.split("/")[1]
    meta = frontmatter(files[skill])
    assert meta["name"] == name and re.fullmatch(r"[a-z0-9-]{1,64}", name)
    assert "Read" in files[skill] and "## Instructions" in files[skill]
    assert f"skills/{name}/scripts/engram_runtime.py" in files
    scripts = [p for p in files if p.startswith(f"skills/{name}/scripts/")]
    assert len(scripts) == 2
    for path in scripts:
        compile(files[path], path, "exec")  # valid Python


def test_a_lesson_seen_in_3_projects_is_proposed_for_user_scope(owner: Any) -> None:
    for _ in range(6):
        for project in ("shop", "blog", "wiki"):
            replay(owner, breadth_first(), cwd=f"/home/alice/{project}", scope="project:all")
    for _ in range(2):
        replay(owner, depth_first(), cwd="/home/alice/shop", scope="project:all")
    stages.consolidate(owner=owner)
    item = ReviewItem.objects.get(kind="synthesis")
    assert item.payload["scope"] == "user" and item.payload["user_scope_proposed"]
    assert len(item.payload["projects"]) == 3
    review_decide(owner=owner, item=item, action="approve", actor="alice")
    assert Artifact.objects.get().scope == "user"


def test_the_person_may_keep_a_user_scope_proposal_in_its_project(owner: Any) -> None:
    for project in ("shop", "blog", "wiki") * 4:
        replay(owner, breadth_first(), cwd=f"/home/alice/{project}", scope="project:all")
    stages.consolidate(owner=owner)
    item = ReviewItem.objects.get(kind="synthesis")
    review_decide(
        owner=owner, item=item, action="approve", actor="alice", edits={"scope": "project:all"}
    )
    assert Artifact.objects.get().scope == "project:all"


def test_synthesis_items_are_decided_over_rest(owner: Any, api: Client) -> None:
    synthesis, item = _synthesis_item(owner)
    listed = api.get("/api/v1/review?kind=synthesis").json()
    (row,) = [r for r in listed["items"] if r["id"] == item.pk]
    assert row["actions"] == ["defer", "approve", "reject"]
    assert row["proposed"]["files"] == item.payload["files"]
    assert row["evidence"]["q"] == pytest.approx(synthesis.q, abs=1e-3)
    response = api.post(
        f"/api/v1/review/{item.pk}/decide", {"action": "approve"}, content_type="application/json"
    )
    assert response.status_code == HTTPStatus.OK
    assert Artifact.objects.filter(synthesis=synthesis).exists()
    again = api.post(
        f"/api/v1/review/{item.pk}/decide", {"action": "approve"}, content_type="application/json"
    )
    assert again.status_code == HTTPStatus.CONFLICT


def test_the_dashboard_review_shows_the_file_as_it_will_be_written(
    owner: Any, logged_in: Client
) -> None:
    _, item = _synthesis_item(owner)
    page = logged_in.get("/review/").content.decode()
    (path,) = item.payload["files"]
    assert f".claude/{path}" in page
    assert "**Exception:** a Bash call just failed" in page


def test_one_habit_in_3_project_scopes_is_one_user_scope_lesson(owner: Any) -> None:
    for project in ("shop", "blog", "wiki") * 2:
        replay(owner, breadth_first(), cwd=f"/home/alice/{project}", scope=f"project:{project}")
    stages.consolidate(owner=owner)
    # Each project alone has 6 reads (conf 0.6 < 0.7): together they are one confident lesson.
    (synthesis,) = Synthesis.objects.filter(state=Synthesis.State.REVIEW)
    assert synthesis.confidence == pytest.approx(min(1, 18 / 10) * synthesis.thesis.cohesion, 0.05)
    assert synthesis.exemplars == 18 and len(synthesis.projects) == 3
    item = ReviewItem.objects.get(pk=synthesis.review_item_id)
    assert item.payload["scope"] == "user"
    assert stages.consolidate(owner=owner).syntheses == 0
