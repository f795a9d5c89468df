#!/usr/bin/env bash
# Creates or updates a virtual environment (default .venv) with shard-plan's Python stack, pinned in
# python/constraints.txt: torch, fbgemm-gpu-cpu, TorchRec and its pure-Python dependencies, and the
# shardplan package (editable, so it follows this source tree). Safe to run again: what is installed at
# the pinned versions is kept. Prints the versions it installed and fails when they do not import.
#   scripts/setup-python.sh [DIR]        SHARDPLAN_SETUP_PYTHON=python3.11 picks the interpreter
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-.venv}"
python="${SHARDPLAN_SETUP_PYTHON:-python3}"
torchrec_version="$(sed -n 's/^torchrec==//p' python/constraints.txt)"

if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
  # Debian's python3 leaves venv's pip bootstrap to a package of its own.
  echo "setup-python: installing python3-venv" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >/dev/null
fi
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
"${pip[@]}" install -r python/requirements.txt -c python/constraints.txt
# torchrec requires the CUDA fbgemm-gpu, which would replace fbgemm-gpu-cpu: its other dependencies are
# in requirements.txt.
"${pip[@]}" install --no-deps "torchrec==${torchrec_version}"
# setuptools warns at length about every editable install; its log is shown only if the install fails.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
"${pip[@]}" install --no-deps --no-build-isolation -e ./python >"$log" 2>&1 || { cat "$log" >&2; exit 1; }

"$venv/bin/python" - <<'PY'
from importlib import metadata
import fbgemm_gpu, torch, torchrec  # noqa: F401  the smoke test: the pinned stack imports together
from torchrec.distributed.planner import EmbeddingShardingPlanner  # noqa: F401
import shardplan.torchrec.planner, shardplan.measure.timing  # noqa: F401
names = ("torch", "fbgemm-gpu-cpu", "torchrec", "shardplan")
print("setup-python: " + ", ".join(f"{n} {metadata.version(n)}" for n in names))
PY
echo "setup-python: ready in $venv" >&2
