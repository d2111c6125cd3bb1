"""A database that is down or restarting: API requests fail at once with 503 and a Retry-After
(never a 500, never a hang past the hook timeout), and the next request after it is back
reconnects without restarting Engram. bench/faults.py restarts a real PostgreSQL under load."""

from __future__ import annotations

import socket
import time
from http import HTTPStatus
from typing import Any

import pytest
from django.db import connection
from django.test import Client

URL = "/api/v1/hooks/claude-code"


def unreachable(settings_dict: dict[str, Any], tmp: Any) -> dict[str, Any]:
    changed = dict(settings_dict)
    if connection.vendor == "postgresql":
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        changed.update(HOST="127.0.0.1", PORT=str(port))
    else:
        changed["NAME"] = str(tmp / "no-such-directory" / "engram.sqlite3")
    return changed


@pytest.mark.sqlite
@pytest.mark.django_db(transaction=True)
def test_hooks_get_a_quick_503_while_the_database_is_down_then_recover(
    api: Client, tmp_path: Any
) -> None:
    body = {"hook_event_name": "PostToolUse", "session_id": "S-db", "tool_name": "Bash",
            "tool_input": {"command": "ls"}, "cwd": "/w/app"}  # fmt: skip
    assert api.post(URL, body, content_type="application/json").status_code == HTTPStatus.OK
    original = connection.settings_dict
    connection.close()
    connection.settings_dict = unreachable(original, tmp_path)
    try:
        started = time.monotonic()
        response = api.post(URL, body, content_type="application/json")
        elapsed = time.monotonic() - started
    finally:
        connection.close()
        connection.settings_dict = original
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert response.json()["code"] == "database_unavailable"
    # The embedded default's database is a file: the answer says what to look at.
    expected = "disk may be full" if connection.vendor == "sqlite" else "not reachable"
    assert expected in response.json()["message"]
    assert int(response["Retry-After"]) > 0
    assert elapsed < 3.0  # engram-hook's own timeout
    # Back: the same process reconnects on the next request.
    assert api.post(URL, body, content_type="application/json").status_code == HTTPStatus.OK
