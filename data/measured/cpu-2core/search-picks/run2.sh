#!/usr/bin/env bash
# #41, second run (written after run.sh's 4-GPU figures, before any of this one's): does planning on
# compute alone beat torchrec_cw32 on FBGEMM's kernel? run.sh found the search trading compute for a
# predicted all-to-all gain (the CPU model's comm is 2/3 of its objective), a gain the real stack's
# collectives do not show (stack-comm: they follow the plan's total width, not its placement).
# `compute-only.json` is a hardware profile whose all-to-all costs nothing. Same tasks, model and
# protocol as run.sh's 4-GPU set, with all three planners timed again in this sitting.
#   data/measured/cpu-2core/search-picks/run2.sh [DIR]     (from the repository root; about 45 minutes)
set -euo pipefail
out="${1:-$(dirname "$0")}"
here="$(dirname "$0")"
# Every plan is timed with the same profile named (evaluate reads a plan's profile by name; this one is a
# file), which changes no measured figure: compute only is timed.
taskset -c 1 tools/paired-measure --tasks "$out/fresh-4gpu.json" --out "$out/g4-compute" --passes 2 --no-comm \
  --binary "${SHARDPLAN_BINARY:-build/shard-plan}" \
  --measure-args "--kernel fbgemm-tbe --hardware $here/compute-only.json" --resume \
  --planner "computeonly=--model $out/cal --hardware $here/compute-only.json" \
  --planner "neuroshard=--model $out/cal" \
  --planner "cw32=--algo torchrec_cw32 --model $out/cal"
