"""Migrations are history: they build today's schema from nothing and import no live code."""

from __future__ import annotations

import ast
import io
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.sqlite
@pytest.mark.django_db
def test_the_models_match_the_migrations() -> None:
    """The test database was built from the migrations; nothing in the models is missing."""
    out = io.StringIO()
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


@pytest.mark.sqlite
@pytest.mark.django_db
def test_a_fresh_database_has_the_search_objects_the_migrations_create() -> None:
    with connection.cursor() as cursor:
        tables = connection.introspection.table_names(cursor)
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT 1 FROM information_schema.columns "
                "WHERE table_name = 'memory_engram' AND column_name = 'search_tsv'"
            )
            assert cursor.fetchone() is not None
        else:
            assert "memory_engram_fts" in tables


def test_migrations_import_no_live_code() -> None:
    """A migration may import the standard library, Django and its own app's field classes and
    migration operations, never services, search or maths: editing those must not rewrite
    history."""
    allowed_prefixes = ("django", "memory.fields", "memory.migrations", "exchange.fields")
    offenders = []
    for path in sorted(ROOT.glob("*/migrations/[0-9]*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [
                f"{path.relative_to(ROOT)}: {name}"
                for name in names
                if not name.startswith(allowed_prefixes)
                and name.split(".")[0] not in sys.stdlib_module_names
            ]
    assert offenders == []
