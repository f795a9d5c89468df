#!/usr/bin/env bash
# #41's targets not yet timed on the real stack (written before any of its figures): on 20 fresh 4-GPU
# tasks (gen-tasks --protocol paper-4gpu --seed 6311, never used before), plans by
#   inputids:  neuroshard with the TBE model calibrated on this VM (../search-picks/cal) and the real
#              stack's profile (data/hardware/cpu-2core-torchrec.json), as in ../input-ids;
#   loop:      the same with --measure-loop 8 --measure-loop-rivals torchrec_cw32 --kernel fbgemm-tbe
#              (shard sets timed on FBGEMM's TBE while planning; a rival handed over when it measures faster);
#   cw32:      TorchRec-style plans with 32-column shards (--algo torchrec_cw32);
#   alltypes:  the C++ imitation of TorchRec's planner over every type it may use here (--algo torchrec_all_types);
# all with TorchRec's CPU types, each plan timed on TorchRec + FBGEMM (`python -m shardplan.measure --mode
# per-rank`, 4 Gloo ranks) in two passes, the order rotated per task and pass. Nothing else ran.
#   SHARDPLAN_BINARY=... data/measured/cpu-2core/loop-and-all-types/run.sh [DIR]     (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
out="${1:-$here}"
B="${SHARDPLAN_BINARY:-build/shard-plan}"
cal=data/measured/cpu-2core/search-picks/cal
types=table_wise,column_wise,data_parallel
profile=data/hardware/cpu-2core-torchrec.json
mkdir -p "$out/pm4"
lscpu | grep -E "Model name|Vendor ID|^CPU\(s\)" >"$out/cpu.txt"
[ -s "$out/fresh-4gpu.json" ] || "$B" gen-tasks --pool data/pool.json --protocol paper-4gpu --seed 6311 --num-tasks 20 \
  -o "$out/fresh-4gpu.json" >/dev/null
date -u >"$out/started"
tools/paired-measure --tasks "$out/fresh-4gpu.json" --out "$out/pm4" --passes 2 --resume --measurer torchrec-per-rank \
  --binary "$B" \
  --planner "inputids=--model $cal --hardware $profile --sharding-types $types" \
  --planner "loop=--model $cal --hardware $profile --sharding-types $types --measure-loop 8 --measure-loop-rivals torchrec_cw32 --kernel fbgemm-tbe" \
  --planner "cw32=--algo torchrec_cw32 --model $cal --sharding-types $types" \
  --planner "alltypes=--algo torchrec_all_types --model $cal --sharding-types $types"
date -u >"$out/finished"
