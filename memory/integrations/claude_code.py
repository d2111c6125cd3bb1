"""Claude Code hooks: one payload in, the documented hook output out (or `{}`).

Context reaches the model only through `hookSpecificOutput.additionalContext` with its
`hookEventName`, so that is the only shape returned; nothing else goes at the top level.
- SessionStart (any source): start (or resume) the session; the project's standing rules.
- UserPromptSubmit: only engrams this prompt gives evidence for, not yet delivered.
- PreToolUse: error → fix lessons and reminders whose trigger matches the input, once a
  session; never a decision (memory.services.delivery). A `prompt` the agent writes for a
  subagent or a session it spawns is remembered (by digest): when that session sends it as
  its first prompt, it is not taken as the person's words.
- PostToolUse / PostToolUseFailure: store the observation (no embedding here), then the same
  reminders as PreToolUse when the tool input matched one; usually `{}`.
- Stop / SessionEnd: end the session, which queues outcome attribution after commit.
- Stop / PreCompact / SessionEnd: note the transcript (and store the lines `engram-hook`
  attached past the session's offset); a task reads the rest and extracts lessons.
- UserPromptSubmit also runs the learning classifier (regular expressions, < 1 ms) and stores
  a prompt that states a rule as a redacted learning signal.
A later event of a session that a Stop ended reopens it, so the next Stop attributes again.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from memory.access import ScopeForbidden, require_scope
from memory.maths import attribution, ranking
from memory.maths.projects import project_name
from memory.models import AgentSession, ApiToken, Engram
from memory.scanner import redact_secrets
from memory.services import delivery, drafting, learning
from memory.services.jobs import job_enqueue
from memory.services.sessions import observation_record, session_end, session_start
from memory.validation import scope as validate_scope

AGENT = "claude-code"
GLOBAL_SCOPE = "global"
# Claude Code shows context above ~10,000 characters only as a short preview.
MAX_CONTEXT_CHARS = 9500
MAX_REMINDERS = 3
# The latest prompts a session keeps for outcome attribution (each cut to MAX_PROMPT_CHARS).
MAX_PROMPTS = 20
MAX_PROMPT_CHARS = 500
# Reminder-level engrams are few by design (escalation is the last rung); read at most this many.
MAX_REMINDER_CANDIDATES = 200
REMINDER_HEADER = "Reminders from memory for this tool call:\n"
# Transcript lines `engram-hook` attaches: {"offset": byte offset of the first, "lines": [...]}.
TRANSCRIPT_FIELD = "engram_transcript"
_UNSAFE_SCOPE_CHARS = re.compile(r"[^\w.\-]+")


@dataclass
class HookCall:
    token: ApiToken
    payload: dict[str, Any]
    scope: str
    now: datetime

    @property
    def owner(self) -> Any:
        return self.token.owner

    @property
    def event(self) -> str:
        return str(self.payload.get("hook_event_name") or "")

    @property
    def session_id(self) -> str | None:
        value = self.payload.get("session_id")
        return value.strip() if isinstance(value, str) and value.strip() else None


PROJECT_ROOT_FIELD = "engram_project_root"  # sent by engram-hook: the checkout's main folder


def project_scope(cwd: Any, root: Any = None) -> str:
    """`project:<project name>` (characters outside [\\w.-] become "-"), or global.

    The name is the basename of `root` when the hook client sent the checkout's main folder
    (git's common directory: every worktree and subfolder of one repository is one project),
    else of `cwd`, a worktree folder of a known layout naming its repository (project_name)."""
    for path in (root, cwd):
        if isinstance(path, str) and path.strip() and len(path) <= 4096:
            name = _UNSAFE_SCOPE_CHARS.sub("-", project_name(path)).strip("-.")[:180]
            return f"project:{name}" if name else GLOBAL_SCOPE
    return GLOBAL_SCOPE


def hook_scope(token: ApiToken, cwd: Any, requested: str | None = None, root: Any = None) -> str:
    """The scope of a hook call: `?scope=` if given, else from the project root engram-hook
    sent or cwd (project_scope), else the token's own scope."""
    if requested:
        scope = validate_scope(requested)
        require_scope(token, scope)
        return scope
    scope = project_scope(cwd, root)
    if token.allows_scope(scope):
        return scope
    # A token limited to fixed scopes writes into the first one it names.
    for pattern in token.scopes or []:
        if "*" not in pattern:
            return pattern
    raise ScopeForbidden(scope)


def _context(event: str, text: str) -> dict[str, Any]:
    text = text.strip()
    if not text:
        return {}
    if len(text) > MAX_CONTEXT_CHARS:
        cut = text.rfind("\n", 0, MAX_CONTEXT_CHARS)
        text = text[: cut if cut > 0 else MAX_CONTEXT_CHARS]
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def _session(call: HookCall, *, create: bool = True, reopen: bool = True) -> AgentSession | None:
    """The AgentSession for the hook's session_id: started on first sight, reopened after Stop."""
    sid = call.session_id
    if sid is None:
        return None
    session = AgentSession.objects.filter(owner=call.owner, session_id=sid).first()
    if session is None:
        if not create:
            return None
        cwd = call.payload.get("cwd")
        return session_start(
            owner=call.owner,
            session_id=sid,
            scope=call.scope,
            agent=AGENT,
            cwd=cwd[:500] if isinstance(cwd, str) else "",
            now=call.now,
        )
    if not call.token.allows_scope(session.scope):
        return None
    if reopen:
        session.reopen()
    return session


def on_session_start(call: HookCall) -> dict[str, Any]:
    """The project's standing rules (the brief), on every source; a compaction also lets the
    prompt path deliver again what the session had before it."""
    session = _session(call)
    source = call.payload.get("source")
    source = source[:20] if isinstance(source, str) else ""
    if session is not None:
        rules = call.payload.get("engram_rules")
        if isinstance(rules, list):
            texts = [r for r in rules if isinstance(r, str)][:200]
            AgentSession.objects.filter(pk=session.pk).update(project_rules=texts)
        # The project's CLAUDE.md / rules: what they already say is not injected (a task).
        job_enqueue("engram.session_suppress", session.pk)
        if source == "compact":
            AgentSession.objects.filter(pk=session.pk).update(compacted_at=call.now)
            session.compacted_at = call.now
    made = delivery.session_brief(
        owner=call.owner,
        scope=session.scope if session else call.scope,
        session=session,
        now=call.now,
        token_scopes=call.token.scopes,
        source=source,
    )
    return _context(call.event, made.rendered)


def on_user_prompt(call: HookCall) -> dict[str, Any]:
    prompt = call.payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return {}
    session = _session(call)
    made = delivery.prompt_deliver(
        owner=call.owner,
        prompt=prompt,
        scope=session.scope if session else call.scope,
        session=session,
        now=call.now,
        token_scopes=call.token.scopes,
    )
    learning.prompt_capture(
        owner=call.owner,
        session=session,
        scope=call.scope,
        prompt=prompt,
        now=call.now,
        origin=call.payload.get("source"),
    )
    if session is not None:
        said, _ = redact_secrets(prompt[:MAX_PROMPT_CHARS])
        kept = [*(session.prompts or [])[-(MAX_PROMPTS - 1) :], said]
        AgentSession.objects.filter(pk=session.pk).update(prompts=kept)
    return _context(call.event, made.rendered)


def _tool_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


@dataclass(frozen=True, slots=True)
class Reminder:
    """What the tool hooks need of one reminder-level engram."""

    engram_id: str
    statement: str
    trigger_context: str
    emotional_weight: float
    scope: str
    valid_from: datetime | None
    valid_until: datetime | None

    def valid(self, now: datetime) -> bool:
        return (self.valid_from is None or self.valid_from <= now) and (
            self.valid_until is None or self.valid_until > now
        )


# Reminder-level engrams are read per owner at most every REMINDER_TTL_S seconds per process:
# the tool hooks run on every tool call, and the list is short and changes rarely (an escalation
# or a retirement reaches the hooks within that time).
REMINDER_TTL_S = 10.0
_reminder_cache: dict[int, tuple[float, list[Reminder]]] = {}


def reminder_cache_clear() -> None:
    _reminder_cache.clear()
    delivery.cache_clear()


def _owner_reminders(owner_id: int) -> list[Reminder]:
    cached = _reminder_cache.get(owner_id)
    now = time.monotonic()
    if cached is not None and now - cached[0] < REMINDER_TTL_S:
        return cached[1]
    rows = [
        Reminder(*values)
        for values in Engram.objects.filter(
            owner_id=owner_id,
            status=Engram.Status.ACTIVE,
            enforcement=Engram.Enforcement.REMINDER,
        )
        .order_by("-emotional_weight", "engram_id")
        .values_list(
            "engram_id",
            "statement",
            "trigger_context",
            "emotional_weight",
            "scope",
            "valid_from",
            "valid_until",
        )[:MAX_REMINDER_CANDIDATES]
    ]
    _reminder_cache[owner_id] = (now, rows)
    return rows


def reminders_for(
    *, token: ApiToken, scope: str, tool_input: str, limit: int = MAX_REMINDERS
) -> list[Reminder]:
    """Active reminder-level engrams of `scope` and global whose trigger fires for the input."""
    scopes = {s for s in (scope, GLOBAL_SCOPE) if token.allows_scope(s)}
    reminders = _owner_reminders(token.owner_id)
    if not reminders:
        return []
    now = timezone.now()
    haystack = attribution.without_prose(tool_input)  # a commit message is not what it runs
    hits: list[Reminder] = []
    for reminder in reminders:
        if reminder.scope not in scopes or not reminder.valid(now):
            continue
        if attribution.trigger_matches(
            trigger_context=reminder.trigger_context,
            statement=reminder.statement,
            tool_input=haystack,
        ):
            hits.append(reminder)
            if len(hits) >= limit:
                break
    return hits


def _reminders(call: HookCall, scope: str) -> dict[str, Any]:
    """Reminder-level engrams whose trigger fires for this tool input, as hook context."""
    text = _tool_text(call.payload.get("tool_input"))
    if not text:
        return {}
    hits = reminders_for(token=call.token, scope=scope, tool_input=text)
    if not hits:
        return {}
    lines = [
        ranking.render_line(e.engram_id, ranking.clip_statement(e.statement), "reminder")
        for e in hits
    ]
    return _context(call.event, REMINDER_HEADER + "\n".join(lines))


def on_pre_tool_use(call: HookCall) -> dict[str, Any]:
    """Error → fix lessons and reminders whose trigger fires for this input, once a session.
    A prompt the agent writes for another agent or session is remembered first: the session
    it starts will send it as a user prompt, and it is not the person's."""
    drafting.agent_prompts_record(
        owner=call.owner, tool_inputs=[call.payload.get("tool_input")], now=call.now
    )
    session = _session(call)
    made = delivery.tool_deliver(
        owner=call.owner,
        tool_input=_tool_text(call.payload.get("tool_input")),
        scope=session.scope if session else call.scope,
        session=session,
        now=call.now,
        token_scopes=call.token.scopes,
    )
    return _context(call.event, made.rendered)


def on_post_tool_use(call: HookCall) -> dict[str, Any]:
    tool = call.payload.get("tool_name")
    if not isinstance(tool, str) or not tool.strip():
        return {}
    failed = call.event == "PostToolUseFailure"
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # Observations are telemetry: not waiting for the WAL flush takes the disk's fsync
            # off the agent's path. A database crash can lose the last fraction of a second.
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit TO OFF")
        session = _session(call)
        observation_record(
            owner=call.owner,
            tool=tool[:100],
            tool_input=call.payload.get("tool_input"),
            tool_output=call.payload.get("error") if failed else call.payload.get("tool_response"),
            success=not failed,
            session=session,
            now=call.now,
        )
    # A reminder-level engram whose trigger the call just matched is said again afterwards
    # (toejough's PostToolUse reminders): the agent may still correct what it did.
    return _reminders(call, session.scope if session else call.scope)


def on_stop(call: HookCall) -> dict[str, Any]:
    session = _session(call, create=False, reopen=False)
    if session is not None:
        message = call.payload.get("last_assistant_message")
        session_end(
            owner=call.owner,
            session=session,
            last_assistant_message=message if isinstance(message, str) else "",
            now=call.now,
        )
        _transcript(call, session)
    return {}


def _transcript(call: HookCall, session: AgentSession) -> None:
    learning.transcript_attach(
        session=session,
        attached=call.payload.get(TRANSCRIPT_FIELD),
        transcript_path=call.payload.get("transcript_path"),
        now=call.now,
    )


def on_pre_compact(call: HookCall) -> dict[str, Any]:
    session = _session(call, create=False, reopen=False)
    if session is not None:
        _transcript(call, session)
    return {}


HANDLERS: dict[str, Callable[[HookCall], dict[str, Any]]] = {
    "SessionStart": on_session_start,
    "UserPromptSubmit": on_user_prompt,
    "PreToolUse": on_pre_tool_use,
    "PostToolUse": on_post_tool_use,
    "PostToolUseFailure": on_post_tool_use,
    "Stop": on_stop,
    "SessionEnd": on_stop,
    "PreCompact": on_pre_compact,
}


def hook_handle(
    *,
    token: ApiToken,
    payload: dict[str, Any],
    scope: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Handle one Claude Code hook payload; `{}` for events Engram has nothing to say to."""
    handler = HANDLERS.get(str(payload.get("hook_event_name") or ""))
    if handler is None:
        return {}
    call = HookCall(
        token=token,
        payload=payload,
        scope=hook_scope(token, payload.get("cwd"), scope, payload.get(PROJECT_ROOT_FIELD)),
        now=now or timezone.now(),
    )
    return handler(call)
