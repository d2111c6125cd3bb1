"""Planted behaviour for the dialectic tests: sessions of tool calls stored as observations."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from memory.models import AgentSession
from memory.services.sessions import observation_record

Call = tuple[str, dict[str, Any], bool]  # tool, input, success
_ids = itertools.count(1)


def breadth_first(folder: str = "src/api") -> list[Call]:
    return [
        ("Glob", {"pattern": f"{folder}/**/*.py"}, True),
        ("Grep", {"pattern": "def handle", "path": folder}, True),
        ("Read", {"file_path": f"{folder}/views.py"}, True),
        ("Read", {"file_path": f"{folder}/models.py"}, True),
        ("Read", {"file_path": f"{folder}/urls.py"}, True),
    ]


def depth_first(folder: str = "src/api") -> list[Call]:
    return [
        ("Bash", {"command": "pytest tests/test_api.py -x"}, False),
        ("Read", {"file_path": f"{folder}/views.py"}, True),
        ("Edit", {"file_path": f"{folder}/views.py", "old_string": "a", "new_string": "b"}, True),
        ("Bash", {"command": "pytest tests/test_api.py -x"}, False),
        ("Read", {"file_path": f"{folder}/models.py"}, True),
    ]


def workflow(folder: str = "docs") -> list[Call]:
    return [
        ("Read", {"file_path": f"{folder}/guide.md"}, True),
        ("Edit", {"file_path": f"{folder}/guide.md", "old_string": "a", "new_string": "b"}, True),
        ("Bash", {"command": "make docs"}, True),
    ]


def replay(
    owner: Any,
    calls: list[Call],
    *,
    cwd: str = "/home/alice/shop",
    scope: str = "project:shop",
    when: datetime | None = None,
) -> AgentSession:
    when = when or timezone.now()
    session = AgentSession.objects.create(
        owner=owner, session_id=f"s-{next(_ids)}", scope=scope, cwd=cwd, started_at=when
    )
    for n, (tool, data, ok) in enumerate(calls):
        payload = {k: (f"{cwd}/{v}" if k == "file_path" else v) for k, v in data.items()}
        observation_record(
            owner=owner,
            tool=tool,
            tool_input=payload,
            tool_output="ok" if ok else "FAILED tests/test_api.py::test_x - AssertionError",
            success=ok,
            session=session,
            now=when + timedelta(seconds=n),
        )
    return session


def plant(owner: Any, *, habit: int = 6, exceptions: int = 4, when: datetime | None = None) -> None:
    """`habit` breadth-first sessions, then `exceptions` depth-first debugging sessions."""
    when = when or timezone.now() - timedelta(hours=2)
    for n in range(habit):
        replay(owner, breadth_first(), when=when + timedelta(minutes=n))
    for n in range(exceptions):
        replay(owner, depth_first(), when=when + timedelta(minutes=30 + n))
