#!/usr/bin/env bash
# #41 against TorchRec's own planner at its strongest setting, on the real stack (written before any figure):
# TorchRec 1.9.2's EmbeddingShardingPlanner with ParameterConstraints(min_partition=32) on every table
# (--algo torchrec_planner_cpu_cw32), beside the C++ imitations torchrec_cw32 and torchrec_all_types, against
# neuroshard with the TBE model calibrated on this VM (../search-picks/cal) and the real stack's profile.
# 20 fresh 4-GPU tasks (gen-tasks --protocol paper-4gpu --seed 6316, never used before; tasks 5 and 10, 13.2
# and 12.0 GiB of tables, left out: the VM's 24 GB holds about 12 GiB across 4 ranks), TorchRec's CPU types.
# Each plan timed on TorchRec + FBGEMM (python -m shardplan.measure --mode per-rank --rounds 8, 4 Gloo ranks)
# in two passes, the order rotated per task and pass. Nothing else ran.
#   SHARDPLAN_BINARY=... data/measured/cpu-2core/real-planner-cw32/run.sh [DIR]     (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
out="${1:-$here}"
source "$here/../loop-budget/common.sh"
mkdir -p "$out/pm4"
lscpu | grep -E "Model name|Vendor ID|^CPU\(s\)" >"$out/cpu.txt"
[ -s "$out/fresh-4gpu.json" ] || "$B" gen-tasks --pool data/pool.json --protocol paper-4gpu --seed 6316 --num-tasks 22 \
  -o "$out/fresh-4gpu.json" >/dev/null
date -u >"$out/started"
tools/paired-measure --tasks "$out/fresh-4gpu.json" --out "$out/pm4" --passes 2 --resume --measurer torchrec-per-rank \
  --leave-out 5 --leave-out 10 --binary "$B" \
  --planner "$inputids" \
  --planner "trplanner32=--algo torchrec_planner_cpu_cw32 --sharding-types $types" \
  --planner "$cw32" \
  --planner "alltypes=--algo torchrec_all_types --model $cal --sharding-types $types"
date -u >"$out/finished"
