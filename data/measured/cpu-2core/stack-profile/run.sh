#!/usr/bin/env bash
# #41 on the real stack (written before any of its figures): neuroshard planning with the all-to-all of
# the stack it runs on (data/hardware/cpu-2core-torchrec.json: the collectives follow the plan's total
# width, not its placement, so the search minimises the slowest rank's compute), against TorchRec 1.9.2's
# own planner and TorchRec with 32-column shards (search-picks/run2.sh times neuroshard as before), every plan timed on TorchRec + FBGEMM (`python -m shardplan.measure --mode per-rank`,
# 4 Gloo ranks) in two rotated passes. Fresh 4-GPU tasks (seed 5117, search-picks' set: not seen by the
# real stack before), the TBE model calibrated on this machine (search-picks/cal), TorchRec's CPU types.
#   data/measured/cpu-2core/stack-profile/run.sh [DIR]     (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
out="${1:-$here}"
picks=data/measured/cpu-2core/search-picks
types=table_wise,column_wise,data_parallel
mkdir -p "$out"
lscpu | grep -E "Model name|Vendor ID|^CPU\(s\)" >"$out/cpu.txt"
tools/paired-measure --tasks "$picks/fresh-4gpu.json" --out "$out/pm4" --passes 2 --resume --measurer torchrec-per-rank \
  --binary "${SHARDPLAN_BINARY:-build/shard-plan}" \
  --planner "stackprofile=--model $picks/cal --hardware data/hardware/cpu-2core-torchrec.json --sharding-types $types" \
  --planner "torchrec_planner=--algo torchrec_planner_cpu --sharding-types $types" \
  --planner "cw32=--algo torchrec_cw32 --model $picks/cal --sharding-types $types"
