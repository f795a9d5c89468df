#!/usr/bin/env bash
# Runs the shardplan package's tests with the Python of shard-plan's stack: $SHARDPLAN_PYTHON, else the
# source tree's .venv (scripts/setup-python.sh), else python3 (then the tests that need TorchRec skip,
# unless SHARDPLAN_REQUIRE_TORCHREC=1 makes them fail). Extra arguments go to unittest.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
python="${SHARDPLAN_PYTHON:-}"
[ -n "$python" ] || { [ -x "$root/.venv/bin/python" ] && python="$root/.venv/bin/python"; } || python=python3
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1
cd "$root/python/tests"
exec "$python" -W ignore -m unittest discover -s . -t . "$@"
