#!/usr/bin/env bash
# Make .venv ready: find a Python >= 3.12, get uv, and sync the locked dependencies.
# Sourced by ./warehouse and ./test. Prints what is missing when it cannot go on.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

say() { printf 'bootstrap: %s\n' "$*" >&2; }

is_py312() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }

find_python() {
  local cand
  for cand in "${EPISODE_WAREHOUSE_PYTHON:-}" python3.12 python3.13 python3.14 python3; do
    [ -n "$cand" ] || continue
    if command -v "$cand" >/dev/null 2>&1 && is_py312 "$cand"; then command -v "$cand"; return 0; fi
  done
  # pyenv keeps versions whose shims are inactive while another version is global
  local roots=()
  command -v pyenv >/dev/null 2>&1 && roots+=("$(pyenv root 2>/dev/null)")
  roots+=("${PYENV_ROOT:-$HOME/.pyenv}" /usr/local /usr /opt/python)
  for root in "${roots[@]}"; do
    for cand in "$root"/versions/3.1[2-9]*/bin/python3 "$root"/bin/python3.1[2-9]; do
      if [ -x "$cand" ] && is_py312 "$cand"; then echo "$cand"; return 0; fi
    done
  done
  return 1
}

if [ ! -x "$here/.venv/bin/python" ] || ! is_py312 "$here/.venv/bin/python" \
   || [ "$here/uv.lock" -nt "$here/.venv/.synced" ] || [ "$here/pyproject.toml" -nt "$here/.venv/.synced" ]; then
  PY="$(find_python)" || {
    say "no Python >= 3.12 found (looked on PATH and in pyenv's versions folder)."
    say "install one, e.g. 'apt-get install python3.12', 'pyenv install 3.12', or 'uv python install 3.12',"
    say "or point EPISODE_WAREHOUSE_PYTHON at its interpreter, then run this again."
    exit 1
  }
  UV="$(command -v uv || true)"
  if [ -z "$UV" ]; then
    if [ ! -x "$here/.tools/bin/uv" ]; then
      say "installing uv into .tools/ (with $PY)"
      "$PY" -m venv "$here/.tools" && "$here/.tools/bin/python" -m pip install -q uv || {
        say "could not install uv with pip; install it (https://docs.astral.sh/uv/) and retry"; exit 1; }
    fi
    UV="$here/.tools/bin/uv"
  fi
  say "syncing .venv with $PY (first time: downloads ~3.5 GB, mostly torch)"
  (cd "$here" && UV_PYTHON="$PY" UV_PYTHON_DOWNLOADS=never "$UV" sync --locked --quiet)
  touch "$here/.venv/.synced"
fi
