"""The internal engram record of every foreign format: its fields, defaults, validation and
the error an import raises (pure Python, no Django)."""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

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
