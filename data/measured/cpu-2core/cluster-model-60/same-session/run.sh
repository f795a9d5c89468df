#!/usr/bin/env bash
# #60 in one sitting: the calibration job, then fresh 4-GPU tasks planned with its model and with TorchRec's
# planners, timed on TorchRec + FBGEMM within the hour, so that the VM's drift between calibrating and
# measuring (up to 30% over three hours here) is not taken for the model's error. Nothing else running.
#   1. torchrun 4 ranks: shard-plan calibrate --out model (defaults: 5 minutes, fbgemm-tbe, the median step)
#   2. 20 fresh tasks (gen-tasks paper-4gpu --seed 6062, never used before; over 11 GiB left out), planned
#      by neuroshard with model/ (cluster), torchrec_planner_cpu (trplanner) and its 32-column setting
#      (trplanner32), every plan timed once (shardplan.measure --mode per-rank, 4 Gloo ranks, batch 2,048)
#   3. a second pass on the first 12 tasks (#60's step comparison: two passes, paired)
#   4. tools/held-out-error before (cpu-fbgemm, the job's base) and after (model/)
#   data/measured/cpu-2core/cluster-model-60/same-session/run.sh [DIR]   (from the repository root, .venv active)
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
[ -s "$out/fresh-4gpu.json" ] || "$B" gen-tasks --pool data/pool.json --protocol paper-4gpu --seed 6062 \
  --num-tasks 24 -o "$out/fresh-4gpu.json" >/dev/null
# The tasks to leave out: those over 11 GiB of tables (the VM's 24 GB holds about 12 GiB across 4 ranks),
# then every kept task past the first $1.
leave_out() {
  python3 - "$out/fresh-4gpu.json" "$1" <<'PY'
import json, sys
tasks, keep = json.load(open(sys.argv[1]))["tasks"], int(sys.argv[2])
kept, out = 0, []
for i, task in enumerate(tasks):
    if sum(t["rows"] * t["dim"] * 4 for t in task["tables"]) / 2**30 > 11 or kept == keep:
        out.append(i)
    else:
        kept += 1
print(" ".join(f"--leave-out {i}" for i in out))
PY
}
measure() {
  # shellcheck disable=SC2046
  tools/paired-measure --tasks "$out/fresh-4gpu.json" --out "$out/pm4" --resume --measurer torchrec-per-rank \
    --binary "$B" --batch-size 2048 "$@" \
    --planner "cluster=--model $out/model --sharding-types $types" \
    --planner "trplanner=--algo torchrec_planner_cpu --sharding-types $types" \
    --planner "trplanner32=--algo torchrec_planner_cpu_cw32 --sharding-types $types"
}
date -u +"pass 1 %FT%TZ" >>"$out/times"
# shellcheck disable=SC2046
measure --passes 1 $(leave_out 20)
date -u +"pass 2 %FT%TZ" >>"$out/times"
# shellcheck disable=SC2046
measure --passes 2 $(leave_out 12)
date -u +"done %FT%TZ" >>"$out/times"
tools/held-out-error --measured "$out/pm4/measured.json" --model cpu-fbgemm --model "$out/model" \
  --hardware cpu-2core --pair cluster:trplanner --pair cluster:trplanner32 --binary "$B" \
  --json "$out/held-out.json" >"$out/held-out.txt"
for b in trplanner trplanner32; do  # the step comparison: the 12 tasks timed twice
  python3 tools/paired_compare.py "$out/pm4/measured.json" cluster "$b" >"$out/compare-$b.json"
done
