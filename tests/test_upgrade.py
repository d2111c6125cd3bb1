"""Upgrades keep every row: a store populated at the previous release's schema, migrated forward
to today's, still has every row of every table it had, with the values it had.

Every model of the earlier schema gets rows (built from the historical models, so a new app or
model is covered without a change here), then the migrations run forward."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import connection, models
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

# The schema of the release before this one (the last migration of each app it shipped).
PREVIOUS_RELEASE = [("memory", "0005_reviewitem_prompt_kind"), ("exchange", "0001_initial")]
APPS = ("memory", "exchange")
ROWS_PER_MODEL = 3


def _value(field: models.Field[Any, Any], n: int) -> Any:
    if field.choices:
        return field.choices[n % len(field.choices)][0]
    if isinstance(field, models.BooleanField):
        return n % 2 == 0
    if isinstance(field, models.IntegerField):
        return n + 1
    if isinstance(field, models.FloatField):
        return 0.25 * (n + 1)
    if isinstance(field, models.DateTimeField):
        return timezone.now() - dt.timedelta(days=n)
    if isinstance(field, models.DateField):
        return dt.date(2025, 1, 1) + dt.timedelta(days=n)
    if isinstance(field, models.JSONField):
        return {"n": n, "text": "ü ✓"}
    if isinstance(field, models.BinaryField):
        return bytes([n]) * 8
    if field.get_internal_type() in {"CharField", "TextField", "SlugField", "EmailField"}:
        limit = getattr(field, "max_length", None) or 40
        return f"v{n}-{field.name}"[:limit]
    if type(field).__name__ == "EmbeddingField":
        import numpy as np

        vector = np.zeros(field.dimensions, dtype=np.float32)  # type: ignore[attr-defined]
        vector[n % field.dimensions] = 1.0  # type: ignore[attr-defined]
        return vector
    return None


def _populate(state_apps: Any) -> dict[str, set[int]]:
    """ROWS_PER_MODEL rows in every table of the historical apps, parents first."""
    user_model = state_apps.get_model("auth", "User")
    users = [
        user_model.objects.create(username=f"upgrade-{n}", password="x")
        for n in range(ROWS_PER_MODEL)
    ]
    todo = [m for label in APPS for m in state_apps.get_app_config(label).get_models()]
    created: dict[Any, list[Any]] = {user_model: users}
    while todo:
        progressed = False
        for model in list(todo):
            parents = [
                f.related_model
                for f in model._meta.concrete_fields
                if f.is_relation and f.related_model is not model and not f.null
            ]
            if any(p not in created for p in parents):
                continue
            rows = []
            for n in range(ROWS_PER_MODEL):
                values: dict[str, Any] = {}
                for f in model._meta.concrete_fields:
                    if f.primary_key or f.generated:
                        continue
                    if f.is_relation:
                        if f.related_model in created:
                            # one row per owner: unique (owner, …) constraints hold
                            values[f.name] = created[f.related_model][n]
                        continue
                    if n == 0 and (f.has_default() or f.null):
                        continue  # the first row keeps the schema's defaults
                    value = _value(f, n)
                    if value is not None:
                        values[f.name] = value
                rows.append(model.objects.create(**values))
            created[model] = rows
            todo.remove(model)
            progressed = True
        assert progressed, f"cannot order {todo}"
    return {
        model._meta.db_table: {row.pk for row in rows}
        for model, rows in created.items()
        if model is not user_model
    }


def _rows(table: str) -> set[int]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {connection.ops.quote_name(table)}")
        return {row[0] for row in cursor.fetchall()}


@pytest.mark.sqlite
@pytest.mark.django_db(transaction=True)
def test_migrating_a_populated_previous_release_keeps_every_row() -> None:
    executor = MigrationExecutor(connection)
    latest = [key for key in executor.loader.graph.leaf_nodes() if key[0] in APPS]
    try:
        executor.migrate(PREVIOUS_RELEASE)
        executor.loader.build_graph()
        state_apps = executor.loader.project_state(PREVIOUS_RELEASE).apps
        before = _populate(state_apps)
        assert len(before) >= 15 and all(len(ids) == ROWS_PER_MODEL for ids in before.values())
        executor = MigrationExecutor(connection)
        executor.migrate(latest)
    finally:
        MigrationExecutor(connection).migrate(latest)
    for table, ids in before.items():
        assert _rows(table) == ids, table
