"""The search tables of each database: SQLite's FTS5 table, change log and triggers, and
PostgreSQL's generated tsvector column with its GIN index (also used by migration 0002)."""

from __future__ import annotations

from memory.search.tuning import (
    FTS_TABLE,
    LOG_KEEP,
    LOG_TABLE,
    TEXT_CONFIG,
)

# --- SQLite: FTS5 table, change log and triggers (also used by migration 0002) -------------------

SQLITE_TABLES = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(search_text, "
    "content='memory_engram', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
    f"CREATE TABLE IF NOT EXISTS {LOG_TABLE} (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "owner_id INTEGER NOT NULL, engram_pk INTEGER, token INTEGER NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {LOG_TABLE}_owner ON {LOG_TABLE} (owner_id, seq)",
)
# A random token per log row: sequence numbers come back after a rollback, tokens do not, so a
# cached index can tell "the same change" from "a different change with the same number".
SQLITE_TRIGGERS = {
    "memory_engram_search_ai": (
        "CREATE TRIGGER memory_engram_search_ai AFTER INSERT ON memory_engram BEGIN "
        f"INSERT INTO {FTS_TABLE}(rowid, search_text) VALUES (new.id, new.search_text); "
        f"INSERT INTO {LOG_TABLE}(owner_id, engram_pk, token) "
        "VALUES (new.owner_id, new.id, random()); END"
    ),
    "memory_engram_search_ad": (
        "CREATE TRIGGER memory_engram_search_ad AFTER DELETE ON memory_engram BEGIN "
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, search_text) "
        "VALUES ('delete', old.id, old.search_text); "
        f"INSERT INTO {LOG_TABLE}(owner_id, engram_pk, token) "
        "VALUES (old.owner_id, old.id, random()); END"
    ),
    "memory_engram_search_au_text": (
        "CREATE TRIGGER memory_engram_search_au_text AFTER UPDATE OF search_text ON memory_engram "
        "WHEN old.search_text IS NOT new.search_text BEGIN "
        f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, search_text) "
        "VALUES ('delete', old.id, old.search_text); "
        f"INSERT INTO {FTS_TABLE}(rowid, search_text) VALUES (new.id, new.search_text); END"
    ),
    # Only what the dense index holds; counters and strengths change on every injection.
    "memory_engram_search_au_dense": (
        "CREATE TRIGGER memory_engram_search_au_dense AFTER UPDATE ON memory_engram "
        "WHEN old.embedding IS NOT new.embedding OR old.status IS NOT new.status "
        "OR old.scope IS NOT new.scope OR old.valid_from IS NOT new.valid_from "
        "OR old.valid_until IS NOT new.valid_until OR old.owner_id IS NOT new.owner_id BEGIN "
        f"INSERT INTO {LOG_TABLE}(owner_id, engram_pk, token) "
        "VALUES (new.owner_id, new.id, random()); END"
    ),
    "memory_engram_searchlog_prune": (
        f"CREATE TRIGGER memory_engram_searchlog_prune AFTER INSERT ON {LOG_TABLE} BEGIN "
        f"DELETE FROM {LOG_TABLE} WHERE seq <= new.seq - {LOG_KEEP}; END"
    ),
}
# After (re)creating triggers: index every row and tell every reader to rebuild (engram_pk NULL).
SQLITE_REINDEX = (
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')",
    f"INSERT INTO {LOG_TABLE}(owner_id, engram_pk, token) "
    "SELECT DISTINCT owner_id, NULL, random() FROM memory_engram",
)
SQLITE_FORWARD = (*SQLITE_TABLES, *SQLITE_TRIGGERS.values(), *SQLITE_REINDEX)
SQLITE_BACKWARD = (
    *(f"DROP TRIGGER IF EXISTS {name}" for name in SQLITE_TRIGGERS),
    f"DROP TABLE IF EXISTS {LOG_TABLE}",
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
)

# --- PostgreSQL: generated tsvector column and GIN index (migration 0002) -----------------------

PG_FORWARD = (
    "ALTER TABLE memory_engram ADD COLUMN search_tsv tsvector "
    f"GENERATED ALWAYS AS (to_tsvector('{TEXT_CONFIG}', search_text)) STORED",
    "CREATE INDEX engram_search_tsv ON memory_engram USING gin (search_tsv)",
    # Kept inline: scoring reads it once per matching term, and a TOASTed value is fetched anew
    # each time.
    "ALTER TABLE memory_engram ALTER COLUMN search_tsv SET STORAGE MAIN",
    # Every injection updates access counters: free space per page keeps those updates HOT (no
    # new HNSW/GIN index entries), and moving the 1.5 kB vectors out of line keeps the heap
    # narrow for the filter and full-text scans (the HNSW index holds its own copy).
    "ALTER TABLE memory_engram SET (fillfactor = 85, toast_tuple_target = 256)",
)
PG_BACKWARD = (
    "ALTER TABLE memory_engram RESET (fillfactor, toast_tuple_target)",
    "DROP INDEX IF EXISTS engram_search_tsv",
    "ALTER TABLE memory_engram DROP COLUMN IF EXISTS search_tsv",
)
