"""Which project a working directory belongs to, from its path alone (no git, no disk).

Hooks that come through `engram-hook` carry the checkout's main folder (git's common
directory), which settles it; this is what is left when only a path is known: an HTTP hook, a
past transcript whose folder no longer exists. A checkout's worktrees live in folders of a
few well-known layouts, and a session in one of them works on the repository they belong to:

- inside the repository: `<repo>/.worktrees/<name>`, `<repo>/worktrees/<name>`, `<repo>/.claude/worktrees/<name>`
  (Claude Code's own), anything under `<repo>/.git/` (`.git/worktrees/<name>`, `.git/wt/…`);
- beside it: `<repo>.worktrees/<name>`, `<repo>-worktrees/<name>`;
- a folder of every repository's worktrees, one folder per repository:
  `~/.warp/worktrees/<repo>/<branch>`, `~/code/worktrees/<repo>/<name>[/<repo>]`,
  `~/wt/<repo>/<name>`, Conductor's `~/conductor/workspaces/<repo>/<city>`.

Anything else is its folder's name.
"""

from __future__ import annotations

import re

_WORKTREES = frozenset({".worktrees", "worktrees", ".worktree", "wt"})
_WORKTREE_SUFFIX = re.compile(r"^(?P<repo>.+?)[.-]worktrees$", re.I)
_SEPARATORS = re.compile(r"[\\/]+")


def project_name(path: str) -> str:
    """The project a folder belongs to: its basename, or the repository a worktree folder of a
    known layout belongs to (module docstring)."""
    parts = [p for p in _SEPARATORS.split(path.strip()) if p and p != "."]
    for index, part in enumerate(parts):
        if index == 0:
            continue
        lowered = part.lower()
        if lowered == ".git":
            return parts[index - 1]  # inside a repository's git folder: that repository
        if lowered in _WORKTREES and index + 1 < len(parts):
            before = parts[index - 1]
            if before.lower() == ".claude" and index >= 2:
                return parts[index - 2]  # Claude Code's own: `<repo>/.claude/worktrees/<name>`
            if part.startswith(".") and not before.startswith("."):
                return before  # `<repo>/.worktrees/<name>`: the folder holding them
            if index + 2 < len(parts):
                # a folder of every repository's worktrees, one folder each
                # (`~/.warp/worktrees/<repo>/<branch>`, `~/code/worktrees/<repo>/<name>`)
                return parts[index + 1]
            if lowered == "worktrees":
                return before  # `<repo>/worktrees/<name>`
        suffixed = _WORKTREE_SUFFIX.match(part)
        if suffixed and index + 1 < len(parts):
            return suffixed.group("repo")
        conductor = lowered == "workspaces" and parts[index - 1].lower() == "conductor"
        if conductor and index + 2 < len(parts):
            return parts[index + 1]
    return parts[-1] if parts else ""
