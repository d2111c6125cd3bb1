#!/usr/bin/env bash
# The whole test suite: services, lint, types, then pytest on PostgreSQL and on SQLite.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
ensure_venv dev
source "$ROOT/scripts/services.sh"

export SECRET_KEY="${SECRET_KEY:-engram-test-secret-$(hostname)-not-for-production}"
export ENGRAM_CHROMIUM="${ENGRAM_CHROMIUM:-$(command -v chromium || true)}"
TEST_DATA="$(mktemp -d)"
trap 'rm -rf "$TEST_DATA"' EXIT

say "ruff check"
ruff check .
say "ruff format --check"
ruff format --check .
say "mypy"
ENGRAM_DATA_DIR="$TEST_DATA/mypy" mypy engramsite lib memory exchange dialectic patterns

say "pytest on PostgreSQL ($DATABASE_URL)"
ENGRAM_DATA_DIR="$TEST_DATA/pg" python -m pytest "$@"

say "pytest on SQLite (tests marked sqlite: every code path that differs by database)"
DATABASE_URL="sqlite:///$TEST_DATA/sqlite/engram.sqlite3" ENGRAM_DATA_DIR="$TEST_DATA/sqlite" \
  python -m pytest -m "sqlite" "$@"
