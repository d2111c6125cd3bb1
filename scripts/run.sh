#!/usr/bin/env bash
# Take a fresh machine to a running Engram on the embedded default (SQLite, no Redis):
# virtualenv and install, then `engram run` — migrations, first-run credentials, the embedding
# model, web + worker + beat on :8000. Data stays in ./data unless ENGRAM_DATA_DIR says where.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
ensure_venv ""

export ENGRAM_DATA_DIR="${ENGRAM_DATA_DIR:-$ROOT/data}"
exec "$VENV/bin/engram" run --bind "${ENGRAM_BIND:-127.0.0.1:8000}"
