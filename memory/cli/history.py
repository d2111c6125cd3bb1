"""`engram import-history [PATH …] [--project NAME] [--since DATE] [--dry-run]`: past Claude Code
sessions into memory, one session per transcript file.

Each file's lines are posted to `POST /api/v1/transcripts`, which captures them exactly as a
live session's Stop (the same learning signal and extraction task: no second extractor); the
server keeps each session's offset, so a second run adds nothing. `--dry-run` reads the files
here, runs the same pure extractor (`memory.maths.learning`) on the user's own entries and
prints, per project, the lessons it would keep; it writes nothing and needs no server.

A file that is not a transcript, cannot be read, ends mid-line (truncated, or still being
written) or is larger than MAX_FILE_BYTES is skipped with a one-line reason; the rest go on.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from memory.cli.client import Server, ServerError
from memory.integrations.hookclient import project_root
from memory.maths import learning
from memory.maths.projects import project_name

MAX_FILE_BYTES = 100 * 1024 * 1024
HEAD_BYTES = 256 * 1024
TAIL_BYTES = 256 * 1024
# One request carries at most this much JSON-encoded line text (the server's default body limit
# is 2 MiB) and at most this many lines.
MAX_REQUEST_BYTES = 1024 * 1024
MAX_SINGLE_LINE_BYTES = 1900 * 1024
MAX_REQUEST_LINES = 2000
TRANSCRIPTS_PATH = "/api/v1/transcripts"


@dataclass
class Transcript:
    path: Path
    session_id: str
    cwd: str
    size: int
    started_at: datetime | None
    ended_at: datetime | None

    root: str = ""  # the checkout's main folder, when the folder is still on this machine

    @property
    def project(self) -> str:
        """The project's name, as hooks name it (`project:<name>`): the checkout's main folder
        when git knows it (every worktree of a repository is one project), else the worktree
        layouts `memory.maths.projects` knows, else the folder's name."""
        return project_name(self.root or self.cwd) if (self.root or self.cwd) else ""


@dataclass
class Skipped:
    path: Path
    reason: str

    def line(self) -> str:
        return f"skipped {self.path}: {self.reason}"


@dataclass
class Report:
    imported: int = 0
    unchanged: int = 0
    bytes_sent: int = 0
    skipped: list[Skipped] = field(default_factory=list)


def default_roots(home: Path) -> list[Path]:
    return [home / ".claude" / "projects"]


def discover(paths: list[Path]) -> tuple[list[Path], list[Skipped]]:
    """Transcript files: each file given, and in each folder its `*.jsonl` and those one level
    down (Claude Code's `projects/<project>/<session>.jsonl`; deeper files are subagents')."""
    files: list[Path] = []
    skipped: list[Skipped] = []
    for path in paths:
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            try:
                found = sorted(path.glob("*.jsonl")) + sorted(path.glob("*/*.jsonl"))
            except OSError as exc:
                skipped.append(Skipped(path, f"cannot be listed ({exc.strerror or exc})"))
                continue
            files.extend(p for p in found if not p.is_dir())
        else:
            skipped.append(Skipped(path, "no such file or folder"))
    return list(dict.fromkeys(files)), skipped


def _objects(chunk: bytes) -> Iterator[dict[str, Any]]:
    """The JSON objects of a chunk's complete lines (a line may hold two back to back)."""
    decoder = json.JSONDecoder()
    for raw in chunk.split(b"\n"):
        text = raw.decode("utf-8", "replace").strip()
        while text:
            try:
                value, end = decoder.raw_decode(text)
            except ValueError:
                break
            if isinstance(value, dict):
                yield value
            text = text[end:].lstrip()


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def inspect(path: Path) -> Transcript | Skipped:
    """Read a file's head and tail: its session, working directory and times, or why not."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return Skipped(
                path, f"{size / 2**20:.0f} MB, larger than the {MAX_FILE_BYTES // 2**20} MB limit"
            )
        if size == 0:
            return Skipped(path, "empty")
        with path.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
            handle.seek(max(0, size - TAIL_BYTES))
            tail = handle.read(TAIL_BYTES)
    except PermissionError:
        return Skipped(path, "cannot be read (permission denied)")
    except OSError as exc:
        return Skipped(path, f"cannot be read ({exc.strerror or exc})")
    complete = head[: head.rfind(b"\n") + 1] if size > len(head) else head
    session_id = cwd = ""
    started = None
    for obj in _objects(complete):
        if not session_id and isinstance(obj.get("sessionId"), str) and "type" in obj:
            session_id = obj["sessionId"].strip()
        if not cwd and isinstance(obj.get("cwd"), str):
            cwd = obj["cwd"]
        started = started or _time(obj.get("timestamp"))
        if session_id and cwd and started:
            break
    if not session_id:
        return Skipped(path, "not a Claude Code transcript (no entry with a sessionId)")
    # A complete last entry without its newline (a copy that dropped it, as transcripts
    # committed to git often do) is read as if the newline were there: one byte more.
    missing = 0
    if not tail.endswith(b"\n"):
        if not _whole_object(tail[tail.rfind(b"\n") + 1 :]):
            return Skipped(path, "ends in the middle of a line: truncated, or still being written")
        missing = 1
    ended = None
    for obj in _objects(tail[tail.find(b"\n") + 1 :] if size > len(tail) else tail):
        ended = _time(obj.get("timestamp")) or ended
    # Claude Code names a session's file after its id: that id is the live session's, so hooks
    # and imports of the same session meet. Other names (copies) use the id inside.
    if _is_uuid(path.stem):
        session_id = path.stem
    return Transcript(
        path, session_id[:200], cwd, size + missing, started, ended or started, root=_root(cwd)
    )


_ROOTS: dict[str, str] = {}


def _root(cwd: str) -> str:
    """The checkout's main folder of `cwd` (git's common directory) while that folder exists
    here, once per folder; "" when it is gone or not in git."""
    if not cwd or len(cwd) > 4096:
        return ""
    if cwd not in _ROOTS:
        _ROOTS[cwd] = project_root(cwd) if os.path.isdir(cwd) else ""
    return _ROOTS[cwd]


def select(
    files: list[Path], *, project: str | None, since: date | None
) -> tuple[list[Transcript], list[Skipped], int]:
    """The transcripts to import, the files skipped with their reason, and how many the
    filters left out."""
    chosen: list[Transcript] = []
    skipped: list[Skipped] = []
    filtered = 0
    ids: set[str] = set()
    wanted = (project or "").removeprefix("project:")
    for path in files:
        found = inspect(path)
        if isinstance(found, Skipped):
            skipped.append(found)
            continue
        if wanted and found.project != wanted:
            filtered += 1
            continue
        last = found.ended_at or datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
        if since is not None and last.date() < since:
            filtered += 1
            continue
        if found.session_id in ids:  # two copies of one session: one file, one session
            found.session_id = path.stem[:200]
        if found.session_id in ids:
            skipped.append(Skipped(path, f"another file holds session {found.session_id}"))
            continue
        ids.add(found.session_id)
        chosen.append(found)
    return chosen, skipped, filtered


# --- dry run --------------------------------------------------------------------------------


def lessons_of(transcript: Transcript) -> list[learning.LessonDraft]:
    """What capture's heuristic extractor keeps from a transcript (`learning.entry_drafts`, as
    the server's capture without a key): lessons from the user's own entries (the parser leaves
    out assistant text, tool results and machine entries; requests to forget a rule and prompts
    the agent wrote are no lessons), at most the per-session cap."""
    with transcript.path.open("rb") as handle:
        lines = handle.read().split(b"\n")
    drafts = [draft for draft, _ in learning.entry_drafts(learning.parse_lines(lines))]
    return drafts[: learning.MAX_DRAFTS_PER_SESSION]


def dry_run(transcripts: list[Transcript], *, out: TextIO) -> int:
    """Per project, each lesson once (the first session that said it), with how many sessions
    said it: the server keeps one engram and counts the rest as recurrences. Rules active at
    once (tier A/B) come first; candidates wait for a repeat in another session (which promotes
    them) or for review, and the listing says which is which."""
    by_project: dict[str, dict[str, tuple[Transcript, learning.LessonDraft, set[str]]]] = {}
    sessions: dict[str, int] = {}
    for transcript in transcripts:
        name = transcript.project or "(no working directory: global)"
        sessions[name] = sessions.get(name, 0) + 1
        found = by_project.setdefault(name, {})
        for draft in lessons_of(transcript):
            key = draft.statement.casefold()
            first, kept, said = found.get(key, (transcript, draft, set()))
            found[key] = (first, kept, said | {str(transcript.path)})
    total = active = 0
    for name in sorted(sessions):
        lessons = list(by_project.get(name, {}).values())
        total += len(lessons)
        print(f"\n{name}: {sessions[name]} session(s), {len(lessons)} lesson(s)", file=out)
        now: list[tuple[Transcript, learning.LessonDraft, set[str]]] = []
        later: list[tuple[Transcript, learning.LessonDraft, set[str]]] = []
        for lesson in lessons:  # a candidate said in another session is promoted on recurrence
            active = lesson[1].tier != learning.TIER_INFERRED or len(lesson[2]) > 1
            (now if active else later).append(lesson)
        active += len(now)
        for title, group in (
            ("active at once (said as a standing rule, or said again in another session)", now),
            ("candidates (kept when said again in another session, or approved in review)", later),
        ):
            if group:
                print(f"  {title}:", file=out)
            for transcript, draft, said in group:
                again = f", said in {len(said)} sessions" if len(said) > 1 else ""
                print(
                    f"  - {draft.statement}  [tier {draft.tier}, {transcript.path.name}{again}]",
                    file=out,
                )
    print(
        f"\nDry run: {total} lesson(s) from {len(transcripts)} session(s) ({active} active at "
        f"once, {total - active} candidate(s)); nothing was written. The server's own capture "
        "decides in the end (with a key, Claude extracts; repeats count as recurrences).",
        file=out,
    )
    return 0


# --- import ---------------------------------------------------------------------------------


def _encoded(line: str) -> int:
    return len(json.dumps(line, ensure_ascii=False).encode("utf-8"))


def _chunks(path: Path, offset: int) -> Iterator[tuple[int, int, list[str]] | Skipped]:
    """(start, end, lines) for each request from byte `offset`; a Skipped for a line that
    cannot be sent (too large for a request, or not UTF-8), which ends the file there."""
    with path.open("rb") as handle:
        handle.seek(offset)
        start = position = offset
        lines: list[str] = []
        size = 0
        for raw in handle:
            if not raw.endswith(b"\n"):
                if not _whole_object(raw):
                    break  # an incomplete last line: left for a later run
                raw += b"\n"  # a complete last entry without its newline (`inspect`)
            data = raw[:-1]
            text = data.decode("utf-8", "replace")
            cost = _encoded(text)
            problem = ""
            if len(text.encode("utf-8")) != len(data):
                problem = f"line at byte {position} is not UTF-8 text; imported up to it"
            elif cost > MAX_SINGLE_LINE_BYTES:
                problem = (
                    f"line at byte {position} is {len(data) / 2**20:.1f} MB, more than one "
                    "request carries; imported up to it"
                )
            if problem:
                if lines:
                    yield start, position, lines
                yield Skipped(path, problem)
                return
            if lines and (size + cost > MAX_REQUEST_BYTES or len(lines) >= MAX_REQUEST_LINES):
                yield start, position, lines
                start, lines, size = position, [], 0
            lines.append(text)
            size += cost
            position += len(raw)
        if lines:
            yield start, position, lines


def _whole_object(line: bytes) -> bool:
    """Whether `line` is one complete JSON object (a transcript entry), not a cut one."""
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def import_one(server: Server, transcript: Transcript, advance: Any) -> tuple[str, int, str]:
    """("imported" | "unchanged" | "skipped", bytes sent, reason) for one transcript."""
    status, body = server.request(
        "GET", TRANSCRIPTS_PATH, query={"session_id": transcript.session_id}
    )
    if status == 401:
        raise ServerError(401, "unauthorized", "the server refused ENGRAM_TOKEN")
    offset = int(body["offset"]) if status == 200 and isinstance(body, dict) else 0
    if status not in (200, 404):
        raise ServerError(status, "error", f"GET {TRANSCRIPTS_PATH} answered HTTP {status}")
    if offset == transcript.size:
        advance(transcript.size)
        return "unchanged", 0, ""
    if offset > transcript.size:
        advance(transcript.size)
        return (
            "skipped",
            0,
            (
                f"Engram already captured {offset} bytes of session {transcript.session_id}, more "
                "than this file holds (another file with the same session?)"
            ),
        )
    advance(offset)
    sent = 0
    for chunk in _chunks(transcript.path, offset):
        if isinstance(chunk, Skipped):
            return ("imported" if sent else "skipped"), sent, chunk.reason
        start, end, lines = chunk
        body = server.json(
            "POST",
            TRANSCRIPTS_PATH,
            body={
                "session_id": transcript.session_id,
                "cwd": transcript.cwd,
                "root": transcript.root,
                "offset": start,
                "lines": lines,
                "started_at": _iso(transcript.started_at),
                "ended_at": _iso(transcript.ended_at),
            },
        )
        if int(body.get("offset", -1)) != end:
            return (
                "skipped",
                sent,
                (
                    f"the server's capture of session {transcript.session_id} stands at byte "
                    f"{body.get('offset')}, not {end}: the file differs from what was captured"
                ),
            )
        sent += end - start
        advance(end - start)
    return "imported", sent, ""


def import_all(
    server: Server, transcripts: list[Transcript], *, out: TextIO, progress: bool
) -> Report:
    report = Report()
    console = Console(file=out, highlight=False, soft_wrap=True)
    total = sum(t.size for t in transcripts)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, disable=not progress, transient=True) as bar:
        task = bar.add_task("importing", total=total or None)
        for index, transcript in enumerate(transcripts, 1):
            bar.update(task, description=f"{index}/{len(transcripts)} {transcript.project}")
            outcome, sent, reason = import_one(server, transcript, lambda n: bar.advance(task, n))
            label = f"[{index}/{len(transcripts)}] {transcript.path.name}"
            if outcome == "unchanged":
                report.unchanged += 1
                bar.console.print(f"{label}: already imported")
                continue
            if outcome == "imported":
                report.imported += 1
                report.bytes_sent += sent
                bar.console.print(
                    f"{label}: {sent / 1024:.0f} KB of session {transcript.session_id} "
                    f"({transcript.project or 'global'}) sent to capture"
                )
            if reason:
                report.skipped.append(Skipped(transcript.path, reason))
                bar.console.print(Skipped(transcript.path, reason).line())
    return report


def import_history(
    *,
    server: Server,
    paths: list[Path],
    project: str | None,
    since: date | None,
    dry: bool,
    out: TextIO,
    progress: bool,
) -> int:
    files, skipped = discover(paths)
    transcripts, more, filtered = select(files, project=project, since=since)
    skipped += more
    for item in skipped:
        print(item.line(), file=out)
    note = f" ({filtered} left out by --project/--since)" if filtered else ""
    print(f"{len(transcripts)} session(s) to import from {len(files)} file(s){note}.", file=out)
    if dry:
        return dry_run(transcripts, out=out)
    report = import_all(server, transcripts, out=out, progress=progress)
    print(
        f"\nImported {report.imported} session(s) ({report.bytes_sent / 2**20:.1f} MB), "
        f"{report.unchanged} already imported, {len(skipped) + len(report.skipped)} skipped. "
        "Lessons are extracted in the background: see `engram status` or the dashboard.",
        file=out,
    )
    return 0
