#!/usr/bin/env bash
# After run.sh (written before any of its figures): the same plans' per-rank compute timed again on
# FBGEMM's TBE kernel through `evaluate --kernel fbgemm-tbe` (every rank's shard set built and timed in
# interleaved rounds in one process, the fastest kept: the real stack's per-rank timing starts a TorchRec
# job per plan, and its per-task ratios repeated from pass to pass at r = 0.52 and -0.21 in ../input-ids),
# two passes rotated per task, for the correlation of predicted and measured per-task ratios; the first 10
# tasks only (a pass over 20 took 20 minutes, and the session had less left).
#   SHARDPLAN_BINARY=... data/measured/cpu-2core/loop-and-all-types/run-compute.sh [DIR]
set -euo pipefail
here="$(dirname "$0")"
out="${1:-$here}"
B="${SHARDPLAN_BINARY:-build/shard-plan}"
cal=data/measured/cpu-2core/search-picks/cal
types=table_wise,column_wise,data_parallel
profile=data/hardware/cpu-2core-torchrec.json
mkdir -p "$out/tc4"
for label in inputids loop cw32; do cp -n "$out"/pm4/$label-*.json "$out/tc4/"; done
date -u >"$out/tc4/started"
tools/paired-measure --tasks "$out/fresh-4gpu.json" --out "$out/tc4" --passes 2 --first 10 --resume --no-comm \
  --measure-args "--kernel fbgemm-tbe" --binary "$B" \
  --planner "inputids=--model $cal --hardware $profile --sharding-types $types" \
  --planner "loop=--model $cal --hardware $profile --sharding-types $types --measure-loop 8 --measure-loop-rivals torchrec_cw32 --kernel fbgemm-tbe" \
  --planner "cw32=--algo torchrec_cw32 --model $cal --sharding-types $types"
date -u >"$out/tc4/finished"
