#!/usr/bin/env bash
# #41 on the real stack again, each rank's compute now the median of 8 rounds of turns (shardplan.measure
# --rounds 8, the default since this run; ../measure-rounds says why). Written before any of its figures.
# The same 20 fresh 4-GPU tasks as ../loop-and-all-types (gen-tasks --protocol paper-4gpu --seed 6311) and
# the same planners:
#   inputids:  neuroshard, the TBE model calibrated on this VM (../search-picks/cal), the real stack's profile;
#   loop:      the same with --measure-loop 8 --measure-loop-rivals torchrec_cw32 --kernel fbgemm-tbe: its
#              plans are ../loop-and-all-types' (copied: the loop's picks rest on its own timings);
#   cw32:      TorchRec-style plans with 32-column shards (--algo torchrec_cw32);
#   alltypes:  the C++ imitation of TorchRec's planner over every type it may use here, now kept to
#              --sharding-types (8137651; its earlier plans had row-wise tables);
# the others planned again by this binary. Each plan timed on TorchRec + FBGEMM (`python -m shardplan.measure
# --mode per-rank`, 4 Gloo ranks) in two passes, the order rotated per task and pass. Nothing else ran.
#   SHARDPLAN_BINARY=... data/measured/cpu-2core/rounds-41/run.sh [DIR]     (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
out="${1:-$here}"
B="${SHARDPLAN_BINARY:-build/shard-plan}"
cal=data/measured/cpu-2core/search-picks/cal
types=table_wise,column_wise,data_parallel
profile=data/hardware/cpu-2core-torchrec.json
mkdir -p "$out/pm4"
lscpu | grep -E "Model name|Vendor ID|^CPU\(s\)" >"$out/cpu.txt"
date -u >"$out/started"
tools/paired-measure --tasks "$out/fresh-4gpu.json" --out "$out/pm4" --passes 2 --resume --measurer torchrec-per-rank \
  --binary "$B" \
  --planner "inputids=--model $cal --hardware $profile --sharding-types $types" \
  --planner "loop=--model $cal --hardware $profile --sharding-types $types --measure-loop 8 --measure-loop-rivals torchrec_cw32 --kernel fbgemm-tbe" \
  --planner "cw32=--algo torchrec_cw32 --model $cal --sharding-types $types" \
  --planner "alltypes=--algo torchrec_all_types --model $cal --sharding-types $types"
date -u >"$out/finished"
