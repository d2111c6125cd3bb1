"""Cross-source suppression: what CLAUDE.md and .claude/rules already say is not injected."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from memory.integrations import hookclient
from memory.maths.textnorm import rule_lines
from memory.models import AgentSession, Engram, ReviewItem
from memory.services import review, suppression
from memory.services.retrieval import inject
from tests.memory.helpers import make_engram

STATED = "Run database migrations before the test suite"


def test_rule_lines_are_the_rules_of_a_markdown_file() -> None:
    text = "# Project rules\n\n- Run database migrations before the test suite\n- ok\n```\nnot this one at all\n```\n1. Never push straight to main please\n"
    assert rule_lines(text) == [
        "Run database migrations before the test suite",
        "Never push straight to main please",
    ]


@pytest.mark.django_db
def test_an_engram_the_project_already_states_is_left_out_and_proposed_for_retirement(
    owner: Any,
) -> None:
    stated = make_engram(owner, statement=STATED, scope="project:shop")
    other = make_engram(owner, statement="Use pnpm to install packages", scope="project:shop")
    session = AgentSession.objects.create(
        owner=owner, session_id="s1", scope="project:shop", project_rules=[STATED + "."]
    )
    assert suppression.session_suppress(session_pk=session.pk) == [stated.engram_id]
    session.refresh_from_db()
    assert session.suppressed_ids == [stated.pk]
    item = ReviewItem.objects.get(kind="maintenance", engram=stated)
    assert item.payload["change"] == "redundant" and item.payload["evidence"]["cosine"] >= 0.9
    assert suppression.session_suppress(session_pk=session.pk) == [stated.engram_id]
    assert ReviewItem.objects.filter(kind="maintenance").count() == 1  # not twice
    prompt = "run the database migrations before the test suite, then install packages"
    with_session = inject(owner=owner, prompt=prompt, scope="project:shop", session=session)
    ids = {i["id"] for i in with_session.directives + with_session.consider}
    assert stated.engram_id not in ids
    without = inject(owner=owner, prompt=prompt, scope="project:shop")
    assert stated.engram_id in {i["id"] for i in without.directives + without.consider}
    assert other.engram_id  # unrelated rules are untouched
    review.review_decide(owner=owner, item=item, action="approve", actor="person:alice")
    assert Engram.objects.get(pk=stated.pk).status == "retired"


@pytest.mark.django_db
def test_the_rules_are_read_from_the_cwd_when_the_server_can(owner: Any, tmp_path: Path) -> None:
    (tmp_path / ".claude" / "rules").mkdir(parents=True)
    (tmp_path / ".claude" / "rules" / "testing.md").write_text(f"- {STATED}\n")
    stated = make_engram(owner, statement=STATED, scope="global")
    session = AgentSession.objects.create(owner=owner, session_id="s2", cwd=str(tmp_path))
    assert suppression.session_suppress(session_pk=session.pk) == [stated.engram_id]


@pytest.mark.django_db(transaction=True)
def test_session_start_stores_the_attached_rules_and_scans_them(
    api: Client, owner: Any, settings: Any
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    stated = make_engram(owner, statement=STATED, scope="global")
    body = {
        "hook_event_name": "SessionStart",
        "session_id": "s3",
        "cwd": "/elsewhere/shop",
        "source": "startup",
        "engram_rules": [STATED],
    }
    response = api.post("/api/v1/hooks/claude-code", body, content_type="application/json")
    assert response.status_code == 200
    session = AgentSession.objects.get(session_id="s3")
    assert session.project_rules == [STATED]
    assert session.suppressed_ids == [stated.pk]


def test_engram_hook_attaches_the_projects_rules_at_session_start(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("# Rules\n- Always run ruff before you commit\n")
    (tmp_path / ".claude" / "rules").mkdir(parents=True)
    (tmp_path / ".claude" / "rules" / "db.md").write_text(f"* {STATED}\n")
    data: dict[str, Any] = {"hook_event_name": "SessionStart", "cwd": str(tmp_path)}
    hookclient.attach_rules(data)
    assert data["engram_rules"] == ["Always run ruff before you commit", STATED]
    other: dict[str, Any] = {"hook_event_name": "Stop", "cwd": str(tmp_path)}
    hookclient.attach_rules(other)
    assert "engram_rules" not in other
    json.dumps(data)  # what is sent is plain JSON


def test_a_rule_file_engram_published_itself_is_not_the_projects_word() -> None:
    text = (
        "---\npaths:\n  - src/**/*.py\n---\n\n# Run the tests after each edit\n\n"
        "Run pytest after every edit of a Python file.\n\n"
        "<!-- engram:pattern:3:synthesis:7:v1:2026-11-25:confidence:0.82 -->\n"
    )
    assert rule_lines(text) == []
    assert rule_lines(text.replace("<!-- engram:pattern:", "<!-- note:")) != []
