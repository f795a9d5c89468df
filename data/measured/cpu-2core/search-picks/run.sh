#!/usr/bin/env bash
# #41 item 2: does the FBGEMM TBE model, calibrated on the measuring machine, under-predict the sets the
# search picks more than those of TorchRec's strongest configurations? Written before any figure.
#   data/measured/cpu-2core/search-picks/run.sh [DIR]     (from the repository root; about 40 minutes)
# Fresh tasks (seeds never used before), the model calibrated here from models/cpu-fbgemm, then every
# plan's per-rank compute timed with FBGEMM's TBE in two rotated passes on one core (taskset -c 1).
set -euo pipefail
out="${1:-$(dirname "$0")}"
bin=build/shard-plan
mkdir -p "$out"
lscpu | grep -E "Model name|Vendor ID|^CPU\(s\)" >"$out/cpu.txt"
[ -f "$out/fresh-4gpu.json" ] || $bin gen-tasks --pool data/pool.json --protocol paper-4gpu --seed 5117 --num-tasks 20 -o "$out/fresh-4gpu.json" -q
[ -f "$out/fresh-8gpu.json" ] || $bin gen-tasks --pool data/pool.json --protocol paper-8gpu --seed 5118 --num-tasks 10 -o "$out/fresh-8gpu.json" -q
[ -f "$out/cal/meta.json" ] || taskset -c 1 $bin calibrate --kernel fbgemm-tbe --base models/cpu-fbgemm --out "$out/cal" 2>"$out/cal.err"
for g in 4 8; do
  taskset -c 1 tools/paired-measure --tasks "$out/fresh-${g}gpu.json" --out "$out/g$g" --passes 2 --no-comm \
    --measure-args "--kernel fbgemm-tbe" --resume \
    --planner "neuroshard=--model $out/cal" \
    --planner "cw32=--algo torchrec_cw32 --model $out/cal" \
    --planner "alltypes=--algo torchrec_all_types --model $out/cal"
done
