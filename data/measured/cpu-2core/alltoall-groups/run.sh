#!/usr/bin/env bash
# #60, the step. TorchRec runs each sharding type's input and output collectives on its own, and the
# planner now prices every sharding type with all-to-alls past the first (CostModel::alltoall_group_ms).
# This run checks it where #60 judges the step, in one sitting, nothing else running:
#   1. torchrun 4 ranks: shard-plan calibrate --out model (defaults: 5 minutes, fbgemm-tbe)
#   2. 12 fresh 4-GPU tasks (gen-tasks paper-4gpu --seed 6081, never used before; over 11 GiB left out),
#      planned by neuroshard with model/ (cluster), torchrec_planner_cpu (trplanner) and its 32-column
#      setting (trplanner32), every plan timed twice (shardplan.measure --mode per-rank, 4 Gloo ranks,
#      batch 2,048), the planners' order rotating
#   3. the paired step and compute ratios, and tools/held-out-error of the job's base (cpu-fbgemm) and model
#   data/measured/cpu-2core/alltoall-groups/run.sh [DIR]   (from the repository root, .venv active)
#   SEED=6091 .../run.sh DIR: the same on other fresh tasks
set -euo pipefail
here="$(dirname "$0")"
out="$(realpath -m "${1:-$here}")"
B="$(realpath build/shard-plan)"
types=table_wise,column_wise,data_parallel
mkdir -p "$out/pm4"
lscpu | grep -E "Model name|Vendor ID|^CPU\(s\)" >"$out/cpu.txt"
date -u +"calibrate %FT%TZ" >"$out/times"
[ -f "$out/model/meta.json" ] || torchrun --standalone --nproc-per-node 4 --no-python "$B" calibrate \
  --out "$out/model" >"$out/calibrate.stdout" 2>"$out/calibrate.log"
[ -s "$out/fresh-4gpu.json" ] || "$B" gen-tasks --pool data/pool.json --protocol paper-4gpu --seed "${SEED:-6081}" \
  --num-tasks 16 -o "$out/fresh-4gpu.json" >/dev/null
# The tasks to leave out: those over 11 GiB of tables (the VM's 24 GB holds about 12 GiB across 4 ranks),
# then every kept task past the first 12.
leave_out=$(python3 - "$out/fresh-4gpu.json" <<'PY'
import json, sys
kept, out = 0, []
for i, task in enumerate(json.load(open(sys.argv[1]))["tasks"]):
    if sum(t["rows"] * t["dim"] * 4 for t in task["tables"]) / 2**30 > 11 or kept == 12:
        out.append(f"--leave-out {i}")
    else:
        kept += 1
print(" ".join(out))
PY
)
date -u +"measure %FT%TZ" >>"$out/times"
# shellcheck disable=SC2086
tools/paired-measure --tasks "$out/fresh-4gpu.json" --out "$out/pm4" --resume --measurer torchrec-per-rank \
  --binary "$B" --batch-size 2048 --passes 2 $leave_out \
  --planner "cluster=--model $out/model --sharding-types $types" \
  --planner "trplanner=--algo torchrec_planner_cpu --sharding-types $types" \
  --planner "trplanner32=--algo torchrec_planner_cpu_cw32 --sharding-types $types"
date -u +"done %FT%TZ" >>"$out/times"
for b in trplanner trplanner32; do
  python3 tools/paired_compare.py "$out/pm4/measured.json" cluster "$b" >"$out/compare-$b.json"
done
tools/held-out-error --measured "$out/pm4/measured.json" --model cpu-fbgemm --model "$out/model" --hardware cpu-2core \
  --pair cluster:trplanner --pair cluster:trplanner32 --binary "$B" --json "$out/held-out.json" >"$out/held-out.txt"
