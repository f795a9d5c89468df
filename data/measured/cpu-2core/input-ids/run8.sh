#!/usr/bin/env bash
# #41's 8-GPU target on the real stack (written before any of its figures): the 10 fresh 8-GPU tasks of
# search-picks (seed 5118) planned by neuroshard as now (`inputids`: the real stack's profile, the input
# all-to-all charged), TorchRec 1.9.2's own planner and TorchRec with 32-column shards, TorchRec's CPU
# types, each plan timed on TorchRec + FBGEMM (`python -m shardplan.measure --mode per-rank`, 8 Gloo
# ranks on the 2 cores) in two passes, the order rotated per task and pass. Nothing else ran. Task 4 is
# left out: its 20.8 GiB of tables do not fit the VM's 24 GB across 8 ranks (a rank was killed for memory
# in the first try; the others hold at most 17.9 GiB).
#   SHARDPLAN_BINARY=... data/measured/cpu-2core/input-ids/run8.sh [DIR]     (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
out="${1:-$here}"
picks=data/measured/cpu-2core/search-picks
types=table_wise,column_wise,data_parallel
mkdir -p "$out/pm8"
tools/paired-measure --tasks "$picks/fresh-8gpu.json" --out "$out/pm8" --passes 2 --resume --leave-out 4 --measurer torchrec-per-rank \
  --binary "${SHARDPLAN_BINARY:-build/shard-plan}" \
  --planner "inputids=--model $picks/cal --hardware data/hardware/cpu-2core-torchrec.json --sharding-types $types" \
  --planner "torchrec_planner=--algo torchrec_planner_cpu --sharding-types $types" \
  --planner "cw32=--algo torchrec_cw32 --model $picks/cal --sharding-types $types"
