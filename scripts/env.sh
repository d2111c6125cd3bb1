# shellcheck shell=bash
# Shared by scripts/run.sh and scripts/test.sh: find Python >= 3.12 and keep .venv installed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ENGRAM_VENV:-$ROOT/.venv}"

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
die() { printf '\033[31merror:\033[0m %s\n' "$*" >&2; exit 1; }

python_ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }

find_python() {
  local candidates=()
  [ -n "${ENGRAM_PYTHON:-}" ] && candidates+=("$ENGRAM_PYTHON")
  local name
  for name in python3.13 python3.12 python3; do
    command -v "$name" >/dev/null 2>&1 && candidates+=("$(command -v "$name")")
  done
  if command -v pyenv >/dev/null 2>&1; then
    local root; root="$(pyenv root)"
    local dir
    for dir in "$root"/versions/3.13* "$root"/versions/3.12*; do
      [ -x "$dir/bin/python3" ] && candidates+=("$dir/bin/python3")
    done
  fi
  for dir in /usr/local/bin /usr/bin /opt/homebrew/bin; do
    for name in python3.13 python3.12; do
      [ -x "$dir/$name" ] && candidates+=("$dir/$name")
    done
  done
  local c
  for c in "${candidates[@]}"; do
    # pyenv shims exist for versions that are not active and fail when run; python_ok checks.
    if python_ok "$c"; then echo "$c"; return 0; fi
  done
  return 1
}

# ensure_venv [extras]: create .venv with Python >= 3.12 and install the project when
# pyproject.toml changed since the last install.
ensure_venv() {
  local extras="${1:-}"
  if [ ! -x "$VENV/bin/python" ] || ! python_ok "$VENV/bin/python"; then
    local py
    py="$(find_python)" || die "Engram needs Python 3.12 or newer and none was found.
  Install one (e.g. 'pyenv install 3.12', 'apt install python3.12' or 'brew install python@3.12'),
  or point ENGRAM_PYTHON at its interpreter."
    say "Creating $VENV with $("$py" --version 2>&1) ($py)"
    rm -rf "$VENV"
    "$py" -m venv "$VENV"
  fi
  local spec="$ROOT"
  [ -n "$extras" ] && spec="$ROOT[$extras]"
  local stamp="$VENV/.engram-installed"
  local hash; hash="$(sha256sum < "$ROOT/pyproject.toml" | cut -c1-16)"
  local have=""; [ -f "$stamp" ] && have="$(cat "$stamp")"
  # An install with the dev extra also satisfies a plain one.
  if [ "$have" != "$hash-$extras" ] && { [ -n "$extras" ] || [ "${have%%-*}" != "$hash" ]; }; then
    say "Installing Engram and its dependencies into $VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -e "$spec" || die "pip could not install Engram."
    echo "$hash-$extras" > "$stamp"
  fi
  export PATH="$VENV/bin:$PATH"
}
