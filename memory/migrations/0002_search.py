"""Full-text search: a generated tsvector + GIN index on PostgreSQL, FTS5 + triggers on SQLite.

Raw SQL only, so the Django model state (and `makemigrations --check`) is unchanged. The SQLite
part also creates the change log that keeps each process's in-memory dense index fresh.
"""

from django.db import migrations

import memory.dbops
import memory.search


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0002_engram_band"),
    ]

    operations = [
        memory.dbops.VendorSQL(
            "postgresql", list(memory.search.PG_FORWARD), list(memory.search.PG_BACKWARD)
        ),
        memory.dbops.VendorSQL(
            "sqlite", list(memory.search.SQLITE_FORWARD), list(memory.search.SQLITE_BACKWARD)
        ),
    ]
