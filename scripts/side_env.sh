#!/usr/bin/env bash
# A side environment: another project's own tool at the version users run, installed beside this
# project (.side/NAME), never into its venv. Prints the side environment's python.
#   scripts/side_env.sh lerobot-train    # lerobot[training,diffusion] 0.6.1: lerobot-train (ACT, Diffusion)
#   scripts/side_env.sh lerobot-0.3.3    # lerobot 0.3.3 (writes and reads LeRobot v2.1), PyAV 14.2, numpy 2.2
#   scripts/side_env.sh lerobot-doctor   # lerobot-doctor 0.2.0 (a LeRobot dataset checker)
# Installed once (a stamp names what is installed); safe to call from several processes at once.
# SIDE_ENVS: the folder that holds them (default .side/; a benchmark run from a fresh copy of
# the project points it at the project's own, so nothing is installed twice).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
name="${1:-}"
case "$name" in
  lerobot-train) reqs=("lerobot[training,diffusion]==0.6.1") ;;
  # lerobot 0.3.3's video writer fails on newer PyAV (int() of an AVRational); 14.2.0 works.
  # Its writer calls float() on (1,) arrays, an error since numpy 2.5: numpy of its time
  lerobot-0.3.3) reqs=("lerobot==0.3.3" "av==14.2.0" "numpy==2.2.6") ;;
  lerobot-doctor) reqs=("lerobot-doctor==0.2.0") ;;
  *) echo "side_env: unknown side environment '$name' (lerobot-train, lerobot-0.3.3, lerobot-doctor)" >&2
     exit 2 ;;
esac
home="${SIDE_ENVS:-$here/.side}"
dir="$home/$name"
mkdir -p "$home"
exec 9>"$home/$name.lock"
flock 9
if [ ! -x "$dir/bin/python" ] || [ "$(cat "$dir/.installed" 2>/dev/null)" != "${reqs[*]}" ]; then
  # the interpreter the side environment is built on: the project's (SIDE_ENV_PYTHON: another
  # one, e.g. a benchmark run from a fresh checkout with the project's venv)
  py="${SIDE_ENV_PYTHON:-$here/.venv/bin/python}"
  [ -x "$py" ] || { echo "side_env: no $py; run ./scripts/bootstrap.sh first" >&2; exit 1; }
  base="$("$py" -c 'import sys; print(sys._base_executable)')"
  UV="$(command -v uv || echo "$here/.tools/bin/uv")"
  if [ ! -x "$UV" ]; then  # as bootstrap.sh installs it
    echo "side_env: installing uv into .tools/" >&2
    "$base" -m venv "$here/.tools" && "$here/.tools/bin/python" -m pip install -q uv >&2
    UV="$here/.tools/bin/uv"
  fi
  echo "side_env: installing ${reqs[*]} into $dir (once)" >&2
  # a venv's scripts hold its own path, so it is built in place; the stamp, written last,
  # says it is whole (an interrupted install has none and is built again). The installer does
  # not inherit the lock (9>&-): one left running by a killed caller would hold it forever
  rm -rf "$dir"
  "$UV" venv --quiet --python "$base" "$dir" >&2 9>&-
  "$UV" pip install --quiet --python "$dir/bin/python" "${reqs[@]}" >&2 9>&-
  printf '%s' "${reqs[*]}" > "$dir/.installed"
fi
echo "$dir/bin/python"
