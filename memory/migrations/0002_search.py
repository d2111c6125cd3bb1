"""Full-text search: a generated tsvector + GIN index on PostgreSQL, FTS5 + triggers on SQLite.

Raw SQL only, so the Django model state (and `makemigrations --check`) is unchanged. The SQLite
part also creates the change log that keeps each process's in-memory dense index fresh.

The DDL is copied here as it was when this migration was written: a migration must not change
when live code does. `memory/search/schema.py` keeps the same statements for its own checks.
"""

from django.db import migrations

from memory.migrations._operations import VendorSQL

PG_FORWARD = [
    "ALTER TABLE memory_engram ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', search_text)) STORED",
    "CREATE INDEX engram_search_tsv ON memory_engram USING gin (search_tsv)",
    "ALTER TABLE memory_engram ALTER COLUMN search_tsv SET STORAGE MAIN",
    "ALTER TABLE memory_engram SET (fillfactor = 85, toast_tuple_target = 256)",
]

PG_BACKWARD = [
    "ALTER TABLE memory_engram RESET (fillfactor, toast_tuple_target)",
    "DROP INDEX IF EXISTS engram_search_tsv",
    "ALTER TABLE memory_engram DROP COLUMN IF EXISTS search_tsv",
]

SQLITE_FORWARD = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS memory_engram_fts USING fts5(search_text, content='memory_engram', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TABLE IF NOT EXISTS memory_engram_searchlog (seq INTEGER PRIMARY KEY AUTOINCREMENT, owner_id INTEGER NOT NULL, engram_pk INTEGER, token INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS memory_engram_searchlog_owner ON memory_engram_searchlog (owner_id, seq)",
    "CREATE TRIGGER memory_engram_search_ai AFTER INSERT ON memory_engram BEGIN INSERT INTO memory_engram_fts(rowid, search_text) VALUES (new.id, new.search_text); INSERT INTO memory_engram_searchlog(owner_id, engram_pk, token) VALUES (new.owner_id, new.id, random()); END",
    "CREATE TRIGGER memory_engram_search_ad AFTER DELETE ON memory_engram BEGIN INSERT INTO memory_engram_fts(memory_engram_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text); INSERT INTO memory_engram_searchlog(owner_id, engram_pk, token) VALUES (old.owner_id, old.id, random()); END",
    "CREATE TRIGGER memory_engram_search_au_text AFTER UPDATE OF search_text ON memory_engram WHEN old.search_text IS NOT new.search_text BEGIN INSERT INTO memory_engram_fts(memory_engram_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text); INSERT INTO memory_engram_fts(rowid, search_text) VALUES (new.id, new.search_text); END",
    "CREATE TRIGGER memory_engram_search_au_dense AFTER UPDATE ON memory_engram WHEN old.embedding IS NOT new.embedding OR old.status IS NOT new.status OR old.scope IS NOT new.scope OR old.valid_from IS NOT new.valid_from OR old.valid_until IS NOT new.valid_until OR old.owner_id IS NOT new.owner_id BEGIN INSERT INTO memory_engram_searchlog(owner_id, engram_pk, token) VALUES (new.owner_id, new.id, random()); END",
    "CREATE TRIGGER memory_engram_searchlog_prune AFTER INSERT ON memory_engram_searchlog BEGIN DELETE FROM memory_engram_searchlog WHERE seq <= new.seq - 20000; END",
    "INSERT INTO memory_engram_fts(memory_engram_fts) VALUES ('rebuild')",
    "INSERT INTO memory_engram_searchlog(owner_id, engram_pk, token) SELECT DISTINCT owner_id, NULL, random() FROM memory_engram",
]

SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS memory_engram_search_ai",
    "DROP TRIGGER IF EXISTS memory_engram_search_ad",
    "DROP TRIGGER IF EXISTS memory_engram_search_au_text",
    "DROP TRIGGER IF EXISTS memory_engram_search_au_dense",
    "DROP TRIGGER IF EXISTS memory_engram_searchlog_prune",
    "DROP TABLE IF EXISTS memory_engram_searchlog",
    "DROP TABLE IF EXISTS memory_engram_fts",
]


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0002_engram_band"),
    ]

    operations = [
        VendorSQL("postgresql", PG_FORWARD, PG_BACKWARD),
        VendorSQL("sqlite", SQLITE_FORWARD, SQLITE_BACKWARD),
    ]
