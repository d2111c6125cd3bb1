"""Consolidation stage 1, observations in: each unprocessed observation becomes a `Trace` (what
it did as text and features, its session window) with its vector; embedded in batches."""

from __future__ import annotations

import json
import os
import posixpath
import re
import shlex
from collections import defaultdict
from typing import Any

from django.db import transaction
from django.db.models import F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from dialectic import maths
from dialectic.models import Trace
from memory.models import Observation
from memory.services.engrams import embed_texts

EMBED_BATCH = 500
MAX_TEXT = 300
ERROR_RE = re.compile(r"\b(error|exception|traceback|failed|failure|fatal)\b", re.IGNORECASE)
TEST_COMMAND_RE = re.compile(
    r"\b(pytest|unittest|tox|nox|jest|vitest|mocha|go test|cargo test|"
    r"npm (?:run )?test|make test|rspec|phpunit)\b"
)

# --- observations in ------------------------------------------------------------------------


def _input_of(observation: Observation) -> dict[str, Any]:
    try:
        value = json.loads(observation.tool_input) if observation.tool_input else {}
    except ValueError:
        return {"text": observation.tool_input}
    return value if isinstance(value, dict) else {"text": str(value)}


def _paths_of(data: dict[str, Any]) -> list[str]:
    found = []
    for key in ("file_path", "notebook_path", "path"):
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            found.append(value.strip()[:300])
    return found


def _command_of(data: dict[str, Any]) -> str:
    value = data.get("command")
    return value.strip()[:300] if isinstance(value, str) else ""


def command_head(command: str) -> str:
    """The program a shell command runs (`pytest`, `npm test`, `git status`), for conditions."""
    match = TEST_COMMAND_RE.search(command)
    if match:
        return match.group(1)
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    words = [w for w in words if "=" not in w[:1] and not w.startswith("-")]
    if not words:
        return ""
    head = os.path.basename(words[0])
    if head in ("python", "python3", "uv", "poetry", "npx", "git", "npm", "make", "cargo", "go"):
        return " ".join([head, *words[1:2]])
    return head


def relative_path(path: str, project: str) -> str:
    if project and path.startswith(project.rstrip("/") + "/"):
        return path[len(project.rstrip("/")) + 1 :]
    return path


def _where(rel: str) -> str:
    folder, ext = posixpath.dirname(rel), posixpath.splitext(rel)[1]
    kind = f"{ext} file" if ext else "file"
    return f"{kind} in {folder}" if folder else f"{kind} in the project root"


def observation_text(observation: Observation, data: dict[str, Any], project: str) -> str:
    """What is embedded: the kind of action, not its particulars. The tool with the kind and
    place of the file (`Read .py file in src/api`, not the file's name), the program a command
    runs, or the search pattern: a habit repeats the kind, rarely the exact file."""
    parts = [observation.tool]
    for path in _paths_of(data)[:1]:
        parts.append(_where(relative_path(path, project)))
    command = _command_of(data)
    if command:
        parts.append(f"run {command_head(command) or command[:60]}")
    pattern = data.get("pattern")
    if isinstance(pattern, str) and pattern.strip() and len(parts) == 1:
        parts.append(f"search {pattern.strip()[:80]}")
    for key in ("query", "url", "description"):
        value = data.get(key)
        if isinstance(value, str) and value.strip() and len(parts) == 1:
            parts.append(value.strip()[:120])
    if len(parts) == 1 and data.get("text"):
        parts.append(str(data["text"])[:120])
    return " ".join(parts)[:MAX_TEXT]


def observation_features(
    observation: Observation, data: dict[str, Any], project: str
) -> set[tuple[str, str]]:
    """The observation's own features: its tool, folders and extensions of its paths, the
    program of its command, and whether it failed."""
    found: set[tuple[str, str]] = {("tool", observation.tool)}
    for path in _paths_of(data):
        rel = relative_path(path, project)
        folder, ext = posixpath.dirname(rel), posixpath.splitext(rel)[1]
        if folder:
            found.add(("path", folder.split("/")[0] + "/"))
        if ext:
            found.add(("path", f"*{ext}"))
    command = _command_of(data)
    if command:
        head = command_head(command)
        if head:
            found.add(("command", head))
    if not observation.success or ERROR_RE.search(observation.tool_output[:2000]):
        found.add(("error", f"{observation.tool} failed"))
    return found


def observations_embed(
    *, owner: Any | None = None, batch: int = EMBED_BATCH, limit: int | None = None
) -> int:
    """Embed unprocessed observations in batches and record each one's trace (its session
    window's tool sequence and features); returns how many. Claim and result commit together:
    a batch re-checks `processed_at IS NULL` under a row lock, so two workers never double up."""
    done = 0
    while limit is None or done < limit:
        size = batch if limit is None else min(batch, limit - done)
        with transaction.atomic():
            rows = Observation.objects.filter(processed_at__isnull=True).order_by("id")
            if owner is not None:
                rows = rows.filter(owner=owner)
            claimed = list(
                rows.select_related("session")
                .select_for_update(skip_locked=True, of=("self",))
                .defer("embedding")[:size]
            )
            if not claimed:
                break
            _traces_build(claimed)
        done += len(claimed)
    return done


def _window_of(observation: Observation, recent: dict[Any, list[Observation]]) -> list[Any]:
    return recent.get(observation.session_id or ("solo", observation.pk), [])


def _traces_build(claimed: list[Observation]) -> None:
    now = timezone.now()
    # The session window: the calls of the same session ending with this one (earlier ones may
    # be in an earlier batch, so they are read back).
    sessions = {o.session_id for o in claimed if o.session_id}
    first_id = claimed[0].pk
    earlier: dict[Any, list[Observation]] = defaultdict(list)
    if sessions:
        # The last 4 calls of each session before this batch, in one query.
        position = Window(RowNumber(), partition_by=[F("session_id")], order_by=F("id").desc())
        before = (
            Observation.objects.filter(session_id__in=sessions, id__lt=first_id)
            .annotate(position=position)
            .filter(position__lt=maths.SESSION_WINDOW)
            .order_by("id")
            .only("id", "session_id", "tool", "tool_input", "tool_output", "success")
        )
        for found in before:
            earlier[found.session_id].append(found)
    texts, traces = [], []
    per_session_feats: dict[Any, list[set[tuple[str, str]]]] = defaultdict(list)
    for session_id, rows in earlier.items():
        for row in rows:
            per_session_feats[session_id].append(observation_features(row, _input_of(row), ""))
    for observation in claimed:
        session = observation.session
        project = (session.cwd if session else "") or ""
        scope = session.scope if session else "global"
        data = _input_of(observation)
        key = observation.session_id or ("solo", observation.pk)
        earlier[key].append(observation)
        window = earlier[key][-maths.SESSION_WINDOW :]
        own = observation_features(observation, data, project)
        per_session_feats[key].append(own)
        feats: set[tuple[str, str]] = set()
        for part in per_session_feats[key][-maths.SESSION_WINDOW :]:
            feats |= part
        text = observation_text(observation, data, project)
        texts.append(text)
        traces.append(
            Trace(
                observation=observation,
                owner_id=observation.owner_id,
                scope=scope,
                project=project[:500],
                tool=observation.tool,
                text=text,
                sequence=[o.tool for o in window],
                features=sorted([list(f) for f in feats]),
                paths=[relative_path(p, project) for p in _paths_of(data)],
                observed_at=observation.created_at,
            )
        )
    # Texts name the kind of action, so a batch repeats many: each distinct one is embedded once.
    distinct = list(dict.fromkeys(texts))
    embedded = dict(zip(distinct, embed_texts(distinct), strict=True))
    # One UPDATE per distinct text (observations with the same text share their vector).
    ids_by_text: dict[str, list[int]] = defaultdict(list)
    for observation, text in zip(claimed, texts, strict=True):
        ids_by_text[text].append(observation.pk)
        observation.embedding = embedded[text]
    for text, ids in ids_by_text.items():
        Observation.objects.filter(pk__in=ids).update(embedding=embedded[text], processed_at=now)
    Trace.objects.bulk_create(traces, ignore_conflicts=True)
