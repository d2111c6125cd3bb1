"""Writing delivered rules and skills into `.claude/` (standard library only).

Used by `engram-hook` at SessionStart and by `manage.py engram_publish`. The input is the
`artifacts` list of `GET /api/v1/artifacts`: per artifact its files (path under `.claude/`,
content, hash, and every hash a version of it ever had). The rules (DESIGN "Dialectic
delivery"): write only files Engram owns; a file whose hash matches no version written is the
user's edit and is left alone and reported; retired artifacts' unedited files are removed.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

# The `.claude/` layout Engram writes, defined here once (dialectic.render renders into it).
CLAUDE_DIR = ".claude"
RULES_DIR = "rules/engram"  # one markdown rule per synthesis
SKILLS_DIR = "skills"  # one folder per skill: SKILL.md and scripts/
ALLOWED_PREFIXES = (f"{RULES_DIR}/", f"{SKILLS_DIR}/")
MAX_FILE_BYTES = 256 * 1024


@dataclass
class SyncReport:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)  # the user's edits, left alone
    refused: list[str] = field(default_factory=list)  # unsafe paths in the listing

    def summary(self) -> str:
        parts = [
            f"{len(self.written)} written",
            f"{len(self.unchanged)} unchanged",
            f"{len(self.removed)} removed",
        ]
        if self.edited:
            parts.append(f"{len(self.edited)} edited by you, left alone: {', '.join(self.edited)}")
        if self.refused:
            parts.append(f"{len(self.refused)} refused")
        return "; ".join(parts)

    def as_dict(self) -> dict[str, list[str]]:
        return {
            "written": self.written,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "edited": self.edited,
            "refused": self.refused,
        }


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def safe_path(path: Any) -> str | None:
    """The relative path if it stays inside Engram's folders of `.claude/`, else None."""
    if not isinstance(path, str) or not path or "\\" in path or "\0" in path:
        return None
    norm = os.path.normpath(path).replace(os.sep, "/")
    if norm.startswith(("/", "..")) or norm != path or not norm.startswith(ALLOWED_PREFIXES):
        return None
    return norm


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None


def _write(path: str, content: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = f"{path}.engram-tmp"
    with open(temporary, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(content)
    if path.endswith(".py") and "/scripts/" in path:
        os.chmod(temporary, 0o755)
    os.replace(temporary, path)


def _remove(path: str, root: str) -> None:
    os.remove(path)
    folder = os.path.dirname(path)
    # Tidy a skill folder emptied by the removal, never above `.claude/`.
    while folder.startswith(root + os.sep) and folder != root:
        try:
            os.rmdir(folder)
        except OSError:
            break
        folder = os.path.dirname(folder)


def sync(artifacts: Any, project_dir: str, home_dir: str | None = None) -> SyncReport:
    """Bring `project_dir/.claude/` (and `home_dir/.claude/` for user-scope artifacts) in line
    with the listing; returns what was done. Never raises for a single bad file."""
    report = SyncReport()
    if not isinstance(artifacts, list):
        return report
    home = home_dir if home_dir is not None else os.path.expanduser("~")
    for artifact in artifacts:
        if not isinstance(artifact, dict):
            continue
        base_dir = home if artifact.get("target") == "user" else project_dir
        root = os.path.join(os.path.abspath(base_dir), CLAUDE_DIR)
        active = artifact.get("status") == "active"
        raw_files, raw_stale = artifact.get("files"), artifact.get("stale_files")
        files: list[Any] = raw_files if isinstance(raw_files, list) else []
        stale: list[Any] = raw_stale if isinstance(raw_stale, list) else []
        for entry in files + stale:
            if not isinstance(entry, dict):
                continue
            rel = safe_path(entry.get("path"))
            if rel is None:
                report.refused.append(str(entry.get("path"))[:200])
                continue
            target = os.path.join(root, *rel.split("/"))
            known = {h for h in entry.get("known_hashes") or [] if isinstance(h, str)}
            existing = _read(target)
            current = _digest(existing) if existing is not None else None
            wanted = entry.get("content") if active and entry in files else None
            try:
                if isinstance(wanted, str):
                    if current == _digest(wanted.encode()):
                        report.unchanged.append(target)
                    elif existing is None or current in known:
                        _write(target, wanted)
                        report.written.append(target)
                    else:
                        report.edited.append(target)
                elif existing is not None:
                    if current in known:
                        _remove(target, root)
                        report.removed.append(target)
                    else:
                        report.edited.append(target)
            except OSError:
                report.refused.append(target)
    return report
