#!/usr/bin/env bash
# Whether the run's per-task compute errors are the tasks' or the measurement's: plans of that run timed
# again with the run's trace seed (the task's index) and with others, back to back, nothing else running.
#   data/measured/cpu-2core/alltoall-groups/repeat/run.sh     (from the repository root, .venv active)
set -euo pipefail
here="$(dirname "$0")"
pm4="$here/../pm4"
export SHARDPLAN_BINARY="$PWD/build/shard-plan" PYTHONPATH="$PWD/python"
time_plan() {  # TASK SEED REPEAT
  python -m shardplan.measure --plan "$pm4/cluster-$1.json" --tables "$pm4/tables-$1.json" --mode per-rank \
    --seed "$2" --batch-size 2048 -o "$here/m-$1-s$2-r$3.json" 2>/dev/null
  echo "$(date -u +%T) task $1 seed $2 repeat $3"
}
for rep in 1 2; do
  for spec in "10 10" "1 1" "10 99" "9 9"; do time_plan $spec $rep; done
done
for rep in 3 4; do
  for seed in 10 99 7 123 5; do time_plan 10 $seed $rep; done
done
python3 "$here/summarise.py" >"$here/summary.txt"
