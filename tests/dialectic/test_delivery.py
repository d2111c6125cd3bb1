"""Delivery: GET /api/v1/artifacts, syncing into .claude/ (engram_publish and engram-hook),
the user-edited-file rule, retirement, and the hybrid scripts' intelligence points."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from dialectic.models import Artifact
from dialectic.selectors import delivery_list
from dialectic.services import consolidation as stages
from memory.integrations import artifact_sync, hookclient
from memory.models import ApiToken, ReviewItem
from memory.services.review import review_decide
from tests.dialectic.helpers import plant, replay, workflow

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


def published(owner: Any, *, skill: bool = False) -> list[Artifact]:
    plant(owner, habit=6, exceptions=6)
    if skill:
        for _ in range(10):
            replay(owner, workflow())
    stages.consolidate(owner=owner)
    for item in ReviewItem.objects.filter(kind="synthesis", state="pending"):
        review_decide(owner=owner, item=item, action="approve", actor="alice")
    return list(Artifact.objects.all())


def test_artifacts_list_path_content_version_and_hash_for_a_scope(owner: Any, api: Client) -> None:
    artifacts = published(owner)
    body = api.get("/api/v1/artifacts?scope=project:shop").json()
    assert body["scope"] == "project:shop"
    assert {a["id"] for a in body["artifacts"]} == {a.pk for a in artifacts}
    rule = next(a for a in body["artifacts"] if a["kind"] == "rule")
    (file,) = [f for f in rule["files"] if f["path"].startswith("rules/engram/")]
    assert rule["version"] == 1 and rule["target"] == "project"
    assert file["hash"] in file["known_hashes"]
    assert "<!-- engram:pattern:" in file["content"]
    by_cwd = api.get("/api/v1/artifacts?cwd=/home/alice/shop").json()
    assert by_cwd["scope"] == "project:shop" and by_cwd["artifacts"] == body["artifacts"]
    assert api.get("/api/v1/artifacts?scope=project:other").json()["artifacts"] == []


def test_bad_artifact_queries_get_clear_errors(owner: Any, api: Client, other_api: Client) -> None:
    published(owner)
    bad = api.get("/api/v1/artifacts?scope=not a scope")
    assert bad.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert bad.json()["code"] == "validation_error"
    assert other_api.get("/api/v1/artifacts?scope=project:shop").json()["artifacts"] == []
    artifact = Artifact.objects.first()
    assert artifact is not None
    assert other_api.get(f"/api/v1/artifacts/{artifact.pk}").status_code == HTTPStatus.NOT_FOUND


def test_a_token_limited_to_another_scope_is_refused(owner: Any) -> None:
    published(owner)
    _, raw = ApiToken.issue(owner=owner, name="narrow", scopes=["project:blog"])
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    assert client.get("/api/v1/artifacts?scope=project:shop").status_code == HTTPStatus.FORBIDDEN


def test_sync_writes_owned_files_and_leaves_a_user_edit_alone(owner: Any, tmp_path: Path) -> None:
    published(owner)
    listing = delivery_list(owner, "project:shop")
    first = artifact_sync.sync(listing, str(tmp_path), str(tmp_path / "home"))
    assert first.written and not first.edited
    rule = next(Path(p) for p in first.written if "/rules/engram/" in p)
    assert rule.is_relative_to(tmp_path / ".claude" / "rules" / "engram")
    again = artifact_sync.sync(listing, str(tmp_path), str(tmp_path / "home"))
    assert not again.written and len(again.unchanged) == len(first.written)
    rule.write_text(rule.read_text() + "\nMy own note.\n")
    edited = artifact_sync.sync(listing, str(tmp_path), str(tmp_path / "home"))
    assert edited.edited == [str(rule)]
    assert rule.read_text().endswith("My own note.\n")  # left alone


def test_a_file_from_an_older_version_is_updated(owner: Any, tmp_path: Path) -> None:
    published(owner)
    listing = delivery_list(owner, "project:shop")
    artifact_sync.sync(listing, str(tmp_path))
    rule_entry = next(a for a in listing if a["kind"] == "rule")["files"][0]
    old = "old version\n"
    rule_entry["known_hashes"].append(artifact_sync._digest(old.encode()))
    target = tmp_path / ".claude" / rule_entry["path"]
    target.write_text(old)
    report = artifact_sync.sync(listing, str(tmp_path))
    assert str(target) in report.written
    assert target.read_text() == rule_entry["content"]


def test_retired_artifacts_are_removed_unless_edited(
    owner: Any, api: Client, tmp_path: Path
) -> None:
    artifacts = published(owner, skill=True)
    artifact_sync.sync(delivery_list(owner, "project:shop"), str(tmp_path))
    skills = [a for a in artifacts if a.kind == "skill"]
    assert skills and any(a.kind == "rule" for a in artifacts)
    for artifact in artifacts:
        response = api.post(f"/api/v1/artifacts/{artifact.pk}/retire")
        assert response.status_code == HTTPStatus.OK and response.json()["status"] == "retired"
    rule_file = next((tmp_path / ".claude" / "rules" / "engram").iterdir())
    rule_file.write_text("edited by me\n")
    report = artifact_sync.sync(delivery_list(owner, "project:shop"), str(tmp_path))
    assert report.edited == [str(rule_file)]
    assert rule_file.exists()
    assert not (tmp_path / ".claude" / "skills").exists() or not any(
        (tmp_path / ".claude" / "skills").iterdir()
    )
    assert len(report.removed) == 3 * len(skills)  # SKILL.md and two scripts each


def test_sync_refuses_paths_outside_its_folders(tmp_path: Path) -> None:
    listing = [
        {
            "status": "active",
            "target": "project",
            "files": [
                {"path": "../evil.md", "content": "x", "hash": "", "known_hashes": []},
                {"path": "settings.json", "content": "{}", "hash": "", "known_hashes": []},
                {"path": "rules/engram/../../x.md", "content": "x", "hash": "", "known_hashes": []},
            ],
        }
    ]
    report = artifact_sync.sync(listing, str(tmp_path))
    assert len(report.refused) == 3
    assert not (tmp_path / ".claude").exists()


def test_engram_publish_writes_into_a_project_and_reports_edits(owner: Any, tmp_path: Path) -> None:
    owner.is_superuser = True
    owner.save()
    published(owner, skill=True)
    project = tmp_path / "shop"
    project.mkdir()
    out = io.StringIO()
    call_command("engram_publish", "--project", str(project), "--home", str(tmp_path), stdout=out)
    assert "project:shop:" in out.getvalue()
    assert list((project / ".claude" / "rules" / "engram").glob("*.md"))
    skill_md = next((project / ".claude" / "skills").glob("*/SKILL.md"))
    skill_md.write_text("mine\n")
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "engram_publish", "--project", str(project), "--home", str(tmp_path), stdout=out, stderr=err
    )
    assert f"edited    {skill_md}" in out.getvalue()
    assert "left alone" in err.getvalue()


def test_the_skill_script_runs_and_degrades_to_exit_3_without_claude_or_a_key(
    owner: Any, tmp_path: Path, live_server: Any
) -> None:
    published(owner, skill=True)
    artifact_sync.sync(delivery_list(owner, "project:shop"), str(tmp_path))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n")
    script = next((tmp_path / ".claude" / "skills").glob("*make-docs*/scripts/*make_docs*.py"))
    _, raw = ApiToken.issue(owner=owner, name="script")
    env = {
        "PATH": "/usr/bin:/bin",  # no `claude` CLI
        "ENGRAM_URL": live_server.url,
        "ENGRAM_TOKEN": raw,
        "HOME": str(tmp_path),
    }
    assert not any(Path(p, "claude").exists() for p in env["PATH"].split(":"))
    done = subprocess.run(
        [sys.executable, str(script), "docs/guide.md"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    assert "[1/3] Read" in done.stdout and "# Guide" in done.stdout  # deterministic step ran
    assert "ENGRAM: no intelligence available" in done.stdout  # the Edit step asks the agent


def test_intelligence_is_503_llm_unavailable_without_a_key(api: Client) -> None:
    response = api.post(
        "/api/v1/intelligence", {"task": "Pick a name"}, content_type="application/json"
    )
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert response.json()["code"] == "llm_unavailable"


def test_intelligence_answers_with_the_llm(api: Client, fake_claude: Any) -> None:
    fake_claude.reply({"answer": "engram"}).reply({"ok": True})
    response = api.post(
        "/api/v1/intelligence",
        {"task": "Pick a name", "context": "a memory server"},
        content_type="application/json",
    )
    assert response.json() == {"result": "engram"}
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    response = api.post(
        "/api/v1/intelligence",
        {"task": "Is it?", "schema": schema},
        content_type="application/json",
    )
    assert response.json() == {"result": {"ok": True}}
    bad = api.post(
        "/api/v1/intelligence",
        {"task": "x", "schema": {"type": "array"}},
        content_type="application/json",
    )
    assert bad.status_code == HTTPStatus.UNPROCESSABLE_ENTITY


def test_engram_hook_syncs_artifacts_at_session_start(
    owner: Any, live_server: Any, tmp_path: Path
) -> None:
    published(owner)
    _, raw = ApiToken.issue(owner=owner, name="hook")
    project = tmp_path / "shop"
    project.mkdir()
    env = {
        "ENGRAM_URL": live_server.url,
        "ENGRAM_TOKEN": raw,
        "ENGRAM_HOOK_TIMEOUT": "20",
        "ENGRAM_HOOK_STATE": str(tmp_path / "state"),
        "CLAUDE_PROJECT_DIR": str(project),
    }
    payload = {"hook_event_name": "SessionStart", "session_id": "s-hook", "cwd": str(project)}
    out = io.StringIO()
    assert hookclient.main(io.BytesIO(json.dumps(payload).encode()), out, env) == 0
    rules = list((project / ".claude" / "rules" / "engram").glob("*.md"))
    assert rules
    rules[0].write_text("changed\n")
    out = io.StringIO()
    hookclient.main(io.BytesIO(json.dumps(payload).encode()), out, env)
    answer = json.loads(out.getvalue())
    assert str(rules[0]) in answer["systemMessage"]
    assert rules[0].read_text() == "changed\n"


def test_engram_hook_stays_silent_when_the_server_is_down(tmp_path: Path) -> None:
    env = {
        "ENGRAM_URL": "http://127.0.0.1:9",
        "ENGRAM_HOOK_TIMEOUT": "1",
        "CLAUDE_PROJECT_DIR": str(tmp_path),
    }
    payload = {"hook_event_name": "SessionStart", "session_id": "s", "cwd": str(tmp_path)}
    out = io.StringIO()
    assert hookclient.main(io.BytesIO(json.dumps(payload).encode()), out, env) == 0
    assert out.getvalue() == ""
    assert not (tmp_path / ".claude").exists()
    assert os.listdir(tmp_path) == []


def test_a_scope_limited_token_must_name_its_scope(owner: Any) -> None:
    published(owner)
    _, raw = ApiToken.issue(owner=owner, name="narrow", scopes=["project:shop"])
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    for url in ("/api/v1/artifacts", "/api/v1/dialectic/theses"):
        response = client.get(url)
        assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
        assert response.json()["details"]["field"] == "scope"
    assert client.get("/api/v1/dialectic/theses?scope=project:shop").json()["total"] > 0


def test_clusters_theses_and_syntheses_over_rest(owner: Any, api: Client) -> None:
    published(owner)
    clusters = api.get("/api/v1/dialectic/clusters?limit=2").json()
    assert len(clusters["items"]) == 2 and clusters["total"] > 2
    theses = api.get("/api/v1/dialectic/theses").json()["items"]
    top = next(t for t in theses if t["expected_sequence"][-1] == "Read")
    detail = api.get(f"/api/v1/dialectic/theses/{top['id']}").json()
    assert detail["antitheses_list"] and detail["evidence"]
    assert detail["syntheses"][0]["q"] > 0.6
    syntheses = api.get("/api/v1/dialectic/syntheses").json()["items"]
    assert {"q", "coverage", "consistency", "parsimony", "output_type"} <= set(syntheses[0])
    assert api.get("/api/v1/dialectic/theses/999999").status_code == HTTPStatus.NOT_FOUND
