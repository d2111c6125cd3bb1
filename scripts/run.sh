#!/usr/bin/env bash
# Take a fresh machine to a running Engram on the embedded default (SQLite, no Redis):
# virtualenv, install, migrate, first-run credentials, then web + worker + beat on :8000.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
ensure_venv ""

DATA_DIR="${ENGRAM_DATA_DIR:-$ROOT/data}"
mkdir -p "$DATA_DIR"
if [ -z "${SECRET_KEY:-}" ] && [ ! -s "$DATA_DIR/secret_key" ]; then
  say "Writing a random secret key to $DATA_DIR/secret_key"
  (umask 077 && "$VENV/bin/python" -c 'import secrets; print(secrets.token_urlsafe(50))' > "$DATA_DIR/secret_key")
fi

say "Applying database migrations"
python manage.py migrate --no-input
python manage.py engram_bootstrap
say "Loading the embedding model"
python manage.py shell -c "from lib.embedder import get_embedder; get_embedder().embed_one('warm up')" \
  || die "The embedding model could not be loaded; see the error above."
say "Starting Engram on http://${ENGRAM_BIND:-127.0.0.1:8000}/ (web, worker, beat)"
exec python manage.py engram_run
