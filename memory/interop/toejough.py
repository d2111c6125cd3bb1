"""toejough/engram TOML memory files."""

from __future__ import annotations

import tomllib
from typing import Any

from memory.interop.records import (
    TOEJOUGH_CONFIDENCE,
    TOEJOUGH_COUNTERS,
    TOEJOUGH_EXTRA_PREFIX,
    TOML_ERROR_LINE_RE,
    TOML_KEY_RE,
    TOML_MEMORIES_HEADER_RE,
    EngramRecord,
    ImportFormatError,
    _dedupe,
    _is_number,
    _plain,
    _validate,
    _Where,
    new_record,
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
