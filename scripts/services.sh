#!/usr/bin/env bash
# Make the services the test suite needs available, idempotently.
# As root on Debian: PostgreSQL 15 with pgvector (built from Debian's own source package),
# the extension in template1, an app role with CREATEDB, Redis on 127.0.0.1, and Chromium.
# Elsewhere: nothing is installed; DATABASE_URL / REDIS_URL given to the test command are used.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

PG_VERSION="${PG_VERSION:-15}"
APP_ROLE="${ENGRAM_DB_ROLE:-engram}"
APT_DIR="${ENGRAM_APT_DIR:-/var/cache/engram-apt}"

is_debian_root() { [ "$(id -u)" = 0 ] && [ -f /etc/debian_version ] && command -v apt-get >/dev/null; }

apt_updated=0
apt_install() {
  local missing=()
  local p
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ $apt_updated = 0 ]; then apt-get update -qq >/dev/null; apt_updated=1; fi
  say "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

pg_running() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
psql_su() { runuser -u postgres -- psql -v ON_ERROR_STOP=1 -qAt "$@"; }

ensure_postgres() {
  apt_install "postgresql-$PG_VERSION" "postgresql-server-dev-$PG_VERSION" dpkg-dev make gcc
  if ! pg_running; then
    say "Starting PostgreSQL $PG_VERSION"
    pg_ctlcluster --skip-systemctl-redirect "$PG_VERSION" main start || true
    for _ in $(seq 1 30); do pg_running && break; sleep 1; done
    pg_running || die "PostgreSQL did not start on 127.0.0.1:5432"
  fi
  local ext_dir; ext_dir="$(/usr/lib/postgresql/"$PG_VERSION"/bin/pg_config --sharedir)/extension"
  if [ ! -f "$ext_dir/vector.control" ]; then
    say "Building pgvector from Debian's source package (trixie) for PostgreSQL $PG_VERSION"
    # A private apt configuration: the deb-src entry never touches the system's sources.
    mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial" "$APT_DIR/build"
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
      > "$APT_DIR/sources.list"
    local opts=(-o "Dir::Etc::SourceList=$APT_DIR/sources.list" -o Dir::Etc::SourceParts=/dev/null
                -o "Dir::State::Lists=$APT_DIR/lists" -o "Dir::Cache=$APT_DIR/cache" -qq)
    apt-get "${opts[@]}" update
    (cd "$APT_DIR/build" && rm -rf ./* && apt-get "${opts[@]}" source --download-only pgvector 2>/dev/null)
    local tarball; tarball="$(ls "$APT_DIR"/build/pgvector_*.orig.tar.* | head -n1)"
    [ -n "$tarball" ] || die "could not download Debian's pgvector source package"
    (cd "$APT_DIR/build" && tar xf "$tarball" && cd pgvector-*/ \
      && make -s PG_CONFIG=/usr/lib/postgresql/"$PG_VERSION"/bin/pg_config OPTFLAGS="" >/dev/null \
      && make -s install PG_CONFIG=/usr/lib/postgresql/"$PG_VERSION"/bin/pg_config >/dev/null)
  fi
  psql_su -d template1 -c "CREATE EXTENSION IF NOT EXISTS vector"
  if [ "$(psql_su -c "SELECT 1 FROM pg_roles WHERE rolname = '$APP_ROLE'")" != 1 ]; then
    say "Creating PostgreSQL role $APP_ROLE (CREATEDB)"
    psql_su -c "CREATE ROLE $APP_ROLE LOGIN CREATEDB"
  fi
  if [ "$(psql_su -c "SELECT 1 FROM pg_database WHERE datname = 'engram'")" != 1 ]; then
    psql_su -c "CREATE DATABASE engram OWNER $APP_ROLE"
  fi
}

redis_running() { (exec 3<>/dev/tcp/127.0.0.1/6379 && printf 'PING\r\n' >&3 && head -c5 <&3 | grep -q PONG) 2>/dev/null; }

ensure_redis() {
  redis_running && return 0
  apt_install redis-server
  say "Starting Redis on 127.0.0.1:6379"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 20); do redis_running && return 0; sleep 0.5; done
  die "Redis did not start on 127.0.0.1:6379"
}

if is_debian_root; then
  ensure_postgres
  ensure_redis
  apt_install chromium chromium-driver
  # Only to validate docker-compose.yml (`docker-compose config`); no Docker engine is needed.
  command -v docker-compose >/dev/null || (docker compose version >/dev/null 2>&1) || {
    apt-get update -qq >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose >/dev/null; }
  export DATABASE_URL="${DATABASE_URL:-postgres://$APP_ROLE@127.0.0.1:5432/engram}"
  export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
else
  [ -n "${DATABASE_URL:-}" ] || die "Not root on Debian: set DATABASE_URL to a PostgreSQL database with pgvector (role with CREATEDB)."
  [ -n "${REDIS_URL:-}" ] || die "Not root on Debian: set REDIS_URL to a Redis server."
fi
