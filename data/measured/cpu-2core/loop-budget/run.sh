#!/usr/bin/env bash
# Does measuring more while planning close #41's gap on the real stack? rounds-41 found the model unbiased per
# rank but 5.5% off each rank of a plan (within the plan; 3% of the per-rank figure is the measurer's own noise),
# and FBGEMM's TBE timed alone 3.7% off the real stack's ranks: a measure loop that times more of the sets
# that bound a plan should then pick plans whose slowest rank is truly lower. The loop timed 8 sets in
# rounds-41 and gained nothing; this gives it 32. Written before any figure.
# 21 fresh 4-GPU tasks (gen-tasks --protocol paper-4gpu --seed 6314, never used before; tasks 0 and 22, 15.5
# and 15.4 GiB of tables, left out: the VM's 24 GB holds about 12 GiB across 4 ranks). Run first with 15 tasks
# (07:17-07:56 UTC), then again with 23 (the first 15 the same; --resume timed only tasks 15-21). Planners:
#   inputids:  neuroshard, the TBE model calibrated on this VM (../search-picks/cal), the real stack's profile;
#   loop32:    the same with --measure-loop 32 --measure-loop-rivals torchrec_cw32 --kernel fbgemm-tbe;
#   cw32:      TorchRec-style plans with 32-column shards (--algo torchrec_cw32).
# Each plan timed on TorchRec + FBGEMM (python -m shardplan.measure --mode per-rank --rounds 8, 4 Gloo ranks)
# in two passes, the order rotated per task and pass. Nothing else ran.
#   SHARDPLAN_BINARY=... data/measured/cpu-2core/loop-budget/run.sh [DIR]     (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
out="${1:-$here}"
source "$here/common.sh"
mkdir -p "$out/pm4"
lscpu | grep -E "Model name|Vendor ID|^CPU\(s\)" >"$out/cpu.txt"
[ -s "$out/fresh-4gpu.json" ] || "$B" gen-tasks --pool data/pool.json --protocol paper-4gpu --seed 6314 --num-tasks 23 \
  -o "$out/fresh-4gpu.json" >/dev/null
date -u >"$out/started"
tools/paired-measure --tasks "$out/fresh-4gpu.json" --out "$out/pm4" --passes 2 --resume --measurer torchrec-per-rank \
  --leave-out 0 --leave-out 22 --binary "$B" \
  --planner "$inputids" \
  --planner "loop32=$loop32" \
  --planner "$cw32"
date -u >"$out/finished"
