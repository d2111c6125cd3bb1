"""Search tuning shared by both legs (units in the names or comments) and the stop words."""

from __future__ import annotations

import re

# --- tuning (units in the names or comments) ---------------------------------------------------

TEXT_CONFIG = "english"  # PostgreSQL text search configuration of the generated column
BM25_K1 = 1.2
BM25_B = 0.75
# A query term found in more rows than this is too common to rank by: it is dropped, which bounds
# the rows the lexical leg scores (at most terms x cap) at any store size; rarer terms carry the
# signal.
DF_CAP = 2000
MAX_QUERY_CHARS = 2000  # lexical legs read at most this much of a prompt
MAX_QUERY_TERMS = 32
# Only the rarest terms of a long prompt are scored: they carry nearly all of the BM25 weight,
# and each extra common term adds its matching rows to the scan.
MAX_SCORED_TERMS = 12
# The visible-row count N (for idf) is counted per query below this size and cached above it.
N_CACHE_MIN = 5000
N_CACHE_SECONDS = 60.0
EF_SEARCH_MIN = 40  # hnsw.ef_search floor; raised to 2·k for larger k
EF_SEARCH_MAX = 1000
MAX_LIMIT = 1000

FTS_TABLE = "memory_engram_fts"
LOG_TABLE = "memory_engram_searchlog"
# Keep this many change-log rows (global sequence); a reader further behind rebuilds its index.
LOG_KEEP = 20000
# Apply a change log incrementally up to this many changed rows; beyond it, rebuild.
INCREMENTAL_MAX = 5000
ROW_CHUNK = 500  # ids per IN (...) when reading changed rows

# English stop words (PostgreSQL's `english` list): FTS5 has none, and an OR over "the" would
# score every row. Dropping them keeps both databases' lexical legs alike.
_STOP_WORDS_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can did do does doing don down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own s same she should so some such t than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with you your yours yourself yourselves"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
_WORD = re.compile(r"\w+", re.UNICODE)
