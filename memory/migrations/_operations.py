"""Migration operations that only run on PostgreSQL (pgvector, HNSW, full-text indexes)."""

from __future__ import annotations

from typing import Any

from django.db import migrations
from pgvector.django import VectorExtension


class PostgresVectorExtension(VectorExtension):
    """CREATE EXTENSION vector on PostgreSQL; nothing on SQLite (it uses a numpy index)."""

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)


class VendorSQL(migrations.RunSQL):
    """RunSQL that runs only on one database vendor."""

    def __init__(self, vendor: str, sql: Any, reverse_sql: Any = None, **kwargs: Any) -> None:
        self.vendor = vendor
        super().__init__(sql, reverse_sql, **kwargs)

    def deconstruct(self) -> Any:
        name, args, kwargs = super().deconstruct()
        return name, [self.vendor, *args], kwargs

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor == self.vendor:
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor == self.vendor:
            super().database_backwards(app_label, schema_editor, from_state, to_state)
