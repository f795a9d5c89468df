#!/usr/bin/env bash
# Does the loop time sets closer to the real stack with more rounds? loop_timing.py found the loop's own
# timings (the fastest of --measure-rounds 3) 8.7% off the real stack's ranks within a plan, the model 6.2%.
# Written after run.sh's figures: the same 4-GPU tasks 1-8, the loop32 planner with --measure-rounds 8, each
# plan timed once on TorchRec + FBGEMM beside run.sh's loop32 plan of the task (copied), one pass.
#   SHARDPLAN_BINARY=... data/measured/cpu-2core/loop-budget/run-r8.sh [DIR]     (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
out="${1:-$here}"
source "$here/common.sh"
mkdir -p "$out/pm4-r8"
for i in 1 2 3 4 5 6 7 8; do cp -n "$here/pm4/loop32-$i.json" "$here/pm4/tables-$i.json" "$out/pm4-r8/"; done
tools/paired-measure --tasks "$out/fresh-4gpu.json" --out "$out/pm4-r8" --passes 1 --resume --measurer torchrec-per-rank \
  --first 9 --leave-out 0 --binary "$B" \
  --planner "loop32=$loop32" \
  --planner "loopr8=$loop32 --measure-rounds 8"
