"""Reading files that a client named (a hook's `transcript_path`, a session's `cwd`) on this
server's disk: only under the folders the server's owner allowed, and only regular files.

A token's say-so is not enough to read a file: the path is resolved with `os.path.realpath`
(so neither a symbolic link nor `..` leaves the folder) and must lie inside one of
`ENGRAM_TRANSCRIPT_DIRS` (transcripts; default `~/.claude/projects`) or
`ENGRAM_PROJECT_ROOTS` (project rule files; default the server user's home). The file is opened
without following a last link and without blocking, and refused unless it is a regular file no
larger than the cap. A refusal is recorded on the session (its page shows why), never the
file's contents.
"""

from __future__ import annotations

import os
import stat
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from memory.models import AgentSession

DEFAULT_TRANSCRIPT_DIRS = ("~/.claude/projects",)
DEFAULT_PROJECT_ROOTS = ("~",)
# A transcript larger than this is not read at all (Claude Code's grow to tens of MB).
DEFAULT_MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024
# A project rule file larger than this is not a rule file.
MAX_RULE_FILE_BYTES = 1024 * 1024
# The newest refusals kept on a session (one per kind of file and reason).
MAX_REFUSALS = 5

TRANSCRIPT = "transcript"
PROJECT_RULES = "project rules"


class ReadRefused(Exception):
    """A client-named file this server will not read; `reason` says why, without the contents
    and without where a link pointed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _roots(configured: Any, default: tuple[str, ...]) -> list[Path]:
    folders = configured or default
    if isinstance(folders, str):
        folders = [f for f in folders.split(os.pathsep) if f.strip()]
    return [Path(os.path.realpath(os.path.expanduser(str(f).strip()))) for f in folders]


def transcript_dirs() -> list[Path]:
    """The folders Claude Code transcripts may be read from (realpath)."""
    return _roots(getattr(settings, "ENGRAM_TRANSCRIPT_DIRS", None), DEFAULT_TRANSCRIPT_DIRS)


def project_roots() -> list[Path]:
    """The folders under which a project's rule files may be read (realpath)."""
    return _roots(getattr(settings, "ENGRAM_PROJECT_ROOTS", None), DEFAULT_PROJECT_ROOTS)


def max_transcript_bytes() -> int:
    return int(getattr(settings, "ENGRAM_MAX_TRANSCRIPT_BYTES", DEFAULT_MAX_TRANSCRIPT_BYTES))


def is_inside(real: Path, roots: list[Path]) -> bool:
    return any(real == root or root in real.parents for root in roots)


def allowed_path(path: Any, roots: list[Path], setting: str) -> Path:
    """The realpath of `path` when it lies inside one of `roots`; ReadRefused otherwise."""
    if not isinstance(path, str) or not path or "\x00" in path or not os.path.isabs(path):
        raise ReadRefused("not an absolute path on this server")
    real = Path(os.path.realpath(path))
    if not is_inside(real, roots):
        raise ReadRefused(f"outside the folders this server may read ({setting})")
    return real


def read_regular(path: Path, *, offset: int = 0, limit: int, max_size: int) -> bytes:
    """Up to `limit` bytes from `offset` of a regular file no larger than `max_size`.

    O_NOFOLLOW refuses a link swapped in after the realpath check; O_NONBLOCK keeps a FIFO
    from hanging the worker until fstat refuses it."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ReadRefused("no such file on this server") from None
    except OSError:
        raise ReadRefused("the file cannot be opened") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ReadRefused("not a regular file")
        if info.st_size > max_size:
            raise ReadRefused(f"larger than {max_size} bytes")
        os.lseek(fd, offset, os.SEEK_SET)
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        raise ReadRefused("the file cannot be read") from None
    finally:
        os.close(fd)


def transcript_size(path: str) -> int | None:
    """The size of an allowed regular transcript file, None when it may not or cannot be read
    (the recovery sweep's look, which reads nothing)."""
    try:
        real = allowed_path(path, transcript_dirs(), "ENGRAM_TRANSCRIPT_DIRS")
        info = os.stat(real, follow_symlinks=False)
    except (ReadRefused, OSError):
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size > max_transcript_bytes():
        return None
    return info.st_size


def refusal_record(
    *, session: AgentSession, what: str, reason: str, now: datetime | None = None
) -> None:
    """Note on the session that a file it named was not read, and why (newest first, one per
    kind of file and reason)."""
    now = now or timezone.now()
    current = (
        AgentSession.objects.filter(pk=session.pk).values_list("read_refusals", flat=True).first()
    )
    kept = [
        r
        for r in (current or [])
        if isinstance(r, dict) and (r.get("what"), r.get("reason")) != (what, reason)
    ]
    refusals = [{"what": what, "reason": reason, "at": now.isoformat()}, *kept][:MAX_REFUSALS]
    AgentSession.objects.filter(pk=session.pk).update(read_refusals=refusals)
    session.read_refusals = refusals
