"""Import and export through the store: all or nothing, lossless PLUR round trip."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory import interop
from memory.errors import DomainError
from memory.models import Engram, LifecycleEvent
from memory.services.interop import engrams_export, engrams_import
from tests.memory.test_interop import MEM0_JSON, PLUR_YAML, TOEJOUGH_TOML

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


def test_plur_import_then_export_is_lossless(owner: Any) -> None:
    report = engrams_import(owner=owner, text=PLUR_YAML, fmt="plur-yaml")
    assert (report.created, report.total) == (3, 3)
    engram = Engram.objects.get(engram_id="ENG-2026-0129-001")
    assert engram.scope == "project:billing"
    assert engram.emotional_weight == 8
    assert engram.embedding is not None
    exported = engrams_export(owner=owner)
    assert interop.parse_plur_yaml(exported) == interop.parse_plur_yaml(PLUR_YAML)


def test_a_malformed_file_is_rejected_with_its_line_and_nothing_is_written(owner: Any) -> None:
    broken = PLUR_YAML.replace("    episodic:\n", "    episodic:\n   bad: [\n", 1)
    with pytest.raises(DomainError) as info:
        engrams_import(owner=owner, text=broken, fmt="plur-yaml")
    assert info.value.code == "import_rejected"
    assert isinstance(info.value.details, dict)
    assert info.value.details["line"] is not None
    assert not Engram.objects.exists()
    assert not LifecycleEvent.objects.exists()


def test_a_secret_in_one_entry_rejects_the_whole_file(owner: Any) -> None:
    leaky = PLUR_YAML.replace(
        "Gate irreversible changes behind an automated check.",
        "Gate changes; token ghp_" + "x1Y2z3W4v5U6t7S8r9Q0p1O2n3M4l5K6j7I8",
    )
    with pytest.raises(DomainError) as info:
        engrams_import(owner=owner, text=leaky, fmt="plur-yaml")
    assert info.value.details == {"line": None, "field": "statement", "index": 2}
    assert not Engram.objects.exists()


def test_dry_run_counts_and_writes_nothing(owner: Any) -> None:
    report = engrams_import(owner=owner, text=PLUR_YAML, fmt="plur-yaml", dry_run=True)
    assert (report.created, report.dry_run) == (3, True)
    assert not Engram.objects.exists()


def test_importing_twice_skips_what_is_already_there(owner: Any) -> None:
    engrams_import(owner=owner, text=PLUR_YAML, fmt="plur-yaml")
    again = engrams_import(owner=owner, text=PLUR_YAML, fmt="plur-yaml")
    assert (again.created, again.skipped_existing) == (0, 3)
    assert Engram.objects.count() == 3


def test_toejough_and_mem0_files_import(owner: Any) -> None:
    assert engrams_import(owner=owner, text=TOEJOUGH_TOML, fmt="toejough-toml").created == 1
    assert engrams_import(owner=owner, text=MEM0_JSON, fmt="mem0-json").created == 2
    statements = set(Engram.objects.values_list("statement", flat=True))
    assert "Prefers pytest over unittest for new test files" in statements


def test_the_commands_import_export_and_write_history(owner: Any, tmp_path: Path) -> None:
    source = tmp_path / "engrams.yaml"
    source.write_text(PLUR_YAML)
    out = StringIO()
    call_command("engram_import", str(source), "--user", "alice", "--dry-run", stdout=out)
    assert "Would import 3 of 3" in out.getvalue()
    assert not Engram.objects.exists()
    call_command("engram_import", str(source), "--user", "alice", stdout=StringIO())
    assert Engram.objects.count() == 3

    target = tmp_path / "out" / "engrams.yaml"
    call_command("engram_export", "--user", "alice", "--out", str(target), stderr=StringIO())
    assert len(interop.parse_plur_yaml(target.read_text())) == 3

    month = LifecycleEvent.objects.first().created_at.strftime("%Y-%m")  # type: ignore[union-attr]
    call_command(
        "engram_history",
        "--month",
        month,
        "--user",
        "alice",
        "--dir",
        str(tmp_path),
        stdout=StringIO(),
    )
    lines = (tmp_path / f"{month}.jsonl").read_text().splitlines()
    assert len(lines) == 3
    assert json.loads(lines[0])["event"] == "engram_created"


def test_the_import_command_reports_a_bad_file_clearly(owner: Any, tmp_path: Path) -> None:
    source = tmp_path / "broken.yaml"
    source.write_text("engrams:\n  - statement: [unclosed\n")
    with pytest.raises(CommandError, match="line"):
        call_command("engram_import", str(source), "--user", "alice")
    with pytest.raises(CommandError, match="--month"):
        call_command("engram_history", "--month", "2026-13")


def test_an_over_long_field_rejects_the_file_with_its_name(owner: Any) -> None:
    text = PLUR_YAML.replace("id: ENG-2026-0201-002", "id: ENG-" + "9" * 60, 1)
    with pytest.raises(DomainError) as info:
        engrams_import(owner=owner, text=text, fmt="plur-yaml")
    assert info.value.details == {"line": None, "field": "engram_id", "index": 1}
    assert not Engram.objects.exists()


def test_a_statement_a_live_engram_holds_is_skipped_as_a_duplicate(owner: Any) -> None:
    from memory.services.engrams import engram_learn

    statement = "Run the migration linter before committing schema changes."
    learned = engram_learn(owner=owner, statement=statement, scope="project:billing").engram
    report = engrams_import(owner=owner, text=PLUR_YAML, fmt="plur-yaml")
    assert (report.total, report.created, report.duplicates) == (3, 2, 1)
    live = Engram.objects.exclude(status="retired").filter(content_hash=learned.content_hash)
    assert list(live) == [learned]


def test_a_retired_and_a_live_copy_of_one_statement_both_import(owner: Any) -> None:
    # An export with include_retired holds a retired rule and its live re-learned twin.
    records = interop.parse_plur_yaml(PLUR_YAML)[:1]
    retired = {**records[0], "status": "retired"}
    live = {**records[0], "engram_id": "ENG-2026-0130-001"}
    text = interop.dump_plur_yaml([retired, live])
    report = engrams_import(owner=owner, text=text, fmt="plur-yaml")
    assert (report.created, report.duplicates) == (2, 0)
    assert sorted(Engram.objects.values_list("status", flat=True)) == ["active", "retired"]
    again = engrams_import(owner=owner, text=text, fmt="plur-yaml")
    assert (again.created, again.skipped_existing) == (0, 2)
