"""Whether a project's hooks still reach Engram: the one rule that the overview, the status API,
the MCP `status` tool and `engram doctor` share. Pure: datetimes in, a state and a reason out.

A project is **stopped** (red) when there is evidence that sessions ran but their hooks did not
arrive:
- Claude Code wrote the project's transcript more than `TRANSCRIPT_GRACE` after the last hook
  Engram received from it (a session ran and this server heard nothing), or
- the token the project's hooks used (in use within `TOKEN_USE_SLACK` of the last hook) was
  revoked after that hook, so every later hook is refused.
It is **quiet** (amber) when the habit says sessions were expected: hooks arrived on at least
`HABIT_MIN_DAYS` of the `HABIT_WINDOW_DAYS` days before the last one, and none for `QUIET_AFTER`
(a weekend and a day off are not enough). Otherwise it is **ok**, or **none** before any hook.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

OK = "ok"
QUIET = "quiet"
STOPPED = "stopped"
NONE = "none"
STATES = (OK, QUIET, STOPPED, NONE)

TRANSCRIPT_GRACE = timedelta(minutes=15)
TOKEN_USE_SLACK = timedelta(minutes=2)
HABIT_WINDOW_DAYS = 7
HABIT_MIN_DAYS = 3
QUIET_AFTER = timedelta(days=4)


@dataclass(frozen=True, slots=True)
class HookSignals:
    """What is known of one project's hooks (every datetime aware, or None when unknown)."""

    last_hook_at: datetime | None
    # Distinct days with hooks in the HABIT_WINDOW_DAYS days ending with the last hook.
    active_days: int = 0
    # The newest transcript Claude Code wrote for the project, when this server can see it.
    transcript_written_at: datetime | None = None
    # When a token in use at the last hook was revoked (None: no such token).
    token_revoked_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class HookHealth:
    state: str
    reason: str

    @property
    def red(self) -> bool:
        return self.state == STOPPED


def token_used_by_hooks(
    *, last_hook_at: datetime | None, token_last_used_at: datetime | None
) -> bool:
    """Whether a token was in use when the project's last hook arrived (tokens record their
    use at most once a minute, hence the slack)."""
    if last_hook_at is None or token_last_used_at is None:
        return False
    return token_last_used_at >= last_hook_at - TOKEN_USE_SLACK


def hook_health(signals: HookSignals, *, now: datetime) -> HookHealth:
    """The project's state and one sentence saying why."""
    last = signals.last_hook_at
    if last is None:
        return HookHealth(NONE, "No hook has arrived from this project yet.")
    if signals.token_revoked_at is not None and signals.token_revoked_at > last:
        return HookHealth(
            STOPPED,
            "The API token its hooks used was revoked after the last hook, so every hook since "
            "is refused: set ENGRAM_TOKEN to a live token (engram setup claude-code issues one).",
        )
    written = signals.transcript_written_at
    if written is not None and written > last + TRANSCRIPT_GRACE:
        return HookHealth(
            STOPPED,
            "Claude Code wrote a transcript for this project after the last hook arrived: its "
            "sessions run without reaching this server (hooks removed, a wrong ENGRAM_URL or "
            "port, a refused token). Run `engram doctor --project <folder>`.",
        )
    silent = now - last
    if signals.active_days >= HABIT_MIN_DAYS and silent > QUIET_AFTER:
        return HookHealth(
            QUIET,
            f"Hooks arrived on {signals.active_days} of the {HABIT_WINDOW_DAYS} days before the "
            f"last one and none for {silent.days} days: if you worked there, run `engram doctor`.",
        )
    return HookHealth(OK, "Hooks are arriving.")
