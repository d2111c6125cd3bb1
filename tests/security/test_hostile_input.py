"""Hostile input: a token that names a file, a schema or a template must end in a clear 4xx or a
recorded refusal, with nothing leaked and nothing lost (issue #23)."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from memory.models import AgentSession, Engram, LearningSignal
from memory.services import learning, recovery, suppression

URL = "/api/v1/hooks/claude-code"
SECRET = "never-served-" + "5f0c1b2a"
RULE = "Always run the linter before committing."


def line(kind: str, content: object) -> str:
    return json.dumps({"type": kind, "message": {"role": kind, "content": content}}) + "\n"


def hook(api: Client, event: str, **fields: Any) -> None:
    body = {"hook_event_name": event, "session_id": "s1", "cwd": "/home/dev/shop", **fields}
    response = api.post(URL, body, content_type="application/json")
    assert response.status_code == 200, response.content


@pytest.fixture
def folders(settings: Any, tmp_path: Path) -> tuple[Path, Path]:
    """An allowed transcript folder and, beside it, a folder the server must not read."""
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    settings.ENGRAM_TRANSCRIPT_DIRS = [str(allowed)]
    settings.ENGRAM_PROJECT_ROOTS = [str(allowed)]
    return allowed, outside


def secret_file(outside: Path) -> Path:
    """A JSON-lines file whose user entry states a rule and carries a secret."""
    path = outside / "secret.jsonl"
    path.write_text(line("user", f"{RULE} The key is {SECRET}."))
    return path


def capture(api: Client, path: str) -> AgentSession:
    hook(api, "UserPromptSubmit", prompt="Let's start on the cart.")
    hook(api, "Stop", transcript_path=path)
    session = AgentSession.objects.get()
    learning.session_capture(session_pk=session.pk)
    session.refresh_from_db()
    return session


def served(api: Client) -> str:
    """Everything the REST API serves back of signals, drafts and engrams."""
    return "".join(
        api.get(url).content.decode()
        for url in ("/api/v1/learning/signals", "/api/v1/learning/drafts", "/api/v1/engrams")
    )


def assert_nothing_read(api: Client, session: AgentSession, reason: str) -> None:
    assert not LearningSignal.objects.filter(kind="transcript").exists()
    assert session.transcript_offset == 0
    assert SECRET not in served(api)
    assert not Engram.objects.filter(statement__contains="linter").exists()
    assert [r["reason"] for r in session.read_refusals if r["what"] == "transcript"] == [reason]


OUTSIDE = "outside the folders this server may read (ENGRAM_TRANSCRIPT_DIRS)"


def test_a_transcript_outside_the_allowed_folders_is_not_read(
    api: Client, folders: tuple[Path, Path]
) -> None:
    session = capture(api, str(secret_file(folders[1])))
    assert_nothing_read(api, session, OUTSIDE)


def test_the_secret_key_and_system_files_are_not_read(api: Client, settings: Any) -> None:
    settings.ENGRAM_TRANSCRIPT_DIRS = ["~/.claude/projects"]
    session = capture(api, "/etc/passwd")
    assert_nothing_read(api, session, OUTSIDE)
    assert "root:" not in served(api)


def test_a_symbolic_link_out_of_the_folder_is_not_followed(
    api: Client, folders: tuple[Path, Path]
) -> None:
    allowed, outside = folders
    link = allowed / "t.jsonl"
    link.symlink_to(secret_file(outside))
    session = capture(api, str(link))
    assert_nothing_read(api, session, OUTSIDE)


def test_dot_dot_cannot_leave_the_folder(api: Client, folders: tuple[Path, Path]) -> None:
    allowed, outside = folders
    secret_file(outside)
    session = capture(api, f"{allowed}/../outside/secret.jsonl")
    assert_nothing_read(api, session, OUTSIDE)


def test_a_relative_path_is_not_read(api: Client, folders: tuple[Path, Path]) -> None:
    session = capture(api, "secret.jsonl")
    assert_nothing_read(api, session, "not an absolute path on this server")


def test_a_file_that_is_not_json_lines_is_passed_over_and_never_echoed(
    api: Client, folders: tuple[Path, Path]
) -> None:
    path = folders[0] / "notes.jsonl"
    path.write_text(f"{RULE} {SECRET}\nroot:x:0:0:root:/root:/bin/bash\n")
    session = capture(api, str(path))
    assert not LearningSignal.objects.filter(kind="transcript").exists()
    # The bytes were looked at once (the offset moved past them): no re-read, no text kept.
    assert session.transcript_offset == path.stat().st_size
    assert SECRET not in served(api)
    assert "root:x" not in served(api)
    assert session.read_refusals[0]["reason"] == "lines that are not JSON objects were skipped"


def test_json_lines_beside_bad_lines_are_still_captured(
    api: Client, folders: tuple[Path, Path]
) -> None:
    path = folders[0] / "t.jsonl"
    path.write_text(f"not json {SECRET}\n" + line("user", RULE) + "[1, 2]\n")
    capture(api, str(path))
    signal = LearningSignal.objects.get(kind="transcript")
    assert SECRET not in signal.text
    assert "[1, 2]" not in signal.text
    assert Engram.objects.filter(statement=RULE).exists()


def test_a_file_over_the_size_cap_is_not_read(
    api: Client, folders: tuple[Path, Path], settings: Any
) -> None:
    settings.ENGRAM_MAX_TRANSCRIPT_BYTES = 4096
    path = folders[0] / "huge.jsonl"
    path.write_text(line("user", RULE))
    with path.open("ab") as handle:
        handle.truncate(4097)  # sparse: the size is what counts
    session = capture(api, str(path))
    assert_nothing_read(api, session, "larger than 4096 bytes")


def test_a_fifo_is_refused_without_blocking(api: Client, folders: tuple[Path, Path]) -> None:
    fifo = folders[0] / "pipe.jsonl"
    os.mkfifo(fifo)
    session = capture(api, str(fifo))
    assert_nothing_read(api, session, "not a regular file")


def test_a_device_is_refused(api: Client, folders: tuple[Path, Path], settings: Any) -> None:
    settings.ENGRAM_TRANSCRIPT_DIRS = ["/dev"]
    session = capture(api, "/dev/zero")
    assert_nothing_read(api, session, "not a regular file")


def test_lines_engram_hook_attaches_are_captured_wherever_the_file_is(
    api: Client, folders: tuple[Path, Path]
) -> None:
    hook(api, "UserPromptSubmit", prompt="Let's start on the cart.")
    text = line("user", RULE)
    attached = {"offset": 0, "lines": [text.rstrip("\n")]}
    hook(api, "Stop", transcript_path="/somewhere/else.jsonl", engram_transcript=attached)
    session = AgentSession.objects.get()
    learning.session_capture(session_pk=session.pk)
    assert Engram.objects.filter(statement=RULE).exists()
    session.refresh_from_db()
    assert session.transcript_offset == len(text)


def test_the_session_page_says_why_a_file_was_not_read(
    api: Client, logged_in: Client, folders: tuple[Path, Path]
) -> None:
    session = capture(api, str(secret_file(folders[1])))
    page = logged_in.get(f"/sessions/{session.pk}/").content.decode()
    assert "Files not read" in page
    assert OUTSIDE in page
    assert SECRET not in page


def test_the_sweep_does_not_look_outside_the_folders(
    api: Client, folders: tuple[Path, Path]
) -> None:
    path = secret_file(folders[1])
    hook(api, "UserPromptSubmit", prompt="Let's start on the cart.")
    hook(api, "Stop", transcript_path=str(path))
    session = AgentSession.objects.get()
    AgentSession.objects.filter(pk=session.pk).update(ended_at=session.started_at)
    found = recovery._unread_transcripts(session.started_at, session.started_at, 10)
    assert found == []


def test_project_rules_are_not_read_outside_the_project_roots(
    api: Client, folders: tuple[Path, Path]
) -> None:
    project = folders[1] / "shop"
    project.mkdir()
    (project / "CLAUDE.md").write_text(f"- {RULE}\n")
    hook(api, "SessionStart", cwd=str(project))
    session = AgentSession.objects.get()
    assert suppression.session_suppress(session_pk=session.pk) == []
    session.refresh_from_db()
    assert session.read_refusals[0]["what"] == "project rules"
    assert "ENGRAM_PROJECT_ROOTS" in session.read_refusals[0]["reason"]


def test_project_rule_files_that_link_out_of_the_project_are_skipped(
    folders: tuple[Path, Path],
) -> None:
    allowed, outside = folders
    (outside / "stolen.md").write_text(f"- {SECRET} is the password.\n")
    project = allowed / "shop"
    (project / ".claude" / "rules").mkdir(parents=True)
    (project / "CLAUDE.md").symlink_to(outside / "stolen.md")
    (project / ".claude" / "rules" / "a.md").write_text(f"- {RULE}\n")
    os.mkfifo(project / ".claude" / "rules" / "b.md")
    files = suppression.project_rule_files(str(project))
    assert [f.name for f in files] == ["a.md", "b.md"]
    assert suppression.read_statements(files) == [RULE]


def test_healthz_says_ok_or_not_per_part_and_nothing_more(
    client: Client, owner: Any, settings: Any
) -> None:
    from memory.models import LlmCall

    settings.ANTHROPIC_API_KEY = "sk-ant-x"
    LlmCall.objects.create(owner=owner, task="t", outcome="failed", error=f"boom {SECRET}")
    response = client.get("/healthz")
    body = response.json()
    assert set(body) == {"status", "checks"}
    assert all(check == {"ok": check["ok"]} for check in body["checks"].values())
    text = response.content.decode()
    for leak in (SECRET, str(settings.BROKER_DIR), settings.ENGRAM_LLM_MODEL, "token"):
        assert leak not in text


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({"type": "object", "properties": {"a": {"$ref": "https://example.org/s.json"}}}, "$ref"),
        ({"type": "object", "$id": "https://example.org/s.json"}, "$id"),
        ({"type": "object", "allOf": [{"$ref": "#/definitions/x"}]}, "$ref"),
        ({"type": "object", "properties": {"a": {"type": "no-such-type"}}}, "not a valid"),
        ({"type": "object", "required": "a"}, "not a valid"),
    ],
)
def test_a_schema_that_refers_elsewhere_or_is_invalid_is_422(
    api: Client, fake_claude: Any, schema: dict[str, Any], says: str
) -> None:
    response = api.post(
        "/api/v1/intelligence", {"task": "x", "schema": schema}, content_type="application/json"
    )
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["code"] == "validation_error"
    assert says in body["message"]
    assert fake_claude.requests == []  # nothing was sent, no budget spent


def test_template_text_in_observations_stays_literal_in_skill_scripts() -> None:
    from dialectic import render

    command = "echo '{statement} {steps} {tag} {title}'"
    lesson = render.Lesson(
        pattern_id=1,
        synthesis_id=1,
        title="Check {statement}",
        statement="Run the checks {steps} first.",
        condition="",
        confidence=0.9,
        paths=(),
        steps=(render.Step(tool="Bash", example=command, deterministic=True),),
    )
    script = render.hybrid_script(lesson, "engram:pattern:1")
    constants = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in ast.parse(script).body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }
    assert constants["STATEMENT"] == "Run the checks {steps} first."
    assert constants["STEPS"][0]["example"] == command
    assert "Check {statement}" in script
