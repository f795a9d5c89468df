#!/usr/bin/env bash
# The TorchRec user's path, as the README gives it: in a fresh virtual environment that holds only the
# pinned torch, the README's pip command builds shard-plan against that torch and installs the shardplan
# package with its binary. Then, from a directory outside the checkout, with no SHARDPLAN_BINARY,
# SHARDPLAN_PYTHON or LD_LIBRARY_PATH: `shard-plan --version`, a plan of the bundled example tables with the
# bundled default model, and the package's TorchRec tests on the installed package (the drop-in planner; a
# two-EBC model planned by ShardPlanPlanner trains 3 steps under DistributedModelParallel on 2 Gloo ranks).
#   scripts/test-pip-install.sh [VENV]    (default .venv-pip, recreated; the build directory is kept in
#                                         build-pip/, or SKBUILD_BUILD_DIR, so a rerun rebuilds what changed)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
venv="${1:-$root/.venv-pip}"
python="${SHARDPLAN_SETUP_PYTHON:-python3}"
readme_command='pip install scikit-build-core==1.1.2 && pip install --no-build-isolation .'
grep -qF "$readme_command" README.md || { echo "test-pip-install: the README no longer says: $readme_command" >&2; exit 1; }

rm -rf "$venv"
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
# What the user already has: the pinned torch. Where scripts/setup-python.sh installed it for the same
# Python, its files are hard-linked rather than installed again (5 GB of disk a CI machine may not have);
# pip then finds it installed, or installs it where nothing was linked.
source_venv="$root/.venv"
pinned_torch="$(sed -n 's/^torch==//p' python/constraints.txt)"
installed_version() { "$1/bin/python" -c 'from importlib.metadata import version; print(version("torch"))' 2>/dev/null; }
if [ -x "$source_venv/bin/python" ] && [ "$("$source_venv/bin/python" -V)" = "$("$venv/bin/python" -V)" ] &&
  [ "$(installed_version "$source_venv")" = "$pinned_torch" ]; then
  "$source_venv/bin/python" scripts/link-installed.py "$venv" torch
fi
"${pip[@]}" install -c python/constraints.txt torch

export SKBUILD_BUILD_DIR="${SKBUILD_BUILD_DIR:-$root/build-pip}"
started=$(date +%s)
echo "test-pip-install: $readme_command" >&2
# shellcheck disable=SC1091  # the venv's own activate script
# On this machine (the CUDA toolkit with NCCL, no GPU) the build must include the NCCL collector.
(source "$venv/bin/activate" && unset SHARDPLAN_BINARY && export SKBUILD_CMAKE_DEFINE="SHARDPLAN_WITH_NCCL=ON" &&
  eval "$readme_command")
echo "test-pip-install: installed in $(($(date +%s) - started)) s" >&2

# The rest of TorchRec's stack for the package's tests, pinned, as scripts/setup-python.sh installs it.
"${pip[@]}" install -r python/requirements.txt -c python/constraints.txt
"${pip[@]}" install --no-deps "torchrec==$(sed -n 's/^torchrec==//p' python/constraints.txt)"

outside="$(mktemp -d)"
trap 'rm -rf "$outside"' EXIT
cp -r python/tests "$outside/tests"
cd "$outside"
# A user's shell: the environment activated, nothing of the checkout's.
env -u SHARDPLAN_BINARY -u SHARDPLAN_PYTHON -u LD_LIBRARY_PATH -u PYTHONPATH VENV="$venv" bash -euo pipefail -c '
  source "$VENV/bin/activate"
  shard-plan --version
  package="$(python -c "import shardplan, os; print(os.path.dirname(shardplan.__file__))")"
  ldd "$package/bin/shard-plan" | grep -q "not found" && { ldd "$package/bin/shard-plan" >&2; exit 1; }
  shard-plan --tables "$package/data/examples/tables.json" --gpus 128 -o plan.json
  shard-plan validate --plan plan.json --tables "$package/data/examples/tables.json"
  cd tests
  SHARDPLAN_TEST_INSTALLED=1 SHARDPLAN_REQUIRE_TORCHREC=1 python -W ignore -m unittest -v test_install test_planner test_training
'
echo "test-pip-install: passed" >&2
