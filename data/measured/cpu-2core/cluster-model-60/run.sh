#!/usr/bin/env bash
# #60: `shard-plan calibrate` as a torchrun job on this host's CPU ranks (Gloo), nothing else running.
#   1. 4 ranks, one host, the defaults (300 sets, 40 plans' all-to-alls, 5 minutes, kernel fbgemm-tbe)
#   2. 2 emulated hosts of 2 ranks (two torchrun agents on loopback), a short run
#   3. a fresh 4-GPU task (paper-4gpu, 4 GiB per GPU) planned with the job's model and timed on TorchRec + FBGEMM (shardplan.measure)
# Usage: data/measured/cpu-2core/cluster-model-60/run.sh OUT_DIR   (with .venv active; logs in OUT_DIR)
set -euo pipefail
out="$(realpath -m "$1")"
binary="$(realpath build/shard-plan)"
mkdir -p "$out"
start=$(date +%s)
torchrun --standalone --nproc-per-node 4 --no-python "$binary" calibrate --out "$out/four-ranks" \
  >"$out/four-ranks.stdout" 2>"$out/four-ranks.log"
echo "four ranks: $(( $(date +%s) - start )) s"

start=$(date +%s)
for node in 0 1; do
  torchrun --nnodes 2 --node-rank $node --nproc-per-node 2 --master-addr 127.0.0.1 --master-port 29710 \
    --no-python "$binary" calibrate --out "$out/two-hosts" --samples 40 --comm-plans 8 --minutes 2 \
    >"$out/two-hosts-$node.stdout" 2>"$out/two-hosts-$node.log" &
done
wait
echo "two emulated hosts: $(( $(date +%s) - start )) s"

"$binary" gen-tasks --pool data/pool.json --protocol paper-4gpu --seed 6060 --num-tasks 1 -o "$out/task.json" -q
python3 - "$out/task.json" "$out/tables.json" <<'PY'
import json, sys
task = json.load(open(sys.argv[1]))["tasks"][0]
json.dump({"tables": task["tables"]}, open(sys.argv[2], "w"))
PY
"$binary" --tables "$out/tables.json" --gpus 4 --gpus-per-host 4 --mem-per-gpu 4GiB --model "$out/four-ranks" \
  -o "$out/plan.json" >"$out/plan.report" 2>"$out/plan.log"
torchrun --standalone --nproc-per-node 4 -m shardplan.measure --plan "$out/plan.json" --tables "$out/tables.json" \
  -o "$out/measured.json" 2>"$out/measured.log"
"$binary" evaluate --plan "$out/plan.json" --tables "$out/tables.json" --model "$out/four-ranks" --json \
  >"$out/evaluated.json"
