"""What an observation's text keeps (the practice, the file kind and place, failure), and bad
input through the hooks: stored or skipped with a reason, never a crash of consolidation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from dialectic import observe
from dialectic.models import Trace
from dialectic.services import consolidation as stages
from memory.models import Observation
from tests.dialectic.helpers import replay

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]

HOOK = "/api/v1/hooks/claude-code"


def _text(tool: str, data: dict[str, Any], *, success: bool = True) -> str:
    return observe.observation_text(tool, data, "/home/a/shop", success=success)


def test_two_runs_of_one_practice_on_different_files_read_alike() -> None:
    first = _text("Bash", {"command": "pytest specs/x_spec.py -v"})
    second = _text("Bash", {"command": "cd /home/a/shop && pytest specs/y_spec.py -v"})
    assert first == second == "Bash `pytest specs/*.py -v`"


def test_the_text_keeps_the_subcommand_and_flags_not_just_the_program() -> None:
    assert _text("Bash", {"command": "git add -A"}) != _text("Bash", {"command": "git add a.py"})
    assert "uv run pytest" in _text("Bash", {"command": "uv run pytest tests/ -q"})


def test_file_tools_keep_the_kind_and_folder_and_a_failure_says_so() -> None:
    data = {"file_path": "/home/a/shop/src/api/views.py"}
    assert _text("Edit", data) == "Edit .py file in src/api"
    assert _text("Edit", data, success=False) == "Edit .py file in src/api failed"


def test_a_cut_off_json_input_still_yields_its_command() -> None:
    raw = json.dumps({"command": "make docs && " + "echo x; " * 2000})[:4000]
    assert observe.tool_input(raw)["command"].startswith("make docs && echo x;")


def _post(api: Client, body: dict[str, Any]) -> None:
    answer = api.post(HOOK, json.dumps(body), content_type="application/json")
    assert answer.status_code == 200, answer.content


def test_bad_observations_are_stored_and_consolidation_runs_through(
    owner: Any, api: Client
) -> None:
    base = {"session_id": "bad-1", "cwd": "/home/a/shop"}
    _post(api, {**base, "hook_event_name": "SessionStart", "source": "startup"})
    huge = "pytest tests/test_a.py -x " + "--flag " * 15_000  # about 100 kB
    calls = [
        ("Bash", {"command": huge}, "ok"),
        ("Read", {"file_path": "/home/a/shop/data.bin"}, "\x00\x01\xff\ufffd" * 500),
        ("mcp__never_seen__tool", {"deep": {"list": [1, 2, {"x": None}]}}, {"weird": True}),
    ]
    for tool, data, output in calls:
        _post(
            api,
            {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": tool,
                "tool_input": data,
                "tool_response": output,
            },
        )
    counts = stages.consolidate(owner=owner)
    assert counts.embedded == Observation.objects.filter(owner=owner).count() == 3
    texts = dict(Trace.objects.values_list("tool", "text"))
    assert texts["Bash"].startswith("Bash `pytest tests/*.py -x --flag`")
    assert texts["Read"] == "Read .bin file in the project root"
    assert texts["mcp__never_seen__tool"] == "mcp__never_seen__tool"
    assert stages.consolidate(owner=owner).embedded == 0


def test_an_observation_without_a_session_is_its_own_window(owner: Any) -> None:
    replay(owner, [("Bash", {"command": "make docs"}, True)])
    Observation.objects.update(session=None)
    stages.consolidate(owner=owner)
    trace = Trace.objects.get()
    assert trace.sequence == ["Bash"] and trace.previous == ""
