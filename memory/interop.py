"""Import and export of engram files in foreign formats (pure Python, no Django).

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

import copy
import json
import math
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

import yaml

EngramRecord = dict[str, Any]

STATUSES = ("candidate", "active", "dormant", "retired")
TYPES = ("behavioral", "terminological", "procedural", "architectural")
VISIBILITIES = ("private", "public", "template")
POLARITIES = ("do", "dont")
ENGRAM_ID_RE = re.compile(r"^(ENG|ABS|META)-[A-Za-z0-9-]+$")
EPISODIC_MIN, EPISODIC_MAX = 1, 10
TOEJOUGH_CONFIDENCE = {"A": 9, "B": 6, "C": 3}
TOML_ERROR_LINE_RE = re.compile(r"at line (\d+)")
TOML_MEMORIES_HEADER_RE = re.compile(r"^\s*\[\[\s*memories\s*\]\]")
TOML_KEY_RE = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=")
YAML_DUMP_WIDTH = 1_000_000  # never fold long statements; folding is where YAML round trips break
TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
YAML_FOLDED_BREAKS = ("\x85", "\u2028", "\u2029")  # NEL, LS, PS: only escaped in "..." style

RECORD_DEFAULTS: EngramRecord = {
    "engram_id": "",
    "version": 2,
    "status": "active",
    "consolidated": False,
    "type": "behavioral",
    "scope": "global",
    "visibility": "private",
    "polarity": None,
    "statement": "",
    "rationale": "",
    "contraindications": [],
    "tags": [],
    "domain": "",
    "entities": [],
    "learned_at": None,
    "valid_from": None,
    "valid_until": None,
    "emotional_weight": 5,
    "confidence": 5,
    "trigger_context": "",
    "journal_ref": "",
    "retrieval_strength": 0.7,
    "storage_strength": 1.0,
    "frequency": 0,
    "last_accessed": None,
    "injections": 0,
    "hits": 0,
    "misses": 0,
    "last_hit_at": None,
    "feedback_signals": {"positive": 0, "negative": 0, "neutral": 0},
    "surfaced": 0,
    "followed": 0,
    "contradicted": 0,
    "ignored": 0,
    "irrelevant": 0,
    "enforcement": "",
    "source": "",
    "derivation_count": 1,
    "abstract": None,
    "abstract_detail": {},
    "derived_from": [],
    "provenance": {},
    "exchange_metadata": {},
    "structure": "",
    "applies_when": "",
    "extra": {},
}

TEXT_FIELDS = (
    "scope",
    "statement",
    "rationale",
    "domain",
    "trigger_context",
    "journal_ref",
    "enforcement",
    "source",
    "structure",
    "applies_when",
)
DATE_FIELDS = ("learned_at", "valid_from", "valid_until", "last_accessed", "last_hit_at")
COUNT_FIELDS = (
    "frequency",
    "injections",
    "hits",
    "misses",
    "surfaced",
    "followed",
    "contradicted",
    "ignored",
    "irrelevant",
    "derivation_count",
)
STR_LIST_FIELDS = ("contraindications", "tags", "derived_from")
DICT_FIELDS = ("provenance", "exchange_metadata", "abstract_detail")
EPISODIC_SCALE_FIELDS = ("emotional_weight", "confidence")

# PLUR top-level keys copied one to one (PLUR key -> record field).
PLUR_SIMPLE_KEYS = {
    "id": "engram_id",
    "version": "version",
    "status": "status",
    "consolidated": "consolidated",
    "type": "type",
    "scope": "scope",
    "visibility": "visibility",
    "polarity": "polarity",
    "statement": "statement",
    "rationale": "rationale",
    "contraindications": "contraindications",
    "tags": "tags",
    "domain": "domain",
    "entities": "entities",
    "source": "source",
    "derivation_count": "derivation_count",
    "structure": "structure",
    "applies_when": "applies_when",
    "feedback_signals": "feedback_signals",
    "provenance": "provenance",
    "enforcement": "enforcement",
    "abstract_detail": "abstract_detail",
}
# PLUR nested blocks (block key -> record fields it holds, same names inside the block).
PLUR_BLOCKS = {
    "temporal": ("learned_at", "valid_from", "valid_until"),
    "episodic": ("emotional_weight", "confidence", "trigger_context", "journal_ref"),
    "activation": ("retrieval_strength", "storage_strength", "frequency", "last_accessed"),
    "usage": ("injections", "hits", "misses", "last_hit_at"),
    "effectiveness": ("surfaced", "followed", "contradicted", "ignored", "irrelevant"),
}
PLUR_EXCHANGE_KEY = "exchange"
DATACORE_EXCHANGE_KEY = "exchange_metadata"
DATACORE_TOP_LEVEL_EPISODIC = PLUR_BLOCKS["episodic"]
# Keys a PLUR entry interprets; anything else on an entry is an unknown field kept in extra.
PLUR_RESERVED_KEYS = frozenset(
    {*PLUR_SIMPLE_KEYS, *PLUR_BLOCKS, PLUR_EXCHANGE_KEY, "abstract", "derived_from"}
)
# Blocks always written on export even when every value is the default, as PLUR does.
PLUR_ALWAYS_BLOCKS = ("activation",)

TOEJOUGH_COUNTERS = {
    "surfaced_count": "surfaced",
    "followed_count": "followed",
    "contradicted_count": "contradicted",
    "ignored_count": "ignored",
    "not_followed_count": "ignored",
    "irrelevant_count": "irrelevant",
}
TOEJOUGH_SBIA_KEYS = ("situation", "behavior", "impact", "action", "subject", "predicate", "object")
TOEJOUGH_EXTRA_PREFIX = "toejough_"
MEM0_TEXT_KEYS = ("memory", "text", "data")
MEM0_LIST_KEYS = ("results", "memories")
MEM0_EXTRA_PREFIX = "mem0_"


class ImportFormatError(Exception):
    """A malformed import file; carries the 1-based line, the field and the entry index."""

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        field: str | None = None,
        index: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.field = field
        self.index = index

    def __str__(self) -> str:
        where = []
        if self.index is not None:
            where.append(f"entry {self.index}")
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field is not None:
            where.append(f"field {self.field}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


def new_record(**overrides: Any) -> EngramRecord:
    """A fresh record with every field at its default (deep-copied), then the overrides."""
    unknown = set(overrides) - set(RECORD_DEFAULTS)
    if unknown:
        raise TypeError(f"unknown record fields: {sorted(unknown)}")
    record = copy.deepcopy(RECORD_DEFAULTS)
    record.update(copy.deepcopy(overrides))
    return record


# --- location tracking ---------------------------------------------------------------------


@dataclass
class _Where:
    """Where an entry sits in its file, to point errors at a line."""

    index: int | None = None
    line: int | None = None
    key_lines: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def error(
        self, message: str, *, field: str | None = None, path: tuple[Any, ...] = ()
    ) -> ImportFormatError:
        """An ImportFormatError at the line of ``path`` (or of the entry when unknown)."""
        line = self.key_lines.get(path, self.line) if path else self.line
        return ImportFormatError(message, line=line, field=field, index=self.index)


# --- value helpers -------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """Deep copy with dates as ISO strings and tuples as lists (JSON-ish values only)."""
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _is_number(value: Any) -> bool:
    """True for finite ints and floats, never for bools."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return not (isinstance(value, float) and not math.isfinite(value))


def _is_iso(value: str) -> bool:
    """True when ``value`` is an ISO 8601 date or datetime Python can read."""
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _dedupe(values: Iterable[str]) -> list[str]:
    """Values in first-seen order without repeats."""
    return list(dict.fromkeys(values))


def _validate(record: EngramRecord, where: _Where, paths: dict[str, tuple[Any, ...]]) -> None:
    """Raise ImportFormatError for the first field outside its type or range."""

    def fail(name: str, problem: str) -> ImportFormatError:
        path = paths.get(name, ())
        label = ".".join(str(p) for p in path) if path else name
        return where.error(f"{label}: {problem}", field=name, path=path)

    statement = record["statement"]
    if not isinstance(statement, str) or not statement.strip():
        if "statement" not in paths or statement in (None, ""):
            raise where.error("entry has no statement", field="statement")
        raise fail("statement", "must be a non-empty string")
    engram_id = record["engram_id"]
    if not isinstance(engram_id, str) or (engram_id and not ENGRAM_ID_RE.match(engram_id)):
        raise fail("engram_id", f"must look like ENG-YYYY-MMDD-NNN, got {engram_id!r}")
    for name, allowed in (
        ("status", STATUSES),
        ("type", TYPES),
        ("visibility", VISIBILITIES),
    ):
        if record[name] not in allowed:
            raise fail(name, f"must be one of {', '.join(allowed)}, got {record[name]!r}")
    if record["polarity"] is not None and record["polarity"] not in POLARITIES:
        raise fail("polarity", f"must be do, dont or null, got {record['polarity']!r}")
    if not isinstance(record["consolidated"], bool):
        raise fail("consolidated", "must be true or false")
    version = record["version"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise fail("version", "must be an integer >= 1")
    for name in TEXT_FIELDS:
        if not isinstance(record[name], str):
            raise fail(name, "must be a string")
    if not record["scope"].strip():
        raise fail("scope", "must be a non-empty scope such as global or project:X")
    for name in DATE_FIELDS:
        value = record[name]
        if value is not None and (not isinstance(value, str) or not _is_iso(value)):
            raise fail(name, f"must be an ISO 8601 date or datetime, got {value!r}")
    for name in COUNT_FIELDS:
        value = record[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise fail(name, f"must be a non-negative integer, got {value!r}")
    for name in EPISODIC_SCALE_FIELDS:
        value = record[name]
        if value is not None and (
            not _is_number(value) or not EPISODIC_MIN <= value <= EPISODIC_MAX
        ):
            raise fail(name, f"must be a number from 1 to 10, got {value!r}")
    rs = record["retrieval_strength"]
    if not _is_number(rs) or not 0 <= rs <= 1:
        raise fail("retrieval_strength", f"must be a number from 0 to 1, got {rs!r}")
    ss = record["storage_strength"]
    if not _is_number(ss) or ss < 0:
        raise fail("storage_strength", f"must be a non-negative number, got {ss!r}")
    for name in STR_LIST_FIELDS:
        value = record[name]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise fail(name, "must be a list of strings")
    if not isinstance(record["entities"], list):
        raise fail("entities", "must be a list")
    for name in DICT_FIELDS:
        if not isinstance(record[name], dict):
            raise fail(name, "must be a mapping")
    signals = record["feedback_signals"]
    if not isinstance(signals, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in signals.values()
    ):
        raise fail("feedback_signals", "must map positive/negative/neutral to integers")
    abstract = record["abstract"]
    if abstract is not None and not isinstance(abstract, str):
        raise fail("abstract", "must be an engram id string or null")


def _text(value: Any) -> Any:
    """Null text becomes the empty string; anything else is left for validation."""
    return "" if value is None else value


# --- YAML ----------------------------------------------------------------------------------


class _YamlLoader(yaml.SafeLoader):
    """SafeLoader that leaves dates as strings and refuses aliases.

    Aliases are refused because nested ones expand exponentially ("billion laughs"); engram
    files never need them.
    """

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed in engram files", event.start_mark
            )
        return super().compose_node(parent, index)


_YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != TIMESTAMP_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class _YamlDumper(yaml.SafeDumper):
    """SafeDumper that never writes anchors and aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    """Double-quote strings holding YAML 1.1 line breaks, which other styles fold to spaces."""
    if any(ch in data for ch in YAML_FOLDED_BREAKS):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    return dumper.represent_str(data)


_YamlDumper.add_representer(str, _represent_str)


def _load_yaml(text: str) -> tuple[Any, yaml.Node | None]:
    """Parse YAML into (data, root node); syntax errors carry the parser's line."""
    try:
        loader = _YamlLoader(text)
    except yaml.YAMLError as exc:  # e.g. a control character the reader refuses
        raise ImportFormatError(f"invalid YAML: {exc}") from exc
    try:
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "syntax error"
        line = mark.line + 1 if mark is not None else None
        raise ImportFormatError(f"invalid YAML: {problem}", line=line) from exc
    except yaml.YAMLError as exc:
        raise ImportFormatError(f"invalid YAML: {exc}") from exc
    finally:
        loader.dispose()
    return data, node


def _mapping_value(node: yaml.Node | None, key: str) -> yaml.Node | None:
    """The value node under a scalar ``key`` of a mapping node, if any."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            return value_node
    return None


def _key_lines(node: yaml.Node | None) -> dict[tuple[Any, ...], int]:
    """1-based lines of an entry's keys, two levels deep, keyed by key path."""
    lines: dict[tuple[Any, ...], int] = {}
    if not isinstance(node, yaml.MappingNode):
        return lines
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            continue
        lines[(key_node.value,)] = key_node.start_mark.line + 1
        if isinstance(value_node, yaml.MappingNode):
            for sub_key, _ in value_node.value:
                if isinstance(sub_key, yaml.ScalarNode):
                    lines[(key_node.value, sub_key.value)] = sub_key.start_mark.line + 1
    return lines


def _yaml_entries(text: str) -> list[tuple[Any, _Where]]:
    """The engram entries of a YAML file with their locations; checks the top-level shape."""
    data, root = _load_yaml(text)
    if data is None:
        return []
    if isinstance(data, dict):
        if "engrams" not in data:
            raise ImportFormatError(
                "expected a top-level 'engrams:' list or a bare list of engrams",
                line=1,
                field="engrams",
            )
        entries = data["engrams"]
        seq_node = _mapping_value(root, "engrams")
        if entries is None:
            return []
        if not isinstance(entries, list):
            line = seq_node.start_mark.line + 1 if seq_node is not None else None
            raise ImportFormatError("'engrams' must be a list", line=line, field="engrams")
    elif isinstance(data, list):
        entries, seq_node = data, root
    else:
        raise ImportFormatError("expected a list of engrams or a mapping with 'engrams'", line=1)
    item_nodes = seq_node.value if isinstance(seq_node, yaml.SequenceNode) else []
    located = []
    for index, entry in enumerate(entries):
        node = item_nodes[index] if index < len(item_nodes) else None
        where = _Where(
            index=index,
            line=node.start_mark.line + 1 if node is not None else None,
            key_lines=_key_lines(node),
        )
        if not isinstance(entry, dict):
            raise where.error("each engram must be a mapping")
        located.append((entry, where))
    return located


def _is_datacore_entry(entry: dict[Any, Any]) -> bool:
    """True when an entry uses the Datacore dialect (object abstract or top-level episodic)."""
    return isinstance(entry.get("abstract"), dict) or any(
        key in entry for key in DATACORE_TOP_LEVEL_EPISODIC
    )


def _from_engram_entry(entry: dict[Any, Any], where: _Where, *, datacore: bool) -> EngramRecord:
    """Map one PLUR (or Datacore) entry to a validated record; unknown keys go to extra."""
    record = new_record()
    paths: dict[str, tuple[Any, ...]] = {}
    extra: dict[Any, Any] = {}
    for key, value in entry.items():
        if key in PLUR_SIMPLE_KEYS:
            name = PLUR_SIMPLE_KEYS[key]
            record[name] = _text(value) if name in TEXT_FIELDS else _plain(value)
            paths[name] = (key,)
        elif key in PLUR_BLOCKS:
            if value is None:
                continue
            if not isinstance(value, dict):
                raise where.error(f"{key}: must be a mapping", field=key, path=(key,))
            block_extra = {}
            for sub_key, sub_value in value.items():
                if sub_key in PLUR_BLOCKS[key]:
                    name = sub_key
                    record[name] = _text(sub_value) if name in TEXT_FIELDS else _plain(sub_value)
                    paths[name] = (key, sub_key)
                else:
                    block_extra[sub_key] = _plain(sub_value)
            if block_extra:
                extra[key] = block_extra
        elif key == PLUR_EXCHANGE_KEY or (datacore and key == DATACORE_EXCHANGE_KEY):
            record["exchange_metadata"] = {} if value is None else _plain(value)
            paths["exchange_metadata"] = (key,)
        elif datacore and key in DATACORE_TOP_LEVEL_EPISODIC:
            record[key] = _text(value) if key in TEXT_FIELDS else _plain(value)
            paths[key] = (key,)
        elif key == "abstract":
            paths["abstract"] = (key,)
            if isinstance(value, dict):
                if not datacore:
                    raise where.error(
                        "abstract: an object abstract is the Datacore dialect; "
                        "PLUR expects an ABS- id string (import as datacore-yaml)",
                        field="abstract",
                        path=(key,),
                    )
                record["abstract_detail"] = _plain(value)
                record["abstract"] = value.get("id")
            else:
                record["abstract"] = value
        elif key == "derived_from":
            paths["derived_from"] = (key,)
            if value is None:
                record["derived_from"] = []
            elif isinstance(value, str):
                record["derived_from"] = [value]
            else:
                record["derived_from"] = _plain(value)
        else:
            extra[key] = _plain(value)
    if record["feedback_signals"] is None:
        record["feedback_signals"] = {}
    if isinstance(record["feedback_signals"], dict):
        record["feedback_signals"] = {
            **RECORD_DEFAULTS["feedback_signals"],
            **record["feedback_signals"],
        }
    for name in ("provenance", "abstract_detail", "entities", "contraindications", "tags"):
        if record[name] is None:
            record[name] = copy.deepcopy(RECORD_DEFAULTS[name])
    record["extra"] = extra
    _validate(record, where, paths)
    return record


def _parse_yaml(text: str, choose: Callable[[dict[Any, Any]], bool]) -> list[EngramRecord]:
    """Parse every entry, ``choose(entry)`` telling whether it is the Datacore dialect."""
    return [
        _from_engram_entry(entry, where, datacore=choose(entry))
        for entry, where in _yaml_entries(text)
    ]


def parse_plur_yaml(text: str) -> list[EngramRecord]:
    """Records from a PLUR engrams.yaml (``engrams:`` list or bare list); all or nothing."""
    return _parse_yaml(text, lambda entry: False)


def parse_datacore_yaml(text: str) -> list[EngramRecord]:
    """Records from a Datacore DIP-0019 engrams.yaml (top-level episodic, object abstract)."""
    return _parse_yaml(text, lambda entry: True)


def parse_engram_yaml(text: str) -> list[EngramRecord]:
    """Records from PLUR or Datacore YAML, the dialect detected per entry."""
    return _parse_yaml(text, _is_datacore_entry)


def _without_defaults(record: EngramRecord, names: Iterable[str]) -> dict[str, Any]:
    """The named fields whose values differ from their defaults."""
    return {
        name: copy.deepcopy(record[name])
        for name in names
        if record[name] != RECORD_DEFAULTS[name]
        or type(record[name]) is not type(RECORD_DEFAULTS[name])
    }


def _to_plur_entry(record: EngramRecord) -> dict[Any, Any]:
    """One record in PLUR form, unknown fields merged back at the entry's top level."""
    rec = _plain({**RECORD_DEFAULTS, **record})
    extra = dict(rec["extra"] or {})
    entry: dict[Any, Any] = {
        "id": rec["engram_id"],
        "version": rec["version"],
        "status": rec["status"],
        "consolidated": rec["consolidated"],
        "type": rec["type"],
        "scope": rec["scope"],
        "visibility": rec["visibility"],
        "polarity": rec["polarity"],
        "statement": rec["statement"],
    }
    for key in ("rationale", "contraindications"):
        if rec[key]:
            entry[key] = rec[key]
    entry["tags"] = rec["tags"]
    for key in ("domain", "entities", "source"):
        if rec[key]:
            entry[key] = rec[key]
    entry["derivation_count"] = rec["derivation_count"]
    entry["abstract"] = rec["abstract"]
    if rec["abstract_detail"]:
        entry["abstract_detail"] = rec["abstract_detail"]
    derived = rec["derived_from"]
    entry["derived_from"] = None if not derived else derived[0] if len(derived) == 1 else derived
    for key in ("structure", "applies_when"):
        if rec[key]:
            entry[key] = rec[key]
    for block, names in PLUR_BLOCKS.items():
        values = (
            {name: rec[name] for name in names}
            if block in PLUR_ALWAYS_BLOCKS
            else _without_defaults(rec, names)
        )
        block_extra = extra.pop(block, None)
        if block_extra is not None:
            if not isinstance(block_extra, dict):
                raise ValueError(f"extra[{block!r}] must be a mapping of unknown {block} keys")
            clash = set(block_extra) & set(names)
            if clash:
                raise ValueError(f"extra[{block!r}] repeats known keys {sorted(clash)}")
            values.update(block_extra)
        if values:
            entry[block] = values
    entry["feedback_signals"] = rec["feedback_signals"]
    if rec["enforcement"]:
        entry["enforcement"] = rec["enforcement"]
    if rec["provenance"]:
        entry["provenance"] = rec["provenance"]
    if rec["exchange_metadata"]:
        entry[PLUR_EXCHANGE_KEY] = rec["exchange_metadata"]
    reserved = PLUR_RESERVED_KEYS & set(extra)
    if reserved:
        raise ValueError(f"extra repeats PLUR keys {sorted(reserved)}")
    entry.update(extra)
    return entry


def dump_plur_yaml(records: Iterable[EngramRecord]) -> str:
    """PLUR engrams.yaml text (``engrams:`` list) for the records; lossless for valid ones."""
    document = {"engrams": [_to_plur_entry(record) for record in records]}
    return yaml.dump(
        document,
        Dumper=_YamlDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=YAML_DUMP_WIDTH,
    )


# --- TOML (toejough/engram) ----------------------------------------------------------------


def _toml_key_lines(lines: list[str], start: int, end: int) -> dict[tuple[Any, ...], int]:
    """1-based lines of ``key =`` assignments between two 0-based line offsets."""
    found: dict[tuple[Any, ...], int] = {}
    for offset in range(start, end):
        match = TOML_KEY_RE.match(lines[offset])
        if match:
            found.setdefault((match.group(1),), offset + 1)
    return found


def _str_or_none(item: dict[str, Any], key: str, where: _Where) -> str | None:
    """A string value (blank → None); raise when present but not a string."""
    value = item.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise where.error(f"{key}: must be a string", field=key, path=(key,))
    return value if value.strip() else None


def _str_list(item: dict[str, Any], key: str, where: _Where) -> list[str]:
    """A list of strings (missing → []); raise for anything else."""
    value = item.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise where.error(f"{key}: must be a list of strings", field="tags", path=(key,))
    return value


def _from_toejough(item: dict[str, Any], where: _Where) -> EngramRecord:
    """Map one toejough memory table to a validated record (see the module docstring)."""
    item = _plain(item)
    content = item.get("content")
    sbia = content if isinstance(content, dict) else item
    used: set[str] = {"keywords", "concepts", "confidence", *TOEJOUGH_COUNTERS}
    if isinstance(content, dict):
        used.add("content")  # an SBIA [content] table is fully mapped below

    def text(key: str, source: dict[str, Any] = item) -> str | None:
        value = _str_or_none(source, key, where)
        if value is None and source is not item:
            value = _str_or_none(item, key, where)  # SBIA keys may also sit at the top level
        return value

    fact = " ".join(
        v for v in (text(k, sbia) for k in ("subject", "predicate", "object")) if v is not None
    )
    candidates = (
        ("principle", text("principle")),
        ("action", text("action", sbia)),
        ("content", None if isinstance(content, dict) else text("content")),
        ("subject", fact or None),
        ("title", text("title")),
    )
    anti_key = next((k for k in ("anti_pattern", "behavior") if text(k, sbia)), None)
    anti = text(anti_key, sbia) if anti_key else None
    record = new_record()
    paths: dict[str, tuple[Any, ...]] = {}
    statement_key, statement = next(((k, v) for k, v in candidates if v), (None, None))
    if statement_key is not None:
        record["statement"] = statement
        paths["statement"] = (statement_key,)
        used.update(("subject", "predicate", "object") if statement_key == "subject" else ())
        used.add(statement_key)
        if statement_key in ("principle", "action"):
            record["polarity"] = "do"
    elif anti is not None:
        record["statement"], record["polarity"] = anti, "dont"
        paths["statement"] = (anti_key,)
    else:
        raise where.error(
            "memory has no principle, action, content or title to use as statement",
            field="statement",
        )
    if anti_key:
        used.add(anti_key)
    rationale_parts = [text("rationale"), text("impact", sbia)]
    if anti is not None and statement_key is not None:
        rationale_parts.append(f"Anti-pattern: {anti}")
    record["rationale"] = "\n\n".join(p for p in rationale_parts if p)
    used.update(("rationale", "impact"))
    situation = text("situation", sbia)
    if situation is not None:
        record["trigger_context"] = situation
        used.add("situation")
    record["tags"] = _dedupe(
        _str_list(item, "keywords", where) + _str_list(item, "concepts", where)
    )

    confidence = item.get("confidence")
    if confidence is not None and confidence != "":
        if isinstance(confidence, str) and confidence.strip().upper() in TOEJOUGH_CONFIDENCE:
            record["confidence"] = TOEJOUGH_CONFIDENCE[confidence.strip().upper()]
        elif _is_number(confidence):
            record["confidence"] = confidence
        else:
            raise where.error(
                f"confidence: must be A, B, C or 1-10, got {confidence!r}",
                field="confidence",
                path=("confidence",),
            )
        paths["confidence"] = ("confidence",)
    for key, name in TOEJOUGH_COUNTERS.items():
        if key in item:
            value = item[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise where.error(f"{key}: must be a non-negative integer", field=name, path=(key,))
            record[name] += value
    for key, name in (("created_at", "learned_at"), ("last_surfaced_at", "last_accessed")):
        value = text(key)
        if value is not None:
            record[name] = value
            paths[name] = (key,)
            used.add(key)
    enforcement = text("enforcement_level")
    if enforcement is not None:
        record["enforcement"] = enforcement
        used.add("enforcement_level")
    slug = text("project_slug")
    if slug is not None and item.get("project_scoped", True) is not False:
        record["scope"] = f"project:{slug}"
    source, source_path = text("source"), text("source_path")
    if source is not None:
        record["source"] = source
        used.add("source")
    elif source_path is not None:
        record["source"] = f"toejough:{source_path}"
        used.add("source_path")
    else:
        record["source"] = "toejough"
    record["extra"] = {
        f"{TOEJOUGH_EXTRA_PREFIX}{key}": value for key, value in item.items() if key not in used
    }
    _validate(record, where, paths)
    return record


def parse_toejough_toml(text: str) -> list[EngramRecord]:
    """Records from a toejough memory file (one memory, or ``[[memories]]`` tables)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = TOML_ERROR_LINE_RE.search(str(exc))
        raise ImportFormatError(
            f"invalid TOML: {exc}", line=int(match.group(1)) if match else None
        ) from exc
    lines = text.splitlines()
    if "memories" in data:
        items = data["memories"]
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise ImportFormatError(
                "'memories' must be an array of tables ([[memories]])", field="memories"
            )
        headers = [n for n, line in enumerate(lines) if TOML_MEMORIES_HEADER_RE.match(line)]
        located = []
        for index, item in enumerate(items):
            if len(headers) == len(items):
                end = headers[index + 1] if index + 1 < len(headers) else len(lines)
                where = _Where(
                    index=index,
                    line=headers[index] + 1,
                    key_lines=_toml_key_lines(lines, headers[index], end),
                )
            else:
                where = _Where(index=index)
            located.append((item, where))
    else:
        if not data:
            raise ImportFormatError("empty TOML file: no memory found")
        located = [(data, _Where(index=0, line=1, key_lines=_toml_key_lines(lines, 0, len(lines))))]
    return [_from_toejough(item, where) for item, where in located]


# --- JSON (Mem0) ---------------------------------------------------------------------------


def _from_mem0(item: dict[str, Any], where: _Where) -> EngramRecord:
    """Map one Mem0 memory object to a validated record (see the module docstring)."""
    item = _plain(item)
    record = new_record()
    paths: dict[str, tuple[Any, ...]] = {}
    used: set[str] = set()
    text_key = next((k for k in MEM0_TEXT_KEYS if k in item), None)
    if text_key is None:
        raise where.error("memory has no 'memory' text", field="statement")
    record["statement"] = _text(item[text_key])
    paths["statement"] = (text_key,)
    used.add(text_key)
    categories = item.get("categories")
    if categories is not None:
        is_str_list = isinstance(categories, list) and all(isinstance(c, str) for c in categories)
        record["tags"] = _dedupe(categories) if is_str_list else categories
        paths["tags"] = ("categories",)
    used.add("categories")
    for key, name in (
        ("created_at", "learned_at"),
        ("updated_at", "last_accessed"),
        ("expiration_date", "valid_until"),
    ):
        if key in item:
            record[name] = item[key] or None
            paths[name] = (key,)
            used.add(key)
    agent_id = item.get("agent_id")
    if isinstance(agent_id, str) and agent_id.strip():
        record["scope"] = f"agent:{agent_id.strip()}"
    mem0_id = item.get("id")
    extra: dict[str, Any] = {}
    if mem0_id is not None:
        record["source"] = f"mem0:{mem0_id}"
        extra["mem0_id"] = mem0_id
        used.add("id")
    else:
        record["source"] = "mem0"
    for key, value in item.items():
        if key not in used:
            extra[f"{MEM0_EXTRA_PREFIX}{key}"] = value
    record["extra"] = extra
    _validate(record, where, paths)
    return record


def parse_mem0_json(text: str) -> list[EngramRecord]:
    """Records from a Mem0 JSON export (``results``/``memories`` list or a bare list)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"invalid JSON: {exc.msg}", line=exc.lineno) from exc
    if isinstance(data, dict):
        key = next((k for k in MEM0_LIST_KEYS if isinstance(data.get(k), list)), None)
        if key is None:
            raise ImportFormatError(
                "expected a list of memories or an object with a 'results' or 'memories' list"
            )
        items = data[key]
    elif isinstance(data, list):
        items = data
    else:
        raise ImportFormatError("expected a list of memories or an object with 'results'")
    records = []
    for index, item in enumerate(items):
        where = _Where(index=index)
        if not isinstance(item, dict):
            raise where.error("each memory must be an object")
        records.append(_from_mem0(item, where))
    return records


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
