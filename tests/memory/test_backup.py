"""engram_backup / engram_restore: a round trip PostgreSQL -> SQLite -> PostgreSQL keeps every row
of every owner-owned model; restore is all or nothing and never writes over an owner's data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client

from exchange.models import Identity
from exchange.services.identity import identity_get
from memory.models import AgentSession, Engram, Outcome, ReviewItem
from memory.services.backup import _open_read, backup_restore, backup_write, owned_models
from memory.services.sessions import outcomes_attribute

ROOT = Path(__file__).resolve().parents[2]
HOOK = "/api/v1/hooks/claude-code"
LESSONS = [
    "Always run the database migrations check before pushing a release branch.",
    "Never log API tokens, even at debug level.",
    "Use pathlib instead of os.path for file paths in this repository.",
]


def populate(api: Client, owner: Any) -> None:
    ids = []
    for statement in LESSONS:
        response = api.post(
            "/api/v1/engrams",
            {"statement": statement, "scope": "project:app", "source": "user"},
            content_type="application/json",
        )
        assert response.status_code == HTTPStatus.CREATED
        ids.append(response.json()["engram"]["id"])
    first, second = (Engram.objects.get(owner=owner, engram_id=i) for i in ids[:2])
    Engram.objects.filter(pk=first.pk).update(superseded_by=second)  # a self reference
    for event, fields in [
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {"prompt": "check the database migrations before the release"}),
        ("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "make migrations-check"}}),
        ("UserPromptSubmit", {"prompt": "Always use UTC timestamps in the database."}),
        ("Stop", {}),
    ]:
        body = {"hook_event_name": event, "session_id": "S-backup", "cwd": "/w/app", **fields}
        assert api.post(HOOK, body, content_type="application/json").status_code == 200
    session = AgentSession.objects.get(owner=owner, session_id="S-backup")
    outcomes_attribute(session_pk=session.pk)
    ReviewItem.objects.create(
        owner=owner, kind="merge", engram=first, other=second, payload={"why": "ü ✓"}
    )
    identity_get(owner=owner)
    assert Outcome.objects.filter(owner=owner).exists()


def canonical(path: Path, rename: dict[str, str] | None = None) -> dict[str, list[Any]]:
    """The rows of a backup file with keys replaced by each row's place in its model, so two
    files of the same data in databases with different keys compare equal."""
    rename = rename or {}
    rows: dict[str, list[dict[str, Any]]] = {}
    users = []
    with _open_read(path) as stream:
        next(stream)
        for line in stream:
            item = json.loads(line)
            if "user" in item:
                user = dict(item["user"])
                user["username"] = rename.get(user["username"], user["username"])
                users.append(user)
            else:
                rows.setdefault(item["model"], []).append(item["fields"])
    ordinal = {
        label: {row["id"]: n for n, row in enumerate(items)} for label, items in rows.items()
    }
    by_label = {m._meta.label_lower: m for m in owned_models()}
    out: dict[str, list[Any]] = {"users": users}
    for label, items in rows.items():
        model = by_label[label]
        fks = {
            f.attname: f.related_model._meta.label_lower  # type: ignore[union-attr]
            for f in model._meta.concrete_fields
            if f.is_relation and f.related_model is not get_user_model()
        }
        normal = []
        for row in items:
            row = dict(row)
            row.pop("id")
            for attname, target in fks.items():
                if row.get(attname) is not None and target in ordinal:
                    row[attname] = ("ref", target, ordinal[target][row[attname]])
            for key, value in row.items():
                if isinstance(value, str) and value in rename:
                    row[key] = rename[value]
            normal.append(row)
        out[label] = normal
    return out


def run_sqlite(tmp_path: Path, *commands: list[str]) -> None:
    """Run management commands in a fresh process on a new SQLite store (the embedded default)."""
    env = {k: v for k, v in os.environ.items() if k not in {"REDIS_URL", "CELERY_BROKER_URL"}}
    env.update(
        {
            "DATABASE_URL": f"sqlite:///{tmp_path / 'engram.sqlite3'}",
            "ENGRAM_DATA_DIR": str(tmp_path),
            "DJANGO_SETTINGS_MODULE": "engramsite.settings",
        }
    )
    script = (
        "import django, sys, json; django.setup()\n"
        "from django.core.management import call_command\n"
        "for cmd in json.loads(sys.argv[1]): call_command(*cmd)\n"
    )
    subprocess.run(
        [sys.executable, "-c", script, json.dumps([["migrate", "--verbosity", "0"], *commands])],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=240,
        capture_output=True,
    )


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_round_trip_postgres_sqlite_postgres_keeps_every_row(
    api: Client, owner: Any, other_owner: Any, tmp_path: Path
) -> None:
    populate(api, owner)
    original = tmp_path / "a.jsonl.gz"
    summary = backup_write(path=original, usernames=["alice"])
    assert summary.owners == ["alice"]
    labels = {m._meta.label_lower for m in owned_models()}
    assert {"memory.engram", "memory.outcome", "memory.reviewitem", "exchange.identity"} <= labels
    for label in ("memory.engram", "memory.agentsession", "memory.injection", "memory.outcome",
                  "memory.observation", "memory.reviewitem", "memory.lifecycleevent",
                  "memory.apitoken", "memory.learningsignal", "exchange.identity"):  # fmt: skip
        assert summary.counts[label] > 0, label

    through_sqlite = tmp_path / "b.jsonl"
    sqlite_dir = tmp_path / "sqlite"
    sqlite_dir.mkdir()
    run_sqlite(
        sqlite_dir,
        ["engram_restore", str(original), "--no-progress"],
        ["engram_backup", "--out", str(through_sqlite), "--no-progress"],
    )

    # Back into PostgreSQL over the original owner: refused, nothing written ...
    before = {m._meta.label_lower: m._base_manager.count() for m in owned_models()}
    with pytest.raises(CommandError, match="already has data"):
        call_command("engram_restore", str(through_sqlite), "--no-progress")
    assert before == {m._meta.label_lower: m._base_manager.count() for m in owned_models()}

    # ... under another name: every row, tokens left behind.
    call_command("engram_restore", str(through_sqlite), "--as", "carol", "--no-progress")
    carol = get_user_model().objects.get(username="carol")
    assert not carol.apitoken_set.exists()
    assert Identity.objects.get(owner=carol).key_id == Identity.objects.get(owner=owner).key_id

    # ... and after the owner is gone, as itself: identical to the first backup.
    owner.delete()
    call_command("engram_restore", str(through_sqlite), "--no-progress")
    final = tmp_path / "c.jsonl"
    backup_write(path=final, usernames=["alice"])
    assert canonical(final) == canonical(original)
    assert AgentSession.objects.get(owner__username="alice").attributed_at is not None


@pytest.mark.django_db
def test_a_broken_row_restores_nothing(api: Client, owner: Any, tmp_path: Path) -> None:
    populate(api, owner)
    path = tmp_path / "a.jsonl"
    backup_write(path=path, usernames=["alice"])
    lines = path.read_text().splitlines()
    broken = [json.loads(line) for line in lines]
    for item in broken:
        if item.get("model") == "memory.outcome":
            item["fields"]["created_at"] = "not a date"
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("\n".join(json.dumps(item) for item in broken) + "\n")
    users = get_user_model().objects.count()
    engrams = Engram.objects.count()
    with pytest.raises(CommandError, match=r"is not valid.*Nothing was restored"):
        call_command("engram_restore", str(damaged), "--as", "dave", "--no-progress")
    assert get_user_model().objects.count() == users
    assert Engram.objects.count() == engrams


@pytest.mark.django_db
def test_files_that_are_not_backups_are_refused(tmp_path: Path) -> None:
    for name, content in [
        ("empty.jsonl", ""),
        ("yaml.jsonl", "engrams:\n  - statement: x\n"),
        ("other.jsonl", json.dumps({"format": "engram-backup", "version": 99}) + "\n"),
        (
            "newer.jsonl",
            json.dumps({"format": "engram-backup", "version": 1, "models": [{"model": "x.thing"}]})
            + "\n",
        ),
    ]:
        path = tmp_path / name
        path.write_text(content)
        with pytest.raises(CommandError, match="Nothing was restored"):
            call_command("engram_restore", str(path), "--no-progress")
    with pytest.raises(CommandError, match="No backup file"):
        call_command("engram_restore", str(tmp_path / "missing.jsonl"), "--no-progress")


@pytest.mark.django_db
def test_backup_of_an_unknown_owner_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no such owner"):
        call_command("engram_backup", "--out", str(tmp_path / "x.jsonl"), "--user", "nobody")
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.django_db
def test_a_restore_into_a_bootstrapped_empty_owner_fills_it(
    api: Client, owner: Any, tmp_path: Path
) -> None:
    populate(api, owner)
    path = tmp_path / "a.jsonl"
    backup_write(path=path, usernames=["alice"])
    get_user_model().objects.create_user(username="erin")
    summary = backup_restore(path=path, as_owner="erin")
    assert summary.counts["memory.engram"] == Engram.objects.filter(owner=owner).count()
    assert Engram.objects.filter(owner__username="erin", superseded_by__isnull=False).count() == 1
