"""`engram import-history`: past transcripts through the live capture path, once; a dry run that
writes nothing; bad files skipped with a reason while the rest go in."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from memory.cli.client import Server
from memory.cli.history import MAX_FILE_BYTES, import_history
from memory.models import AgentSession, Engram, LearningSignal
from memory.services import learning
from memory.services.history import IMPORT_AGENT

SHOP = "/home/dev/shop"
RULE = "From now on, always run ruff before you commit."


def entry(kind: str, text: str, session: str, cwd: str = SHOP, **extra: Any) -> str:
    body = {
        "type": kind,
        "sessionId": session,
        "cwd": cwd,
        "timestamp": "2026-03-02T10:00:00Z",
        "message": {"role": kind, "content": text},
        **extra,
    }
    return json.dumps(body) + "\n"


def transcript(folder: Path, name: str, session: str, *lines: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    path.write_text("".join(lines) if lines else entry("user", RULE, session))
    return path


def run(server: Server, *paths: Path, dry: bool = False, **options: Any) -> str:
    out = io.StringIO()
    code = import_history(
        server=server,
        paths=list(paths),
        project=options.get("project"),
        since=options.get("since"),
        dry=dry,
        out=out,
        progress=False,
    )
    assert code == 0
    return out.getvalue()


def extract_everything() -> None:
    for pk in AgentSession.objects.values_list("pk", flat=True):
        learning.session_capture(session_pk=pk)


@pytest.fixture
def server(live_server: Any, token: str) -> Server:
    return Server(url=live_server.url, token=token)


@pytest.mark.django_db(transaction=True)
def test_a_dry_run_lists_the_lessons_per_project_and_writes_nothing(
    server: Server, tmp_path: Path
) -> None:
    transcript(tmp_path / "shop", "a", "s-a")
    transcript(
        tmp_path / "api",
        "b",
        "s-b",
        entry("user", "Never commit .env files.", "s-b", cwd="/home/dev/api"),
        entry("assistant", "Always use tabs, I will remember that.", "s-b", cwd="/home/dev/api"),
    )
    text = run(server, tmp_path, dry=True)
    assert "shop: 1 session(s), 1 lesson(s)" in text
    assert "api: 1 session(s), 1 lesson(s)" in text
    assert "ruff" in text and "commit .env" in text
    assert "tabs" not in text  # the assistant's words are never the user's
    assert AgentSession.objects.count() == 0 and LearningSignal.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_dry_run_lists_a_lesson_said_in_two_sessions_once(server: Server, tmp_path: Path) -> None:
    transcript(tmp_path / "shop", "a", "s-a")
    transcript(tmp_path / "shop", "b", "s-b", entry("user", RULE, "s-b"))
    text = run(server, tmp_path, dry=True)
    assert "shop: 2 session(s), 1 lesson(s)" in text
    assert "said in 2 sessions" in text
    assert "Dry run: 1 lesson(s) from 2 session(s)" in text


@pytest.mark.django_db(transaction=True)
def test_a_dry_run_says_which_lessons_are_active_and_which_wait(
    server: Server, tmp_path: Path
) -> None:
    """A standing rule is active at once; a candidate waits, unless another session said it
    again (the server promotes it on recurrence)."""
    habit = "Run the formatter before committing."
    once = "Prefer small focused commits over big ones."
    transcript(
        tmp_path / "shop", "a", "s-a", entry("user", RULE, "s-a"), entry("user", habit, "s-a")
    )
    transcript(
        tmp_path / "shop", "b", "s-b", entry("user", habit, "s-b"), entry("user", once, "s-b")
    )
    text = run(server, tmp_path, dry=True)
    active, _, waiting = text.partition("candidates (")
    assert "active at once" in active and "ruff" in active and habit in active
    assert once in waiting and habit not in waiting
    assert "(2 active at once, 1 candidate(s))" in text


@pytest.mark.django_db(transaction=True)
def test_import_captures_each_session_once_and_a_rerun_adds_nothing(
    server: Server, tmp_path: Path
) -> None:
    transcript(tmp_path / "shop", "a", "s-a")
    text = run(server, tmp_path)
    assert "Imported 1 session(s)" in text
    session = AgentSession.objects.get(session_id="s-a")
    assert session.scope == "project:shop" and session.agent == IMPORT_AGENT
    assert session.ended_at is not None
    extract_everything()
    [lesson] = Engram.objects.filter(scope="project:shop")
    assert "ruff" in lesson.statement and lesson.source == "user"

    again = run(server, tmp_path)
    assert "already imported" in again and "Imported 0 session(s)" in again
    extract_everything()
    assert LearningSignal.objects.count() == 1
    assert Engram.objects.filter(scope="project:shop").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_grown_transcript_imports_only_its_new_lines(server: Server, tmp_path: Path) -> None:
    path = transcript(tmp_path / "shop", "a", "s-a")
    run(server, tmp_path)
    with path.open("a") as handle:
        handle.write(entry("user", "Never force-push to main.", "s-a"))
    assert "Imported 1 session(s)" in run(server, tmp_path)
    signals = LearningSignal.objects.order_by("offset_start")
    assert [(s.offset_start, s.offset_end) for s in signals] == [
        (0, signals[0].offset_end),
        (signals[0].offset_end, path.stat().st_size),
    ]


@pytest.mark.django_db(transaction=True)
def test_a_session_the_hooks_captured_live_continues_where_they_stopped(
    server: Server, api: Client, tmp_path: Path
) -> None:
    path = transcript(tmp_path / "shop", "3f6c1b2e-8d4a-4c1e-9a57-0b2d9e6f7a10", "x")
    sid = path.stem  # Claude Code names the file after the session
    stop = {"hook_event_name": "Stop", "session_id": sid, "cwd": SHOP}
    api.post(
        "/api/v1/hooks/claude-code", {**stop, "hook_event_name": "SessionStart"}, "application/json"
    )
    stop["engram_transcript"] = {"offset": 0, "lines": path.read_text().splitlines()}
    api.post("/api/v1/hooks/claude-code", stop, content_type="application/json")
    assert "already imported" in run(server, tmp_path)
    assert LearningSignal.objects.filter(kind="transcript").count() == 1


@pytest.mark.django_db(transaction=True)
def test_bad_files_are_skipped_with_a_reason_and_the_rest_imported(
    server: Server, tmp_path: Path
) -> None:
    folder = tmp_path / "shop"
    transcript(folder, "good", "s-good")
    truncated = folder / "truncated.jsonl"
    truncated.write_text(entry("user", RULE, "s-cut") + '{"type": "user", "sessionId": "s-cu')
    (folder / "notes.jsonl").write_text(json.dumps({"name": "not a transcript"}) + "\n")
    huge = folder / "huge.jsonl"
    with huge.open("wb") as handle:  # sparse: 200 MB on paper, nothing on disk
        handle.write(entry("user", RULE, "s-huge").encode())
        handle.truncate(200 * 1024 * 1024)
    assert huge.stat().st_size > MAX_FILE_BYTES
    unreadable = transcript(folder, "locked", "s-locked")
    unreadable.chmod(0)
    if os.access(unreadable, os.R_OK):  # root reads anything: make it a folder-less link
        unreadable.chmod(0o600)
        unreadable.unlink()
        unreadable.symlink_to(folder / "missing-target.jsonl")
    try:
        text = run(server, tmp_path)
    finally:
        if unreadable.exists():
            unreadable.chmod(0o600)
    lines = text.splitlines()

    def reason(name: str) -> str:
        [line] = [line for line in lines if line.startswith("skipped") and name in line]
        return line

    assert "truncated" in reason("truncated.jsonl")
    assert "not a Claude Code transcript" in reason("notes.jsonl")
    assert "larger than the 100 MB limit" in reason("huge.jsonl")
    assert "cannot be read" in reason("locked.jsonl")
    assert "Imported 1 session(s)" in text
    assert list(AgentSession.objects.values_list("session_id", flat=True)) == ["s-good"]


@pytest.mark.django_db(transaction=True)
def test_project_and_since_choose_the_sessions(server: Server, tmp_path: Path) -> None:
    from datetime import date

    transcript(tmp_path / "shop", "a", "s-a")
    transcript(
        tmp_path / "api", "b", "s-b", entry("user", "Never commit .env files.", "s-b", cwd="/x/api")
    )
    text = run(server, tmp_path, project="api")
    assert "(1 left out by --project/--since)" in text
    assert list(AgentSession.objects.values_list("session_id", flat=True)) == ["s-b"]
    assert "0 session(s) to import" in run(server, tmp_path, since=date(2026, 3, 3))


@pytest.mark.django_db(transaction=True)
def test_the_real_transcripts_import_once(server: Server) -> None:
    data = Path(os.environ.get("ENGRAM_TRANSCRIPTS", "/work/data/transcripts"))
    folder = data / "tslateman__duet"
    if not folder.is_dir():
        pytest.skip(f"real transcripts not found at {folder} (set ENGRAM_TRANSCRIPTS)")
    text = run(server, folder)
    assert "Imported 4 session(s)" in text and ", 0 skipped" in text
    offsets = dict(AgentSession.objects.values_list("session_id", "transcript_offset"))
    sizes = sorted(p.stat().st_size for p in folder.glob("*.jsonl"))
    assert sorted(offsets.values()) == sizes
    assert "4 already imported" in run(server, folder)


@pytest.mark.django_db(transaction=True)
def test_every_worktree_of_a_checkout_is_one_project(server: Server, tmp_path: Path) -> None:
    """Sessions run in worktrees of one repository (a checkout still on this machine, and
    Conductor workspaces long deleted) are that repository's project, as live hooks name it."""
    import subprocess

    def git(*args: str, cwd: Path) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

    main = tmp_path / "code" / "shop"
    main.mkdir(parents=True)
    git("init", "-q", cwd=main)
    git(
        "-c",
        "user.email=a@b",
        "-c",
        "user.name=a",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
        cwd=main,
    )
    git("worktree", "add", "-q", str(tmp_path / "elsewhere" / "fix-17"), cwd=main)
    sessions = tmp_path / "sessions"
    transcript(sessions, "a", "s-a", entry("user", RULE, "s-a", cwd=str(main)))
    fix = str(tmp_path / "elsewhere" / "fix-17")
    transcript(sessions, "b", "s-b", entry("user", "Never commit .env files.", "s-b", cwd=fix))
    gone = "/Users/m/conductor/workspaces/shop/davao"  # a workspace Conductor has removed
    transcript(sessions, "c", "s-c", entry("user", "Never push to main.", "s-c", cwd=gone))

    text = run(server, sessions, dry=True)
    assert "shop: 3 session(s), 3 lesson(s)" in text and "fix-17" not in text
    assert "Imported 3 session(s)" in run(server, sessions, project="shop")
    scopes = dict(AgentSession.objects.values_list("session_id", "scope"))
    assert scopes == {"s-a": "project:shop", "s-b": "project:shop", "s-c": "project:shop"}


@pytest.mark.django_db(transaction=True)
def test_a_complete_last_entry_without_its_newline_is_imported_once(
    server: Server, tmp_path: Path
) -> None:
    """Transcripts committed to git often lose the final newline: the last entry is whole, so
    it is read; a rerun adds nothing, and lines written after it later are read from there."""
    folder = tmp_path / "shop"
    path = transcript(
        folder, "a", "s-a", entry("assistant", "On it.", "s-a"), entry("user", RULE, "s-a")
    )
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    text = run(server, tmp_path)
    assert "Imported 1 session(s)" in text and ", 0 skipped" in text
    extract_everything()
    [lesson] = Engram.objects.all()
    assert "ruff" in lesson.statement
    assert "1 already imported" in run(server, tmp_path)

    with path.open("ab") as handle:  # the session went on: its writer adds the newline first
        handle.write(b"\n" + entry("user", "Never commit .env files.", "s-a").encode())
    assert "Imported 1 session(s)" in run(server, tmp_path)
    extract_everything()
    assert Engram.objects.count() == 2 and LearningSignal.objects.count() == 2
