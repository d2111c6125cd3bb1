"""Fuzzed Claude Code hook payloads: every event with missing, wrong-typed, huge and
unicode-broken fields, and bodies that are not JSON objects at all. Never a 5xx; a refusal is a
clear 4xx envelope and writes nothing. (A larger run: ENGRAM_FUZZ_EXAMPLES=2000.)"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.integrations.claude_code import HANDLERS
from memory.models import AgentSession, Engram, Injection, LearningSignal, Observation

pytestmark = pytest.mark.django_db
URL = "/api/v1/hooks/claude-code"
EXAMPLES = int(os.environ.get("ENGRAM_FUZZ_EXAMPLES", "120"))
FIELDS = [
    "session_id", "transcript_path", "cwd", "prompt", "tool_name", "tool_input",
    "tool_response", "error", "source", "last_assistant_message", "engram_transcript",
    "engram_rules", "stop_hook_active", "reason", "permission_mode",
]  # fmt: skip
BROKEN_TEXT = [
    "\ud800",  # a lone surrogate (valid JSON escape, not valid UTF-8)
    "a\x00b",
    "\ufffe\uffff",
    "\u202e rtl override",
    "e\u0301" * 50,
    "🧠" * 300,
    "%s%n{}{{}}",
    "../../etc/passwd",
    "' OR 1=1 --",
]
WRONG = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.lists(st.integers(), max_size=5),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
TEXT = st.one_of(
    st.text(max_size=50),
    st.sampled_from(BROKEN_TEXT),
    st.builds(lambda n: "x" * n, st.sampled_from([201, 5_000, 300_000])),
)
VALUE = st.one_of(TEXT, WRONG, st.recursive(WRONG, lambda inner: st.lists(inner, max_size=3)))
PAYLOAD = st.fixed_dictionaries(
    {"hook_event_name": st.one_of(st.sampled_from(sorted(HANDLERS)), TEXT, WRONG)},
    optional=dict.fromkeys(FIELDS, VALUE),
)


def counts() -> tuple[int, ...]:
    return tuple(
        model.objects.count()
        for model in (AgentSession, Observation, Injection, LearningSignal, Engram)
    )


def check(client: Client, body: bytes) -> None:
    before = counts()
    response = client.post(URL, body, content_type="application/json")
    assert response.status_code < 500, (response.status_code, body[:300])
    if response.status_code >= 400:
        error = response.json()
        assert set(error) >= {"code", "message"}, error
        assert counts() == before, (response.status_code, body[:300])


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(payload=PAYLOAD)
def test_fuzzed_hook_payloads_never_fail_the_server(api: Client, payload: dict[str, Any]) -> None:
    check(api, json.dumps(payload).encode())


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{",
        b"[]",
        b'"SessionStart"',
        b"null",
        b'{"hook_event_name": "PostToolUse", "tool_name": "Bash"',
        b'{"hook_event_name": "\xff\xfe"}',
        b'{"hook_event_name": "UserPromptSubmit", "prompt": "\\ud800\\udc00\\ud800"}',
        b'{"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "\\u0000"}',
        b'{"hook_event_name": "SessionStart", "session_id": "' + b"s" * 5000 + b'"}',
        b'{"hook_event_name": "Stop", "session_id": "s", "engram_transcript": {"offset": -1, '
        b'"lines": [1, null, {"a": 1}]}}',
        b'{"hook_event_name": "Stop", "session_id": "s", "engram_transcript": {"offset": '
        b'99999999999999999999999, "lines": ["x"]}}',
        b'{"hook_event_name": "SessionStart", "session_id": "s", "engram_rules": '
        + json.dumps(["r"] * 500).encode()
        + b"}",
        b'{"hook_event_name": "PreToolUse", "tool_input": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        b'{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": "'
        + b"y" * 3_000_000
        + b'"}',
    ],
)
def test_bodies_that_are_not_hook_payloads_get_a_clear_4xx(api: Client, body: bytes) -> None:
    check(api, body)


IMPORT_TEXT = st.one_of(
    st.text(max_size=300),
    st.builds(
        lambda items: "engrams:\n" + "".join(f"  - {item}\n" for item in items),
        st.lists(st.one_of(st.text(max_size=40), st.sampled_from(BROKEN_TEXT)), max_size=5),
    ),
    st.builds(lambda value: json.dumps(value), st.recursive(WRONG, lambda i: st.lists(i))),
    st.sampled_from(
        [
            "engrams:\n  - statement: [unclosed",
            "engrams: !!python/object/apply:os.system ['true']",
            "[[engrams]]\nstatement = 3\n",
            '{"memories": [{"memory": null}]}',
            "a: &a [*a, *a, *a]",
            "engrams:\n" + "  - statement: x\n" * 3000,
        ]
    ),
)


@settings(
    max_examples=EXAMPLES // 2,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    text=IMPORT_TEXT,
    fmt=st.sampled_from(["", "plur-yaml", "datacore-yaml", "toejough-toml", "mem0-json", "x"]),
)
def test_fuzzed_import_files_never_fail_the_server(api: Client, text: str, fmt: str) -> None:
    before = counts()
    query = f"?format={fmt}" if fmt else ""
    response = api.post(
        "/api/v1/import" + query, text.encode("utf-8", "surrogatepass"), content_type="text/plain"
    )
    assert response.status_code < 500, (response.status_code, text[:300])
    if response.status_code >= 400:
        assert set(response.json()) >= {"code", "message"}
        assert counts() == before


@settings(
    max_examples=EXAMPLES // 4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(lines=st.lists(st.one_of(st.binary(max_size=200), st.sampled_from([
    b"{", b"null", b"[]", b'{"type": "user", "message": 3}',
    b'{"type": "assistant", "message": {"content": [{"type": "tool_use", "input": null}]}}',
    b'{"type": "user", "message": {"content": "\\ud800"}}', b"\xff\xfe\x00",
])), max_size=20))  # fmt: skip
def test_malformed_transcripts_are_read_without_failing(
    api: Client, owner: Any, tmp_path_factory: Any, lines: list[bytes]
) -> None:
    from memory.services.learning import session_capture

    path = tmp_path_factory.mktemp("transcript") / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    sid = f"S-fuzz-{abs(hash(tuple(lines)))}"
    body = {"hook_event_name": "Stop", "session_id": sid, "transcript_path": str(path)}
    start = {"hook_event_name": "SessionStart", "session_id": sid, "cwd": "/w/app"}
    assert api.post(URL, start, content_type="application/json").status_code == 200
    assert api.post(URL, body, content_type="application/json").status_code == 200
    session = AgentSession.objects.get(owner=owner, session_id=sid)
    session_capture(session_pk=session.pk)  # never raises on a malformed transcript
