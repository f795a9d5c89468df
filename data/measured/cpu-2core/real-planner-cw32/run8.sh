#!/usr/bin/env bash
# run.sh's comparison on 8 GPUs (written before any figure): 8 fresh 8-GPU tasks (gen-tasks --protocol paper-8gpu
# --seed 6317, never used before; tasks 3 and 4, 29.7 and 16.8 GiB of tables, left out: the VM's 24 GB does not
# hold them across 8 ranks), 8 Gloo ranks; neuroshard against TorchRec's own planner with 32-column shards and
# the C++ torchrec_cw32 (torchrec_all_types left out for time: an 8-rank timing takes about 45 s).
#   SHARDPLAN_BINARY=... data/measured/cpu-2core/real-planner-cw32/run8.sh [DIR]     (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
out="${1:-$here}"
source "$here/../loop-budget/common.sh"
mkdir -p "$out/pm8"
[ -s "$out/fresh-8gpu.json" ] || "$B" gen-tasks --pool data/pool.json --protocol paper-8gpu --seed 6317 --num-tasks 8 \
  -o "$out/fresh-8gpu.json" >/dev/null
date -u >"$out/started8"
tools/paired-measure --tasks "$out/fresh-8gpu.json" --out "$out/pm8" --passes 2 --resume --measurer torchrec-per-rank \
  --leave-out 3 --leave-out 4 --binary "$B" \
  --planner "$inputids" \
  --planner "trplanner32=--algo torchrec_planner_cpu_cw32 --model $cal --hardware $profile --sharding-types $types" \
  --planner "$cw32"
date -u >"$out/finished8"
