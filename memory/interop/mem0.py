"""Mem0 JSON exports."""

from __future__ import annotations

import json
from typing import Any

from memory.interop.records import (
    MEM0_EXTRA_PREFIX,
    MEM0_LIST_KEYS,
    MEM0_TEXT_KEYS,
    EngramRecord,
    ImportFormatError,
    _dedupe,
    _plain,
    _text,
    _validate,
    _Where,
    new_record,
)

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
