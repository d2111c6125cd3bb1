from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_only]


def test_the_vector_extension_is_installed(db: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    assert row is not None
    major, minor = (int(x) for x in row[0].split(".")[:2])
    assert (major, minor) >= (0, 8)


def test_migrations_create_an_hnsw_index_on_engram_embeddings(db: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'memory_engram' "
            "AND indexname = 'engram_embedding_hnsw'"
        )
        row = cursor.fetchone()
    assert row is not None
    assert "USING hnsw" in row[0] and "vector_cosine_ops" in row[0]


def test_the_embedding_column_is_a_384_dimension_vector(db: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = 'memory_engram'::regclass AND attname = 'embedding'"
        )
        assert cursor.fetchone() == ("vector(384)",)
