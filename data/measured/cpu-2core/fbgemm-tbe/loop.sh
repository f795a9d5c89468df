#!/usr/bin/env bash
# #45 item 3's loop variant: plans of the calibrated TBE model with --measure-loop 8 --kernel fbgemm-tbe,
# timed against TorchRec's planner's on the real stack (4 GPUs, per-rank), one pass. `loop.sh [DIR]`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; cd "$here/../../../.."
G=data/measured/cpu-2core/torchrec-groups
O=${1:-$here/loop4}
"$G/plan_tasks.py" 4 "$O" --model "$here/calibrated" --measure-loop 8 --kernel fbgemm-tbe \
  --sharding-types table_wise,column_wise,data_parallel
"$G/measure_groups.py" "$O" data/measured/cpu-2core/torchrec-stack/fresh-4gpu.json per-rank "$O/groups.json" \
  --variants neuroshard_one_group,torchrec_planner
"$G/summarise.py" "$O/groups.json"
