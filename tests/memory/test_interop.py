from __future__ import annotations

import ast
import copy
from datetime import UTC, timedelta, timezone
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory import interop
from memory.interop import (
    FORMATS,
    PLUR_RESERVED_KEYS,
    ImportFormatError,
    detect_format,
    dump_plur_yaml,
    new_record,
    parse,
    parse_datacore_yaml,
    parse_engram_yaml,
    parse_mem0_json,
    parse_plur_yaml,
    parse_toejough_toml,
)

PLUR_YAML = """\
# engrams.yaml written by PLUR
engrams:
  - id: ENG-2026-0129-001
    version: 2
    status: active
    consolidated: false
    type: behavioral
    scope: project:billing
    visibility: private
    polarity: do
    statement: Run the migration linter before committing schema changes.
    rationale: Two outages in January came from unreviewed migrations.
    contraindications:
      - Throwaway prototype branches
    tags: [migrations, django]
    domain: dev/database
    entities:
      - {name: Django, type: technology}
    source: session 2026-01-29
    derivation_count: 2
    abstract: ABS-2026-0125-003
    derived_from: null
    temporal:
      learned_at: "2026-01-29T17:04:00Z"
      ingested_at: "2026-01-29T17:05:12Z"
    episodic:
      emotional_weight: 8
      confidence: 7
      trigger_context: prod deploy failed after a migration
      journal_ref: journal/2026-01-29.md
    activation:
      retrieval_strength: 0.85
      storage_strength: 0.6
      frequency: 5
      last_accessed: 2026-01-30
    usage: {injections: 12, hits: 9, misses: 3, last_hit_at: "2026-01-30T09:00:00Z"}
    feedback_signals: {positive: 3, negative: 0, neutral: 2}
    provenance: {origin: gregor/personal, chain: [], license: cc-by-sa-4.0}
    knowledge_anchors:
      - path: docs/migrations.md
        relevance: primary
    associations:
      - {target_type: engram, target: ENG-2026-0115-003, strength: 0.4, type: semantic}
    commitment: decided
  - id: ENG-2026-0201-002
    status: candidate
    type: terminological
    scope: global
    statement: "“Tenant” means a paying organisation, never a single user — 租户."
    tags: []
    activation:
      retrieval_strength: 0.7
      storage_strength: 1.0
      frequency: 0
      last_accessed: "2026-02-01"
  - id: ABS-2026-0125-003
    version: 2
    status: active
    type: architectural
    scope: global
    visibility: public
    statement: Gate irreversible changes behind an automated check.
    structure: check -> irreversible change
    applies_when: A change cannot be rolled back cheaply
    derived_from: [ENG-2026-0129-001, ENG-2026-0115-003]
    exchange:
      fitness_score: 0.82
      environmental_diversity: 3
      adoption_count: 2
      contradiction_rate: 0.0
"""

DATACORE_YAML = """\
- id: ENG-2026-0131-001
  version: 2
  status: active
  consolidated: true
  type: procedural
  scope: agent:gtd-inbox
  statement: "Use gtd-inbox-coordinator to spawn inbox-processor per entry"
  source_patterns: [PAT-2026-0125-003, PAT-2026-0129-001]
  derivation_count: 3
  emotional_weight: 6
  confidence: 9
  trigger_context: inbox backlog of 200 items
  journal_ref: "[[2026-01-31]]"
  activation:
    retrieval_strength: 0.85
    storage_strength: 0.6
    frequency: 5
    last_accessed: 2026-01-30
  feedback_signals: {positive: 3, negative: 0, neutral: 2}
  tags: [gtd, orchestration]
  abstract:
    id: ABS-2026-0131-001
    statement: "Split batch operations into coordinator + per-item worker"
    structure: "1:N orchestration with parallel execution"
    applies_when: "Processing N independent items that share a workflow"
    scope: global
    instances: [ENG-2026-0131-001, ENG-2026-0205-003]
  exchange_metadata: {fitness_score: 0.5, environmental_diversity: 1}
  derived_from: null
"""

TOEJOUGH_TOML = """\
title = "Use targ not go test"
content = "Ran go test directly and skipped the coverage gate."
observation_type = "correction"
concepts = ["build tooling", "testing"]
keywords = ["targ", "test", "go-test", "testing"]
principle = "Use project-specific build tools"
anti_pattern = "Running go test directly"
rationale = "targ wraps go test with proper flags and coverage requirements"
project_slug = "engram"
confidence = "B"
created_at = "2026-02-03T10:00:00Z"
updated_at = "2026-02-05T08:30:00Z"
surfaced_count = 14
followed_count = 9
contradicted_count = 1
ignored_count = 2
irrelevant_count = 2
last_surfaced_at = "2026-02-05T08:30:00Z"
enforcement_level = "reminder"

[[links]]
target = "memories/run-targ-check.toml"
weight = 0.6
basis = "co-surfacing"
"""

TOEJOUGH_MANY = """\
[[memories]]
title = "Prefer rg"
principle = "Search with rg instead of grep -r"
confidence = "A"

[[memories]]
title = "Unquoted dates"
content = "TOML dates load as datetimes"
created_at = 2026-02-03T10:00:00Z
confidence = "C"
"""

TOEJOUGH_SBIA = """\
schema_version = 1
type = "feedback"
source = "user correction"
situation = "When running the test suite"
created_at = "2026-03-01T12:00:00Z"
updated_at = "2026-03-01T12:00:00Z"

[content]
behavior = "using go test directly"
impact = "coverage thresholds are skipped"
action = "run targ test"
"""

MEM0_JSON = """\
{
  "results": [
    {
      "id": "892db2ae-06d9-49e5-8b3e-585ef9b85b8e",
      "memory": "Prefers pytest over unittest for new test files",
      "hash": "2ab1c7d9f1e4f5c2a3b4",
      "metadata": {"source": "chat", "priority": 2},
      "categories": ["preferences", "testing"],
      "created_at": "2024-07-26T10:29:36.630547-07:00",
      "updated_at": "2024-07-27T08:01:02.000000-07:00",
      "user_id": "alice"
    },
    {
      "id": "0b8c8e5e-1f0e-4c1e-9a8d-5d2b8f6f1c11",
      "memory": "Works on the billing service (Django 5)",
      "hash": "99ff00",
      "metadata": null,
      "created_at": "2024-07-28T11:00:00-07:00",
      "updated_at": null,
      "agent_id": "claude-code"
    }
  ]
}
"""


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing ``needle``."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def test_it_reads_nested_plur_blocks_into_record_fields() -> None:
    first, second, abstract = parse_plur_yaml(PLUR_YAML)

    assert first["engram_id"] == "ENG-2026-0129-001"
    assert first["scope"] == "project:billing"
    assert first["polarity"] == "do"
    assert first["tags"] == ["migrations", "django"]
    assert first["contraindications"] == ["Throwaway prototype branches"]
    assert first["entities"] == [{"name": "Django", "type": "technology"}]
    assert first["learned_at"] == "2026-01-29T17:04:00Z"
    assert first["emotional_weight"] == 8
    assert first["confidence"] == 7
    assert first["trigger_context"] == "prod deploy failed after a migration"
    assert first["journal_ref"] == "journal/2026-01-29.md"
    assert first["retrieval_strength"] == 0.85
    assert first["storage_strength"] == 0.6
    assert first["frequency"] == 5
    assert first["injections"] == 12
    assert first["hits"] == 9
    assert first["misses"] == 3
    assert first["last_hit_at"] == "2026-01-30T09:00:00Z"
    assert first["feedback_signals"] == {"positive": 3, "negative": 0, "neutral": 2}
    assert first["provenance"]["origin"] == "gregor/personal"
    assert first["abstract"] == "ABS-2026-0125-003"
    assert first["derived_from"] == []
    assert first["derivation_count"] == 2

    assert second["status"] == "candidate"
    assert second["statement"].endswith("租户.")
    assert second["emotional_weight"] == 5
    assert second["learned_at"] is None

    assert abstract["structure"] == "check -> irreversible change"
    assert abstract["derived_from"] == ["ENG-2026-0129-001", "ENG-2026-0115-003"]
    assert abstract["exchange_metadata"]["fitness_score"] == 0.82


def test_it_keeps_unquoted_yaml_dates_as_strings() -> None:
    first = parse_plur_yaml(PLUR_YAML)[0]

    assert first["last_accessed"] == "2026-01-30"
    assert isinstance(first["last_accessed"], str)


def test_it_preserves_unknown_fields_and_exports_them_again() -> None:
    records = parse_plur_yaml(PLUR_YAML)
    extra = records[0]["extra"]

    assert extra["commitment"] == "decided"
    assert extra["knowledge_anchors"] == [{"path": "docs/migrations.md", "relevance": "primary"}]
    assert extra["associations"][0]["target"] == "ENG-2026-0115-003"
    assert extra["temporal"] == {"ingested_at": "2026-01-29T17:05:12Z"}

    exported = dump_plur_yaml(records)
    entry = yaml.safe_load(exported)["engrams"][0]
    assert entry["commitment"] == "decided"
    assert entry["knowledge_anchors"][0]["relevance"] == "primary"
    assert entry["temporal"] == {
        "learned_at": "2026-01-29T17:04:00Z",
        "ingested_at": "2026-01-29T17:05:12Z",
    }
    assert parse_plur_yaml(exported) == records


def test_it_exports_plur_form_with_string_abstract_and_nested_episodic() -> None:
    records = parse_datacore_yaml(DATACORE_YAML)

    entry = yaml.safe_load(dump_plur_yaml(records))["engrams"][0]

    assert entry["abstract"] == "ABS-2026-0131-001"
    assert entry["episodic"] == {
        "emotional_weight": 6,
        "confidence": 9,
        "trigger_context": "inbox backlog of 200 items",
        "journal_ref": "[[2026-01-31]]",
    }
    assert "emotional_weight" not in entry
    assert entry["exchange"] == {"fitness_score": 0.5, "environmental_diversity": 1}
    assert parse_plur_yaml(dump_plur_yaml(records)) == records


def test_it_accepts_a_bare_list_of_plur_engrams() -> None:
    text = "- id: ENG-2026-0101-001\n  statement: Prefer small commits\n"

    (record,) = parse_plur_yaml(text)

    assert record["statement"] == "Prefer small commits"
    assert record["status"] == "active"
    assert record["extra"] == {}


def test_it_reads_an_empty_store_as_no_records() -> None:
    assert parse_plur_yaml("") == []
    assert parse_plur_yaml("engrams: []\n") == []


def test_it_reads_the_datacore_dialect() -> None:
    (record,) = parse_datacore_yaml(DATACORE_YAML)

    assert record["emotional_weight"] == 6
    assert record["confidence"] == 9
    assert record["trigger_context"] == "inbox backlog of 200 items"
    assert record["journal_ref"] == "[[2026-01-31]]"
    assert record["consolidated"] is True
    assert record["abstract"] == "ABS-2026-0131-001"
    assert record["abstract_detail"]["applies_when"].startswith("Processing N")
    assert record["abstract_detail"]["instances"] == ["ENG-2026-0131-001", "ENG-2026-0205-003"]
    assert record["exchange_metadata"] == {"fitness_score": 0.5, "environmental_diversity": 1}
    assert record["extra"] == {"source_patterns": ["PAT-2026-0125-003", "PAT-2026-0129-001"]}


def test_it_detects_the_dialect_per_entry() -> None:
    plur_entry = PLUR_YAML.split("engrams:\n", 1)[1]
    datacore_entry = "".join(f"  {line}\n" for line in DATACORE_YAML.splitlines())
    mixed = "engrams:\n" + plur_entry + datacore_entry

    records = parse_engram_yaml(mixed)

    assert [r["engram_id"] for r in records] == [
        "ENG-2026-0129-001",
        "ENG-2026-0201-002",
        "ABS-2026-0125-003",
        "ENG-2026-0131-001",
    ]
    assert records[0] == parse_plur_yaml(PLUR_YAML)[0]
    assert records[3] == parse_datacore_yaml(DATACORE_YAML)[0]


def test_plur_import_rejects_an_object_abstract_at_its_line() -> None:
    with pytest.raises(ImportFormatError) as caught:
        parse_plur_yaml(DATACORE_YAML)

    assert caught.value.field == "abstract"
    assert caught.value.line == line_of(DATACORE_YAML, "abstract:")
    assert caught.value.index == 0


def test_it_reads_a_toejough_memory_file() -> None:
    (record,) = parse_toejough_toml(TOEJOUGH_TOML)

    assert record["statement"] == "Use project-specific build tools"
    assert record["polarity"] == "do"
    assert record["rationale"] == (
        "targ wraps go test with proper flags and coverage requirements\n\n"
        "Anti-pattern: Running go test directly"
    )
    assert record["tags"] == ["targ", "test", "go-test", "testing", "build tooling"]
    assert record["confidence"] == 6
    assert record["scope"] == "project:engram"
    assert record["learned_at"] == "2026-02-03T10:00:00Z"
    assert record["last_accessed"] == "2026-02-05T08:30:00Z"
    assert (
        record["surfaced"],
        record["followed"],
        record["contradicted"],
        record["ignored"],
        record["irrelevant"],
    ) == (14, 9, 1, 2, 2)
    assert record["enforcement"] == "reminder"
    assert record["source"] == "toejough"
    assert record["extra"]["toejough_title"] == "Use targ not go test"
    assert record["extra"]["toejough_content"].startswith("Ran go test directly")
    assert record["extra"]["toejough_observation_type"] == "correction"
    assert record["extra"]["toejough_updated_at"] == "2026-02-05T08:30:00Z"
    assert record["extra"]["toejough_links"][0]["basis"] == "co-surfacing"


def test_it_reads_several_toejough_memories_from_one_file() -> None:
    first, second = parse_toejough_toml(TOEJOUGH_MANY)

    assert first["statement"] == "Search with rg instead of grep -r"
    assert first["confidence"] == 9
    assert second["statement"] == "TOML dates load as datetimes"
    assert second["polarity"] is None
    assert second["confidence"] == 3
    assert second["learned_at"] == "2026-02-03T10:00:00+00:00"


def test_it_reads_a_toejough_sbia_memory() -> None:
    (record,) = parse_toejough_toml(TOEJOUGH_SBIA)

    assert record["statement"] == "run targ test"
    assert record["polarity"] == "do"
    assert record["trigger_context"] == "When running the test suite"
    assert record["rationale"] == (
        "coverage thresholds are skipped\n\nAnti-pattern: using go test directly"
    )
    assert record["source"] == "user correction"
    assert record["extra"] == {
        "toejough_schema_version": 1,
        "toejough_type": "feedback",
        "toejough_updated_at": "2026-03-01T12:00:00Z",
    }


def test_a_toejough_anti_pattern_alone_becomes_a_dont() -> None:
    (record,) = parse_toejough_toml('anti_pattern = "Force-pushing to main"\n')

    assert record["statement"] == "Force-pushing to main"
    assert record["polarity"] == "dont"
    assert record["rationale"] == ""


def test_it_reads_a_mem0_export() -> None:
    first, second = parse_mem0_json(MEM0_JSON)

    assert first["statement"] == "Prefers pytest over unittest for new test files"
    assert first["tags"] == ["preferences", "testing"]
    assert first["learned_at"] == "2024-07-26T10:29:36.630547-07:00"
    assert first["last_accessed"] == "2024-07-27T08:01:02.000000-07:00"
    assert first["source"] == "mem0:892db2ae-06d9-49e5-8b3e-585ef9b85b8e"
    assert first["scope"] == "global"
    assert first["extra"] == {
        "mem0_id": "892db2ae-06d9-49e5-8b3e-585ef9b85b8e",
        "mem0_hash": "2ab1c7d9f1e4f5c2a3b4",
        "mem0_metadata": {"source": "chat", "priority": 2},
        "mem0_user_id": "alice",
    }
    assert second["scope"] == "agent:claude-code"
    assert second["last_accessed"] is None
    assert second["tags"] == []


@pytest.mark.parametrize(
    "text",
    [
        '[{"id": "m1", "memory": "Uses uv"}]',
        '{"memories": [{"id": "m1", "memory": "Uses uv"}]}',
    ],
)
def test_it_reads_other_mem0_envelopes(text: str) -> None:
    (record,) = parse_mem0_json(text)

    assert record["statement"] == "Uses uv"
    assert record["extra"] == {"mem0_id": "m1"}


def test_mem0_records_export_to_plur_and_back() -> None:
    records = parse_mem0_json(MEM0_JSON) + parse_toejough_toml(TOEJOUGH_TOML)

    assert parse_plur_yaml(dump_plur_yaml(records)) == records


def test_it_rejects_badly_indented_yaml_at_the_parser_line() -> None:
    text = (
        "engrams:\n"
        "  - id: ENG-2026-0101-001\n"
        "    statement: Keep functions small\n"
        "   tags: [style]\n"
    )

    with pytest.raises(ImportFormatError) as caught:
        parse_plur_yaml(text)

    assert caught.value.line == 4
    assert "invalid YAML" in caught.value.message


def test_it_rejects_an_entry_without_statement_at_its_line() -> None:
    text = (
        "engrams:\n"
        "  - id: ENG-2026-0101-001\n"
        "    statement: Keep functions small\n"
        "  - id: ENG-2026-0101-002\n"
        "    tags: [style]\n"
    )

    with pytest.raises(ImportFormatError) as caught:
        parse_plur_yaml(text)

    assert caught.value.field == "statement"
    assert caught.value.line == 4
    assert caught.value.index == 1
    assert str(caught.value).startswith("entry 1, line 4, field statement:")


def test_it_rejects_an_emotional_weight_out_of_range() -> None:
    text = PLUR_YAML.replace("emotional_weight: 8", "emotional_weight: 42")

    with pytest.raises(ImportFormatError) as caught:
        parse_plur_yaml(text)

    assert caught.value.field == "emotional_weight"
    assert caught.value.line == line_of(text, "emotional_weight: 42")
    assert "42" in caught.value.message


@pytest.mark.parametrize(
    ("original", "replacement", "field"),
    [
        ("type: behavioral", "type: behavioural", "type"),
        ("status: active", "status: archived", "status"),
        ("polarity: do", "polarity: maybe", "polarity"),
        ("visibility: private", "visibility: shared", "visibility"),
    ],
)
def test_it_rejects_unknown_enum_values(original: str, replacement: str, field: str) -> None:
    text = PLUR_YAML.replace(original, replacement, 1)

    with pytest.raises(ImportFormatError) as caught:
        parse_plur_yaml(text)

    assert caught.value.field == field
    assert caught.value.line == line_of(text, replacement)


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ("    tags: migrations\n", "tags"),
        ("    tags: [1, 2]\n", "tags"),
        ("    activation: {retrieval_strength: 1.5}\n", "retrieval_strength"),
        ("    activation: {frequency: -1}\n", "frequency"),
        ("    temporal: {learned_at: last tuesday}\n", "learned_at"),
        ("    episodic: 7\n", "episodic"),
        ("    consolidated: 'no'\n", "consolidated"),
        ("    derived_from: [{id: ENG-1}]\n", "derived_from"),
    ],
)
def test_it_rejects_wrong_types(entry: str, field: str) -> None:
    text = "engrams:\n  - id: ENG-2026-0101-001\n    statement: Keep it small\n" + entry

    with pytest.raises(ImportFormatError) as caught:
        parse_plur_yaml(text)

    assert caught.value.field == field
    assert caught.value.line == 4


@pytest.mark.parametrize(
    "text", ["just a sentence\n", "engrams: {id: ENG-1}\n", "memories: []\n", "- plain\n"]
)
def test_it_rejects_a_wrong_top_level_shape(text: str) -> None:
    with pytest.raises(ImportFormatError):
        parse_plur_yaml(text)


def test_import_is_all_or_nothing() -> None:
    text = PLUR_YAML + "  - id: ENG-2026-0301-009\n    statement: ''\n"

    with pytest.raises(ImportFormatError) as caught:
        parse_plur_yaml(text)

    assert caught.value.index == 3


def test_it_rejects_bad_toml_at_the_decoder_line() -> None:
    text = 'title = "ok"\nprinciple = "unterminated\nconfidence = "B"\n'

    with pytest.raises(ImportFormatError) as caught:
        parse_toejough_toml(text)

    assert caught.value.line == 2


def test_it_rejects_an_unknown_toejough_confidence_grade() -> None:
    text = TOEJOUGH_MANY.replace('confidence = "C"', 'confidence = "D"')

    with pytest.raises(ImportFormatError) as caught:
        parse_toejough_toml(text)

    assert caught.value.field == "confidence"
    assert caught.value.index == 1
    assert caught.value.line == line_of(text, 'confidence = "D"')


def test_it_rejects_a_toejough_memory_without_text() -> None:
    with pytest.raises(ImportFormatError) as caught:
        parse_toejough_toml('confidence = "A"\nsurfaced_count = 3\n')

    assert caught.value.field == "statement"


def test_it_rejects_bad_json_at_its_line() -> None:
    with pytest.raises(ImportFormatError) as caught:
        parse_mem0_json('{\n  "results": [\n    {"memory": "x",}\n  ]\n}')

    assert caught.value.line == 3


@pytest.mark.parametrize("text", ['"a memory"', "42", '{"count": 2}', '{"results": "none"}'])
def test_it_rejects_json_that_is_not_a_list_of_memories(text: str) -> None:
    with pytest.raises(ImportFormatError):
        parse_mem0_json(text)


def test_it_points_mem0_errors_at_the_entry_index() -> None:
    text = '[{"memory": "ok"}, {"id": "m2", "hash": "abc"}]'

    with pytest.raises(ImportFormatError) as caught:
        parse_mem0_json(text)

    assert caught.value.index == 1
    assert caught.value.field == "statement"


def test_it_rejects_mem0_categories_that_are_not_strings() -> None:
    with pytest.raises(ImportFormatError) as caught:
        parse_mem0_json('[{"memory": "ok", "categories": [1]}]')

    assert caught.value.field == "tags"


def test_parse_dispatches_on_the_format_name() -> None:
    assert set(FORMATS) == {"plur-yaml", "datacore-yaml", "toejough-toml", "mem0-json"}
    assert parse(PLUR_YAML, "plur-yaml") == parse_plur_yaml(PLUR_YAML)
    assert parse(MEM0_JSON, "mem0-json") == parse_mem0_json(MEM0_JSON)
    with pytest.raises(ImportFormatError):
        parse(PLUR_YAML, "markdown")


@pytest.mark.parametrize(
    ("filename", "text", "expected"),
    [
        ("engrams.yaml", PLUR_YAML, "plur-yaml"),
        ("engrams.yml", DATACORE_YAML, "datacore-yaml"),
        ("use-targ.toml", TOEJOUGH_TOML, "toejough-toml"),
        ("export.json", MEM0_JSON, "mem0-json"),
        (None, PLUR_YAML, "plur-yaml"),
        (None, DATACORE_YAML, "datacore-yaml"),
        (None, TOEJOUGH_MANY, "toejough-toml"),
        ("upload", MEM0_JSON, "mem0-json"),
        (None, "just some notes\n", None),
        (None, "", None),
    ],
)
def test_it_detects_the_format(filename: str | None, text: str, expected: str | None) -> None:
    assert detect_format(filename, text) == expected


def test_new_record_copies_defaults_and_rejects_unknown_fields() -> None:
    first = new_record(statement="a")
    first["tags"].append("x")

    assert new_record()["tags"] == []
    with pytest.raises(TypeError):
        new_record(title="nope")


def test_the_module_does_not_import_django() -> None:
    tree = ast.parse(Path(interop.__file__).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }

    assert "django" not in imported


# --- lossless PLUR round trip ---------------------------------------------------------------

engram_ids = st.builds(
    "{}-{}-{:04d}-{:03d}".format,
    st.sampled_from(["ENG", "ABS", "META"]),
    st.integers(2000, 2099),
    st.integers(101, 1231),
    st.integers(1, 999),
)
texts = st.text(max_size=30)
iso_moments = st.one_of(
    st.none(),
    st.dates().map(lambda d: d.isoformat()),
    st.datetimes(
        timezones=st.sampled_from([UTC, timezone(timedelta(hours=-7)), timezone(timedelta(0))])
    ).map(lambda d: d.isoformat()),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**15), 10**15),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=15),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.text(max_size=8), children, max_size=3),
    ),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=10), json_values, max_size=3)
scale = st.one_of(st.none(), st.integers(1, 10), st.floats(1, 10))
counts = st.integers(0, 10**6)
records = st.builds(
    new_record,
    engram_id=engram_ids,
    version=st.integers(1, 5),
    status=st.sampled_from(interop.STATUSES),
    consolidated=st.booleans(),
    type=st.sampled_from(interop.TYPES),
    scope=st.one_of(st.just("global"), texts.filter(str.strip).map("project:{}".format)),
    visibility=st.sampled_from(interop.VISIBILITIES),
    polarity=st.sampled_from([None, "do", "dont"]),
    statement=st.text(min_size=1, max_size=80).filter(str.strip),
    rationale=texts,
    contraindications=st.lists(texts, max_size=3),
    tags=st.lists(texts, max_size=4),
    domain=texts,
    entities=st.lists(
        st.one_of(
            texts,
            st.fixed_dictionaries(
                {"name": texts, "type": st.sampled_from(["tool", "person", "concept"])}
            ),
        ),
        max_size=2,
    ),
    learned_at=iso_moments,
    valid_from=iso_moments,
    valid_until=iso_moments,
    emotional_weight=scale,
    confidence=scale,
    trigger_context=texts,
    journal_ref=texts,
    retrieval_strength=st.floats(0, 1),
    storage_strength=st.floats(0, 10),
    frequency=counts,
    last_accessed=iso_moments,
    injections=counts,
    hits=counts,
    misses=counts,
    last_hit_at=iso_moments,
    feedback_signals=st.fixed_dictionaries(
        {"positive": counts, "negative": counts, "neutral": counts}
    ),
    surfaced=counts,
    followed=counts,
    contradicted=counts,
    ignored=counts,
    irrelevant=counts,
    enforcement=st.sampled_from(["", "advisory", "reminder", "hook"]),
    source=texts,
    derivation_count=counts,
    abstract=st.one_of(st.none(), engram_ids),
    abstract_detail=json_objects,
    derived_from=st.lists(engram_ids, max_size=3),
    provenance=json_objects,
    exchange_metadata=json_objects,
    structure=texts,
    applies_when=texts,
    extra=st.dictionaries(
        st.text(min_size=1, max_size=12).filter(lambda key: key not in PLUR_RESERVED_KEYS),
        json_values,
        max_size=4,
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records, max_size=3))
def test_plur_export_round_trips_losslessly(generated: list[dict]) -> None:
    before = copy.deepcopy(generated)

    assert parse_plur_yaml(dump_plur_yaml(generated)) == generated
    assert generated == before


def test_export_refuses_extra_fields_that_shadow_plur_keys() -> None:
    with pytest.raises(ValueError, match="statement"):
        dump_plur_yaml([new_record(statement="a", extra={"statement": "b"})])


def test_yaml_aliases_are_refused_before_they_expand() -> None:
    bomb = (
        'a: &a ["x","x"]\nb: &b [*a,*a]\nc: &c [*b,*b]\nengrams:\n  - statement: hi\n    tags: *c\n'
    )
    with pytest.raises(ImportFormatError, match="aliases") as info:
        parse_plur_yaml(bomb)
    assert info.value.line == 2


def test_a_control_character_is_a_format_error_not_a_crash() -> None:
    with pytest.raises(ImportFormatError, match="invalid YAML"):
        parse_plur_yaml("engrams:\n  - statement: bad \x07 bell\n")
