#!/usr/bin/env bash
# #41's 8-GPU targets with the repeatable measurer (written after run.sh's first pass, before any 8-GPU
# figure): 10 fresh 8-GPU tasks (gen-tasks --protocol paper-8gpu --seed 6312, never used before), task 0
# left out (its 23.2 GiB of tables do not fit the VM's 24 GB across 8 ranks; the others hold at most
# 16.3 GiB), planned by inputids, cw32 and alltypes as in run.sh (the measure loop is left out: 8-GPU
# plans take it minutes each, and on the 4-GPU set it gained nothing), each plan timed on 8 TorchRec
# ranks (Gloo, per-rank mode, 8 rounds) in two passes, the order rotated per task and pass.
#   SHARDPLAN_BINARY=... data/measured/cpu-2core/rounds-41/run8.sh [DIR]     (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
out="${1:-$here}"
B="${SHARDPLAN_BINARY:-build/shard-plan}"
cal=data/measured/cpu-2core/search-picks/cal
types=table_wise,column_wise,data_parallel
profile=data/hardware/cpu-2core-torchrec.json
mkdir -p "$out/pm8"
[ -s "$out/fresh-8gpu.json" ] || "$B" gen-tasks --pool data/pool.json --protocol paper-8gpu --seed 6312 --num-tasks 10 \
  -o "$out/fresh-8gpu.json" >/dev/null
date -u >"$out/started8"
tools/paired-measure --tasks "$out/fresh-8gpu.json" --out "$out/pm8" --passes 2 --resume --leave-out 0 \
  --measurer torchrec-per-rank --binary "$B" \
  --planner "inputids=--model $cal --hardware $profile --sharding-types $types" \
  --planner "cw32=--algo torchrec_cw32 --model $cal --sharding-types $types" \
  --planner "alltypes=--algo torchrec_all_types --model $cal --sharding-types $types"
date -u >"$out/finished8"
