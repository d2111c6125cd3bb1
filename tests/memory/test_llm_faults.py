"""A slow or failing Claude: no hook waits for it (the hook path never calls Claude), and the
background work that does call it runs its deterministic fallback."""

from __future__ import annotations

import time
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from memory.models import AgentSession, LearningSignal, Outcome
from memory.services.learning import signal_extract
from memory.services.sessions import outcomes_attribute

pytestmark = pytest.mark.django_db
URL = "/api/v1/hooks/claude-code"
LESSON = "Always run the database migrations check before pushing a release branch."


def test_hooks_never_wait_for_a_slow_failing_claude_and_the_tasks_fall_back(
    api: Client, owner: Any, fake_claude: Any
) -> None:
    fake_claude.slow_failure(0.3, times=40)
    created = api.post(
        "/api/v1/engrams",
        {"statement": LESSON, "scope": "project:app", "source": "user"},
        content_type="application/json",
    )
    assert created.status_code == HTTPStatus.CREATED
    started = time.monotonic()
    for event, fields in [
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {"prompt": "Always use pathlib for file paths in this repo."}),
        ("UserPromptSubmit", {"prompt": "run the database migrations check before release"}),
        ("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "make check"}}),
        ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "make check"}}),
        ("Stop", {}),
        ("SessionEnd", {"reason": "exit"}),
    ]:
        body = {"hook_event_name": event, "session_id": "S-llm", "cwd": "/w/app", **fields}
        response = api.post(URL, body, content_type="application/json")
        assert response.status_code == HTTPStatus.OK, event
    assert fake_claude.requests == []  # no hook asked Claude anything
    assert time.monotonic() - started < 5.0

    # The background work asks Claude, which times out: the fallbacks decide.
    # (the second prompt, a step tied to a release, is a candidate's signal of its own)
    signal = LearningSignal.objects.get(owner=owner, text__contains="pathlib")
    signal_extract(signal_pk=signal.pk)
    signal.refresh_from_db()
    assert signal.state == LearningSignal.State.DONE
    assert signal.producer == "heuristic"
    session = AgentSession.objects.get(owner=owner, session_id="S-llm")
    assert outcomes_attribute(session_pk=session.pk) > 0
    sources = set(Outcome.objects.filter(owner=owner).values_list("source", flat=True))
    assert sources == {Outcome.Source.AUTO_HEURISTIC}
    assert fake_claude.requests  # Claude was tried first
