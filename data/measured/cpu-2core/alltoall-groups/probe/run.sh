#!/usr/bin/env bash
# Times trplanner-7 and its three variants (variants.py) by shardplan.measure --mode per-rank on 4 Gloo
# ranks, in rotation, REPS times each; then prints each one's step (summary.py). Nothing else running.
#   data/measured/cpu-2core/alltoall-groups/probe/run.sh [REPS]   (from the repository root, .venv active)
set -euo pipefail
here="$(dirname "$0")"
src=data/measured/cpu-2core/cluster-model-60/same-session/pm4
export SHARDPLAN_BINARY="$(realpath build/shard-plan)" PYTHONPATH="$PWD/python"
mkdir -p "$here/timed"
python3 "$here/variants.py" "$src/trplanner-7.json" "$here"
cp "$src/trplanner-7.json" "$here/"
for rep in $(seq "${1:-3}"); do
  for p in trplanner-7 tw1cw-7 tw4cw-7 tw1dp-7; do
    python -m shardplan.measure --plan "$here/$p.json" --tables "$src/tables-7.json" --mode per-rank --seed 7 \
      --batch-size 2048 -o "$here/timed/w-$p-$rep.json"
  done
done
python3 "$here/summary.py" "$here/timed"
