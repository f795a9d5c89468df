#!/usr/bin/env bash
# #41: the cost model charges the input all-to-all (each piece receives its table's ids; written before any
# of its figures). Plans the 20 fresh 4-GPU tasks of search-picks (seed 5117) with
#   inputids:     neuroshard as now (the ids in the all-to-all structure), the real stack's profile;
#   stackprofile: the same before the change (../stack-profile's plans, copied; its binary re-plans none);
#   torchrec_planner: TorchRec 1.9.2's own planner;  cw32: TorchRec-style plans with 32-column shards;
# all with TorchRec's CPU types, and times every plan on TorchRec + FBGEMM (`python -m shardplan.measure
# --mode per-rank`, 4 Gloo ranks) in two passes, the order rotated per task and pass. Nothing else ran.
#   SHARDPLAN_BINARY=... data/measured/cpu-2core/input-ids/run.sh [DIR]     (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
out="${1:-$here}"
picks=data/measured/cpu-2core/search-picks
types=table_wise,column_wise,data_parallel
mkdir -p "$out/pm4"
lscpu | grep -E "Model name|Vendor ID|^CPU\(s\)" >"$out/cpu.txt"
for f in data/measured/cpu-2core/stack-profile/pm4/stackprofile-*.json; do
  cp -n "$f" "$out/pm4/"
done
tools/paired-measure --tasks "$picks/fresh-4gpu.json" --out "$out/pm4" --passes 2 --resume --measurer torchrec-per-rank \
  --binary "${SHARDPLAN_BINARY:-build/shard-plan}" \
  --planner "inputids=--model $picks/cal --hardware data/hardware/cpu-2core-torchrec.json --sharding-types $types" \
  --planner "stackprofile=--model $picks/cal --hardware data/hardware/cpu-2core-torchrec.json --sharding-types $types" \
  --planner "torchrec_planner=--algo torchrec_planner_cpu --sharding-types $types" \
  --planner "cw32=--algo torchrec_cw32 --model $picks/cal --sharding-types $types"
