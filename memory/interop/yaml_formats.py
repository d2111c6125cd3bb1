"""PLUR and Datacore engram YAML: parse both dialects, export PLUR."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

import yaml

from memory.interop.records import (
    DATACORE_EXCHANGE_KEY,
    DATACORE_TOP_LEVEL_EPISODIC,
    PLUR_ALWAYS_BLOCKS,
    PLUR_BLOCKS,
    PLUR_EXCHANGE_KEY,
    PLUR_RESERVED_KEYS,
    PLUR_SIMPLE_KEYS,
    RECORD_DEFAULTS,
    TEXT_FIELDS,
    TIMESTAMP_TAG,
    YAML_DUMP_WIDTH,
    YAML_FOLDED_BREAKS,
    EngramRecord,
    ImportFormatError,
    _plain,
    _text,
    _validate,
    _Where,
    new_record,
)

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
