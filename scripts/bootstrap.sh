#!/usr/bin/env bash
# Make the machine ready: the system libraries the features need (when this user can install
# them), a Python >= 3.12, uv, and the locked dependencies in .venv (every extra: the
# pipeline, LeRobot, the cluster, the test tools; a trainer installs the bare package alone).
# Run by ./warehouse and ./test. Prints what is missing when it cannot go on.
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

# System packages: Debian's chromium (the browser test of the Dagster UI) and the FFmpeg
# libraries torchcodec loads (LeRobot's video decoding). Installed when we are root with apt,
# else named once with the command to run.
system_packages() {
  local need=()
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  # the listing is read whole before it is searched: `ldconfig -p | grep -q` under pipefail
  # fails when grep exits at its first match and ldconfig dies of SIGPIPE (17 of 500 checks
  # under load), which re-ran apt at random
  local libs
  libs="$(ldconfig -p 2>/dev/null || true)"
  if [[ "$libs" != *libavcodec.so.59* ]]; then
    need+=(libavutil57 libavcodec59 libavformat59 libavdevice59 libavfilter8 libswscale6 libswresample4)
  fi
  [ ${#need[@]} -gt 0 ] || return 0
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    say "installing ${need[*]} (apt, once)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "${need[@]}"; } >/dev/null 2>&1 \
      || say "could not install ${need[*]}; run: sudo apt-get install -y ${need[*]}"
  else
    say "optional: sudo apt-get install -y ${need[*]}  (browser test; LeRobot video via torchcodec)"
  fi
}
[ "${EPISODE_WAREHOUSE_NO_SYSTEM_PACKAGES:-}" = 1 ] || system_packages

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
  # --compile-bytecode: where PYTHONDONTWRITEBYTECODE is set (CI images), every process would
  # otherwise compile torch again (~10 s each)
  say "syncing .venv with $PY (first time: downloads ~3.5 GB, mostly torch)"
  (cd "$here" && UV_PYTHON="$PY" UV_PYTHON_DOWNLOADS=never "$UV" sync --locked --all-extras --quiet --compile-bytecode)
  touch "$here/.venv/.synced"
fi
