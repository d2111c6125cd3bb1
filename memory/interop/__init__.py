"""Import and export of engram files in foreign formats (pure Python, no Django).

One module per format (``yaml_formats``, ``toejough``, ``mem0``) over the shared record of
``records``; this package dispatches by format and detects it.

Formats and where their shape comes from:

* ``plur-yaml`` — PLUR ``engrams.yaml`` (Engram spec v2.1, plur-ai/plur
  ``packages/core/src/schemas/engram.ts``): a top-level ``engrams:`` list or a bare list;
  nested ``temporal``, ``episodic``, ``activation``, ``usage`` and ``exchange`` blocks;
  ``abstract`` and ``derived_from`` are string ids or null. Unknown keys are preserved.
* ``datacore-yaml`` — Datacore DIP-0019 (datacore-one/datacore-dips
  ``DIP-0019-learning-architecture.md``): the same entries, but episodic fields
  (``emotional_weight``, ``confidence``, ``trigger_context``, ``journal_ref``) sit at the top
  level, ``abstract`` may be an object ``{id, statement, structure, applies_when, scope,
  instances}`` and exchange data is ``exchange_metadata``.
* ``toejough-toml`` — toejough/engram memory files (``internal/memory/record.go``): one memory
  per file or several ``[[memories]]`` tables; the legacy shape (title, content, principle,
  anti_pattern, keywords, concepts, confidence A/B/C, ``*_count`` counters,
  enforcement_level) and the later SBIA shape (situation, behavior, impact, action, flat or
  in a ``[content]`` table).
* ``mem0-json`` — Mem0 exports (``Memory.get_all()``): ``{"results": [...]}``,
  ``{"memories": [...]}`` or a bare list of ``{id, memory, hash, metadata, categories,
  created_at, updated_at, user_id, ...}``.

The internal record ("EngramRecord") is a plain dict keyed by Engram model field names, see
``RECORD_DEFAULTS``. Only PLUR is exported; ``parse_plur_yaml(dump_plur_yaml(rs)) == rs``.

Mapping decisions (import only, lossy by nature, documented here once):

* toejough: statement = principle, else action, else content, else "subject predicate
  object", else title; a principle or action is a directive (polarity ``do``). When only an
  anti_pattern/behavior is given it becomes the statement with polarity ``dont``; otherwise
  it is appended to the rationale as ``Anti-pattern: ...`` (after rationale and impact).
  situation → trigger_context; keywords + concepts → tags (deduplicated, in order);
  confidence A→9, B→6, C→3 (an integer 1-10 is kept); surfaced/followed/contradicted/
  ignored/irrelevant ``_count`` → the effectiveness counters, ``not_followed_count`` adds to
  ignored; created_at → learned_at; last_surfaced_at → last_accessed; enforcement_level →
  enforcement; project_slug → scope ``project:<slug>`` unless project_scoped is false;
  source/source_path → source. Every other key (and title/content when not the statement)
  is kept in ``extra`` as ``toejough_<key>``.
* Mem0: memory (or text/data) → statement; categories → tags; created_at → learned_at;
  updated_at → last_accessed; expiration_date → valid_until; agent_id → scope
  ``agent:<id>``; id → source ``mem0:<id>`` and ``extra["mem0_id"]``; every other key
  (hash, user_id, metadata, ...) → ``extra["mem0_<key>"]``.
* PLUR/Datacore: an object ``abstract`` is kept whole in ``abstract_detail`` with its
  ``id`` in ``abstract``; ``derived_from`` becomes a list (null → [], "X" → ["X"]).
  Effectiveness counters, enforcement and abstract_detail are not in PLUR; they are
  exported as ``effectiveness: {...}``, ``enforcement`` and ``abstract_detail`` (PLUR keeps
  unknown keys). Unknown keys inside a known block are kept in ``extra[<block>]``. Under
  ``plur-yaml`` top-level episodic keys are unknown fields (kept in ``extra``) and an object
  ``abstract`` is an error; ``parse_engram_yaml`` picks the dialect per entry instead.
* Errors: ``ImportFormatError.field`` names the record field (``emotional_weight``, not
  ``episodic.emotional_weight``); YAML errors carry the line of the key or entry, TOML ones
  the decoder's line or the ``key =`` line, JSON ones the decoder's line or the entry index.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from typing import Any

from memory.interop.mem0 import parse_mem0_json
from memory.interop.records import (
    ENGRAM_ID_RE,
    MEM0_LIST_KEYS,
    MEM0_TEXT_KEYS,
    PLUR_RESERVED_KEYS,
    POLARITIES,
    RECORD_DEFAULTS,
    STATUSES,
    TOEJOUGH_SBIA_KEYS,
    TYPES,
    VISIBILITIES,
    EngramRecord,
    ImportFormatError,
    new_record,
)
from memory.interop.toejough import parse_toejough_toml
from memory.interop.yaml_formats import (
    _is_datacore_entry,
    _yaml_entries,
    dump_plur_yaml,
    parse_datacore_yaml,
    parse_engram_yaml,
    parse_plur_yaml,
)

__all__ = [
    "ENGRAM_ID_RE",
    "FORMATS",
    "PLUR_RESERVED_KEYS",
    "POLARITIES",
    "RECORD_DEFAULTS",
    "STATUSES",
    "TYPES",
    "VISIBILITIES",
    "EngramRecord",
    "ImportFormatError",
    "detect_format",
    "dump_plur_yaml",
    "new_record",
    "parse",
    "parse_datacore_yaml",
    "parse_engram_yaml",
    "parse_mem0_json",
    "parse_plur_yaml",
    "parse_toejough_toml",
]


# --- dispatch ------------------------------------------------------------------------------

FORMATS: dict[str, Callable[[str], list[EngramRecord]]] = {
    "plur-yaml": parse_plur_yaml,
    "datacore-yaml": parse_datacore_yaml,
    "toejough-toml": parse_toejough_toml,
    "mem0-json": parse_mem0_json,
}


def parse(text: str, fmt: str) -> list[EngramRecord]:
    """Records from ``text`` in format ``fmt`` (a key of FORMATS); all or nothing."""
    try:
        parser = FORMATS[fmt]
    except KeyError:
        raise ImportFormatError(
            f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}"
        ) from None
    return parser(text)


def _sniff_yaml(text: str) -> str | None:
    """plur-yaml or datacore-yaml for an engram YAML document, None if it is not one."""
    try:
        entries = _yaml_entries(text)
    except ImportFormatError:
        return None
    if any(_is_datacore_entry(entry) for entry, _ in entries):
        return "datacore-yaml"
    return "plur-yaml"


def _looks_like_mem0(data: Any) -> bool:
    """True for a JSON value shaped like a Mem0 export."""
    if isinstance(data, dict):
        data = next((data[k] for k in MEM0_LIST_KEYS if isinstance(data.get(k), list)), None)
    return isinstance(data, list) and all(
        isinstance(i, dict) and any(k in i for k in MEM0_TEXT_KEYS) for i in data
    )


def detect_format(filename: str | None, text: str) -> str | None:
    """The FORMATS key for a file, from its extension and then its content; None if unknown."""
    suffix = filename.rsplit(".", 1)[-1].lower() if filename and "." in filename else ""
    if suffix == "toml":
        return "toejough-toml"
    if suffix == "json":
        return "mem0-json"
    if suffix in ("yaml", "yml"):
        return _sniff_yaml(text) or "plur-yaml"
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            if _looks_like_mem0(json.loads(text)):
                return "mem0-json"
        except json.JSONDecodeError:
            pass
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        data = None
    if data and (
        "memories" in data
        or any(k in data for k in ("title", "principle", "anti_pattern", *TOEJOUGH_SBIA_KEYS))
    ):
        return "toejough-toml"
    return _sniff_yaml(text) if stripped else None
