#!/usr/bin/env bash
# #60's step target (written before any figure): neuroshard planned with the model the 4-rank job wrote
# (four-ranks/, run.sh step 1) against TorchRec 1.9.2's own planner at its defaults (torchrec_planner_cpu) and
# with min_partition 32 (torchrec_planner_cpu_cw32), all with TorchRec's CPU types, on fresh 4-GPU tasks
# (gen-tasks --protocol paper-4gpu --seed 6061, never used before; tasks over 11 GiB of tables left out, the
# VM's 24 GB holds about 12 GiB across 4 ranks; the first 12 others kept). Every plan timed on TorchRec +
# FBGEMM (python -m shardplan.measure --mode per-rank --rounds 8, 4 Gloo ranks) in two passes, the order
# rotated per task and pass. Nothing else running.
#   data/measured/cpu-2core/cluster-model-60/run-tasks.sh [DIR]     (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
out="${1:-$here}"
B="${SHARDPLAN_BINARY:-build/shard-plan}"
types=table_wise,column_wise,data_parallel
mkdir -p "$out/pm4"
lscpu | grep -E "Model name|Vendor ID|^CPU\(s\)" >"$out/cpu.txt"
[ -s "$out/fresh-4gpu.json" ] || "$B" gen-tasks --pool data/pool.json --protocol paper-4gpu --seed 6061 \
  --num-tasks 16 -o "$out/fresh-4gpu.json" >/dev/null
leave_out=$(python3 - "$out/fresh-4gpu.json" <<'PY'
import json, sys
tasks = json.load(open(sys.argv[1]))["tasks"]
kept, out = 0, []
for i, task in enumerate(tasks):
    gib = sum(t["rows"] * t["dim"] * 4 for t in task["tables"]) / 2**30
    if gib > 11 or kept == 12:
        out.append(i)
    else:
        kept += 1
print(" ".join(f"--leave-out {i}" for i in out))
PY
)
date -u >"$out/started"
# shellcheck disable=SC2086
tools/paired-measure --tasks "$out/fresh-4gpu.json" --out "$out/pm4" --passes 2 --resume --measurer torchrec-per-rank \
  --binary "$B" --batch-size 2048 $leave_out \
  --planner "cluster=--model $here/four-ranks --sharding-types $types" \
  --planner "trplanner=--algo torchrec_planner_cpu --sharding-types $types" \
  --planner "trplanner32=--algo torchrec_planner_cpu_cw32 --sharding-types $types"
date -u >"$out/finished"
