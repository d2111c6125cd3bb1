"""Claude Code transcript lines: parse JSONL entries, split complete lines, render for an LLM.

Only what the person typed is a `user` entry: assistant text, compaction summaries, slash-command
and meta entries, tool results, hook output, sidechains and system reminders never are (DESIGN v3
"Capture": never the user's words). Each entry keeps where it came from (its `uuid` and the number
of its line) so a lesson can quote it.

Pure Python (no Django).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memory.maths.learning.extract import LessonDraft, extract
from memory.maths.learning.variants import forget_request

# A user entry whose text holds one of these is Claude Code's, not the person's: a slash command
# and its output, a `!` shell command and its output, the local-command caveat, a background
# task's notification, a peer session's message (agent teams), an app's CI monitor event.
_NOT_TYPED = re.compile(
    r"<(?:command-name|command-message|command-args|local-command-stdout|local-command-stderr|"
    r"bash-input|bash-stdout|bash-stderr|local-command-caveat|task-notification|"
    r"teammate-message|agent-message|agent-notification|ci-monitor-event)\b[^>]*>"
    r"|^\s*Caveat: The messages below were generated",
    re.I,
)
# Whole entries Claude Code writes in the user's place: the summary that continues a compacted
# session, hook feedback fed back to the model (or the notice that a hook stopped the prompt),
# an interruption marker, a plan handed back when it is accepted (older versions write it with
# no `planContent` field), the notice that the person chose to discuss the agent's questions,
# the answer to a slash command that names no command or skill ("Unknown skill: commit", written
# after the local-command caveat as a plain entry).
_WRITTEN_FOR_USER = re.compile(
    r"^\s*(?:Unknown (?:skill|command|slash command): [\w:./@-]+\s*\Z|"
    r"This session is being continued from a previous conversation|"
    r"Stop hook feedback:|[\w:.-]+ hook (?:feedback|error|blocking error)|"
    r"Operation stopped by hook:|Implement the following plan:|"
    r"Another Claude session sent a message:|The user wants to clarify these questions\b|"
    r"\[Request interrupted by user|Caveat:)",
    re.I,
)
# A whole entry that is one element with a hyphenated tag is an app's, not typed: a button's
# prompt (`<create-pr-command>…</create-pr-command>` from the desktop app), a wrapped notice.
# A person types words, not one custom element from start to end.
_ONE_ELEMENT = re.compile(r"^\s*<([a-z][a-z0-9]*(?:-[a-z0-9]+)+)(?:\s[^>]*)?>.*</\1>\s*$", re.S)
# Blocks inside a user entry that the person did not type: reminders and hook output that Claude
# Code appends to the prompt, the IDE's note of the open file or selection or the content of a
# file the person mentioned (`<context ref="file://…">`), instructions an app wrapping Claude
# Code puts before it. They are cut out; what is left is the person's.
_INSERTED_BLOCK = re.compile(
    r"<(system-reminder|system[-_]instructions?|user-prompt-submit-hook|[\w-]*hook[\w-]*|"
    r"ide_[a-z_]+|context(?=\s+ref=\"[a-z]+://))(?:\s+ref=\"[^\"]*\")?>"
    r".*?(?:</\1>|\Z)",
    re.I | re.S,
)

# --- transcripts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One entry of a Claude Code transcript: user / assistant text, tool_use or tool_result."""

    kind: str  # user | assistant | tool_use | tool_result
    text: str = ""
    tool: str = ""
    tool_id: str = ""
    tool_input: str = ""
    is_error: bool = False
    uuid: str = ""  # the transcript entry's own id, when it has one
    line: int = 0  # its line's number in the lines parsed, from 1 (0: unknown)
    # Typed while the agent worked (a queued prompt, or the reason given when refusing a tool
    # call): in the transcript only, no prompt hook.
    queued: bool = False


def user_words(text: str) -> str:
    """What the person typed in a user entry or prompt: "" for text Claude Code wrote in their
    place (a compaction summary, a slash command, hook feedback), else the text without the
    reminders and hook output inserted into it."""
    if _WRITTEN_FOR_USER.match(text) or _NOT_TYPED.search(text) or _ONE_ELEMENT.match(text):
        return ""
    return _INSERTED_BLOCK.sub("", text).strip() if "<" in text else text.strip()


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text") or ""))
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return ""


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _clean(value: Any) -> Any:
    """JSON with every string a database column takes: JSON escapes may spell a NUL (PostgreSQL
    refuses it) or a lone surrogate (UTF-8 cannot encode it)."""
    if isinstance(value, str):
        return value.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def parse_line(line: str | bytes, *, number: int = 0) -> list[Entry]:
    """The entries of one JSONL line of a Claude Code transcript ([] for anything else: a line
    that is not JSON, binary bytes, a summary or system line, a sidechain or meta entry)."""
    try:
        row = _clean(json.loads(line))
    except (ValueError, RecursionError):
        return []
    if not isinstance(row, dict):
        return []
    kind = row.get("type")
    message = row.get("message")
    if row.get("isMeta") or row.get("isSidechain") or row.get("isCompactSummary"):
        return []
    if kind == "attachment":
        return _queued_prompt(row, number)
    if kind not in {"user", "assistant"} or not isinstance(message, dict):
        return []
    if row.get("planContent"):
        return []  # "Implement the following plan: …": the agent's plan, handed back on accept
    uuid = str(row.get("uuid") or "")[:64]
    # Newer Claude Code says who wrote a user line: a background task's notification or a peer
    # session's message (`origin.kind` other than "human") is never the person's text.
    origin = row.get("origin")
    machine = isinstance(origin, dict) and origin.get("kind") not in (None, "human")
    return [
        replace(e, uuid=f"{uuid}{e.uuid}"[:64] if uuid else "", line=number)
        for e in _message_entries(kind, message.get("content"))
        if not (machine and e.kind == "user")
    ]


# Claude Code's tool result when the person refuses a tool call and says what to do instead:
# their words follow the preamble (and, in newer versions, a note to the model after them).
_REFUSAL = re.compile(
    r"\A(?:Error: )?The user doesn't want to proceed with this tool use\..*?"
    r"the user said:\n(?P<said>.*?)(?:\n+Note: The user's next message may contain\b.*)?\Z",
    re.S,
)
REFUSAL_UUID = ":refusal"  # the suffix of a refusal reason's entry uuid (the line's uuid before it)
QUEUED_UUID = "queue:"  # the prefix of a mid-turn prompt's entry uuid (its enqueue time after it)


def refusal_reason(result: str) -> str:
    """What the person typed when refusing a tool call ("" for any other tool result)."""
    found = _REFUSAL.match(result[:20_000]) if "the user said:" in result else None
    return user_words(found["said"]) if found else ""


def _queued_prompt(row: dict[str, Any], number: int) -> list[Entry]:
    """A prompt the person typed while the agent was working: newer Claude Code folds it into
    the running turn as a `queued_command` attachment (no `type: "user"` line, and no
    UserPromptSubmit). Only `commandMode: "prompt"` from a human (or of no stated origin) is
    theirs: a background task's notification or a peer session's message is not."""
    attachment = row.get("attachment")
    if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
        return []
    origin = attachment.get("origin")
    if attachment.get("commandMode", "prompt") != "prompt" or (
        origin is not None and not (isinstance(origin, dict) and origin.get("kind") == "human")
    ):
        return []
    text = user_words(_content_text(attachment.get("prompt")))
    return (
        [Entry("user", text=text, uuid=str(row.get("uuid") or "")[:64], line=number, queued=True)]
        if text
        else []
    )


def _message_entries(kind: str, content: Any) -> list[Entry]:
    entries: list[Entry] = []
    if kind == "user":
        if isinstance(content, str):
            text = user_words(content)
            if text:
                entries.append(Entry("user", text=text))
            return entries
        if isinstance(content, list):
            texts = []
            loaded = False  # the block before was a tool search's result (tools it loaded)
            for block in content:
                if not isinstance(block, dict):
                    continue
                after_search, loaded = loaded, _loads_tools(block)
                if block.get("type") == "tool_result":
                    result = Entry(
                        "tool_result",
                        text=_content_text(block.get("content"))
                        or _json_text(block.get("content") or ""),
                        tool_id=str(block.get("tool_use_id") or ""),
                        is_error=bool(block.get("is_error")),
                    )
                    entries.append(result)
                    said = refusal_reason(result.text) if result.is_error else ""
                    if said:  # the person's words, typed at the permission prompt
                        entries.append(Entry("user", text=said, uuid=REFUSAL_UUID, queued=True))
                elif block.get("type") == "text" and not after_search:
                    # Claude Code notes a tool search's result beside it ("Tool loaded."):
                    # its words, not the person's.
                    texts.append(str(block.get("text") or ""))
            text = user_words("\n".join(t for t in texts if t.strip()))
            if text:  # beside a tool result: typed while the tool ran (a queued message)
                entries.append(Entry("user", text=text))
        return entries
    if isinstance(content, str):
        return [Entry("assistant", text=content)] if content.strip() else []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and str(block.get("text") or "").strip():
            entries.append(Entry("assistant", text=str(block["text"])))
        elif block.get("type") == "tool_use":
            entries.append(
                Entry(
                    "tool_use",
                    tool=str(block.get("name") or ""),
                    tool_id=str(block.get("id") or ""),
                    tool_input=_json_text(block.get("input") or {}),
                )
            )
    return entries


def _loads_tools(block: dict[str, Any]) -> bool:
    """Whether a content block is the result of a tool search: references to the tools it
    loaded (Claude Code 2.1 defers tools until the agent searches for them)."""
    inner = block.get("content") if block.get("type") == "tool_result" else None
    return isinstance(inner, list) and any(
        isinstance(part, dict) and part.get("type") == "tool_reference" for part in inner
    )


# A prompt the agent writes for another agent or session counts from this length (a real task,
# not "go on").
AGENT_PROMPT_MIN_CHARS = 40


def agent_prompt(tool_input: Any) -> str:
    """The prompt a tool call hands to another agent or session (its input's `prompt`: a
    subagent's task, a spawned session's first prompt), or "". `tool_input` is the input
    object, or its JSON text as a transcript's tool_use entry keeps it."""
    if isinstance(tool_input, str):
        try:
            tool_input = json.loads(tool_input)
        except (ValueError, RecursionError):
            return ""
    value = tool_input.get("prompt") if isinstance(tool_input, dict) else None
    if not isinstance(value, str) or len(value.strip()) < AGENT_PROMPT_MIN_CHARS:
        return ""
    return value


def handed_back(entries: Sequence[Entry]) -> list[Entry]:
    """The user entries that repeat a prompt a tool call earlier in `entries` wrote (a
    subagent's task, a spawned session's first prompt): the agent's words handed back, not the
    person's. An entry before the tool call is the person's, handed on."""
    asked: set[str] = set()
    found: list[Entry] = []
    for entry in entries:
        prompt = agent_prompt(entry.tool_input) if entry.kind == "tool_use" else ""
        if prompt:
            asked.add(prompt.strip())
        elif entry.kind == "user" and entry.text.strip() in asked:
            found.append(entry)
    return found


def entry_drafts(entries: Sequence[Entry]) -> list[tuple[LessonDraft, Entry]]:
    """The heuristic's drafts of a transcript's entries, each with the entry it quotes: from the
    person's entries only, never from a request to forget a rule (it retires one instead) nor
    from a prompt the agent wrote (`handed_back`). The server's capture and the import dry run
    both draft by this rule."""
    agents = {id(entry) for entry in handed_back(entries)}
    return [
        (draft, entry)
        for entry in entries
        if entry.kind == "user" and id(entry) not in agents and forget_request(entry.text) is None
        for draft in extract(entry.text)
    ]


def parse_lines(lines: Iterable[str | bytes]) -> list[Entry]:
    """The entries of JSONL lines, each with the number of its line (from 1); a prompt typed
    while the agent worked is one of them where the lines show it reached the agent
    (`_QueuedPrompts`)."""
    out: list[Entry] = []
    queue = _QueuedPrompts()
    for number, line in enumerate(lines, start=1):
        if not (line and line.strip()):
            continue
        if _queue_operation(line):
            queue.read(line, number)
            continue
        queue.next_line(line)
        out.extend(parse_line(line, number=number))
    return queue.merged(out)


def still_queued(lines: Iterable[str | bytes]) -> list[str | bytes]:
    """The `enqueue` lines among JSONL lines that nothing after them took or dropped: prompts
    still waiting where the lines end. A transcript read in parts puts them before the next
    part, so a prompt whose `remove` falls in that part is still read as the person's."""
    queue = _QueuedPrompts()
    for number, line in enumerate(lines, start=1):
        if line and _queue_operation(line):
            queue.read(line, number)
    return [line for _, line, _ in queue.waiting]


def _queue_operation(line: str | bytes) -> bool:
    return b'"queue-operation"' in line if isinstance(line, bytes) else '"queue-operation"' in line


class _QueuedPrompts:
    """Prompts the person typed while the agent was working, as Claude Code 2.1 writes them: a
    `queue-operation` line `enqueue` with the text, then `remove` when the running turn took it
    in (no `type: "user"` line follows, and no UserPromptSubmit), or `dequeue` when it was sent
    as the next prompt (which then has its own line), or `popAll` when the person took the queue
    back to edit it. Only a removed one is an entry of its own (queued, uuid `queue:<time>`),
    and a dequeued one that a compaction met before its line was written (it reaches the agent
    after the summary, and no line of its own ever follows); one whose text comes back as a
    user entry later in the same lines is that entry."""

    def __init__(self) -> None:
        self.waiting: list[tuple[Entry | None, str | bytes, bool]] = []
        self.taken: list[Entry] = []
        self.dequeued: Entry | None = None

    def next_line(self, line: str | bytes) -> None:
        """The first line after a `dequeue`: a compaction boundary takes the prompt in."""
        if self.dequeued is not None:
            marker = b'"compact_boundary"' if isinstance(line, bytes) else '"compact_boundary"'
            if marker in line:  # type: ignore[operator]
                self.taken.append(self.dequeued)
            self.dequeued = None

    def read(self, line: str | bytes, number: int) -> None:
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):
            return
        if not isinstance(row, dict) or row.get("type") != "queue-operation":
            return
        operation = row.get("operation")
        if operation == "enqueue":
            content = row.get("content")
            # A background task's notice (`<task-notification>`, an app's JSON), not a prompt.
            notice = isinstance(content, str) and content.lstrip().startswith(
                ("<task-notification", "{")
            )
            self.waiting.append((self._entry(row, number), line, notice))
        elif operation in ("remove", "dequeue") and self.waiting:
            # The person's prompts go before a background task's notices (which come back as
            # entries of their own later): the oldest prompt waiting, else the oldest notice.
            first = next((i for i, (_, _, notice) in enumerate(self.waiting) if not notice), 0)
            entry, _, _ = self.waiting.pop(first)
            if operation == "remove" and entry is not None:
                self.taken.append(entry)
            elif operation == "dequeue":
                self.dequeued = entry
        elif operation == "popAll":
            self.waiting.clear()

    @staticmethod
    def _entry(row: dict[str, Any], number: int) -> Entry | None:
        content = _clean(row.get("content"))
        text = user_words(content) if isinstance(content, str) else ""
        if not text or text.startswith(("/", "{", "[")):
            return None  # a slash command, an app's JSON (a background task's notice)
        return Entry("user", text=text, uuid=f"{QUEUED_UUID}{row.get('timestamp', '')}"[:64],
                     line=number, queued=True)  # fmt: skip

    def merged(self, entries: list[Entry]) -> list[Entry]:
        if not self.taken:
            return entries
        later: dict[str, int] = {}
        for entry in entries:
            if entry.kind == "user":
                later[entry.text] = max(later.get(entry.text, 0), entry.line)
        kept = [e for e in self.taken if later.get(e.text, 0) <= e.line]
        return sorted(entries + kept, key=lambda e: e.line)


def split_complete(data: bytes) -> tuple[list[bytes], int]:
    """Complete lines of a chunk read from a JSONL file, and how many bytes they span.

    A last line without its newline may still be being written: it is left for the next read,
    so the offset only ever moves past whole lines.
    """
    end = data.rfind(b"\n")
    if end < 0:
        return [], 0
    return data[:end].split(b"\n"), end + 1


def render_entries(entries: Sequence[Entry], limit: int = 12_000) -> str:
    """A compact text of transcript entries for a judge or extractor (newest kept when cut)."""
    lines = []
    for e in entries:
        if e.kind == "user":
            lines.append(f"USER: {e.text.strip()[:1500]}")
        elif e.kind == "assistant":
            lines.append(f"ASSISTANT: {e.text.strip()[:1500]}")
        elif e.kind == "tool_use":
            lines.append(f"TOOL {e.tool}: {e.tool_input[:400]}")
        else:
            lines.append(f"RESULT{' (error)' if e.is_error else ''}: {e.text.strip()[:300]}")
    text = "\n".join(lines)
    return text[-limit:]
