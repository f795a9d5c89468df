#!/usr/bin/env bash
# run.sh's three planners on 8 GPUs. Written before any 8-GPU figure. 10 fresh 8-GPU tasks (gen-tasks
# --protocol paper-8gpu --seed 6315, never used before); tasks 0, 3, 4 and 6 left out (19.6 to 25.1 GiB of
# tables: the VM's 24 GB does not hold them across 8 ranks), so 6 tasks. The same planners and measurer as
# run.sh (--measure-loop 32 as on 4 GPUs), 8 Gloo ranks, two passes, the order rotated per task and pass.
#   SHARDPLAN_BINARY=... data/measured/cpu-2core/loop-budget/run8.sh [DIR]     (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
out="${1:-$here}"
source "$here/common.sh"
mkdir -p "$out/pm8"
[ -s "$out/fresh-8gpu.json" ] || "$B" gen-tasks --pool data/pool.json --protocol paper-8gpu --seed 6315 --num-tasks 10 \
  -o "$out/fresh-8gpu.json" >/dev/null
date -u >"$out/started8"
tools/paired-measure --tasks "$out/fresh-8gpu.json" --out "$out/pm8" --passes 2 --resume --measurer torchrec-per-rank \
  --leave-out 0 --leave-out 3 --leave-out 4 --leave-out 6 --binary "$B" \
  --planner "$inputids" \
  --planner "loop32=$loop32" \
  --planner "$cw32"
date -u >"$out/finished8"
