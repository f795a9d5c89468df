#!/usr/bin/env bash
# #61 on the real stack: 10 fresh 4-GPU tasks (paper-4gpu, seed 6166; tasks over 11 GiB of tables left out,
# the VM's 24 GB holds about 12 GiB across 4 ranks), drifted (gen-tasks --drift, seed 6167). Per task, with
# this machine's 4-rank model (cluster-model-60/four-ranks) and TorchRec's CPU types: the old placement
# under the drifted tables (--move-budget 0), the replan within 10% and a full replan (tools/replan-bench),
# then each timed on TorchRec 1.9.2 + FBGEMM (shardplan.measure per-rank, 4 Gloo ranks) in two passes, the
# order rotated per task and pass (tools/paired-measure over the same plan files). Nothing else running.
#   data/measured/cpu-2core/replan-61/run-measured.sh      (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
B="${SHARDPLAN_BINARY:-build/shard-plan}"
model=data/measured/cpu-2core/cluster-model-60/four-ranks
work=/tmp/replan-61-measured
mkdir -p "$here/pm4" "$work"
[ -s "$here/fresh-4gpu.json" ] || "$B" gen-tasks --pool data/pool.json --protocol paper-4gpu --seed 6166 --num-tasks 14 \
  -o "$here/fresh-4gpu.json"
python3 - "$here/fresh-4gpu.json" <<'PY'
import json, sys
path = sys.argv[1]
doc = json.load(open(path))
doc["tasks"] = [t for t in doc["tasks"] if sum(x["rows"] * x["dim"] * 4 for x in t["tables"]) / 2**30 <= 11][:10]
json.dump(doc, open(path, "w"), indent=1)
PY
[ -s "$here/drift-4gpu.json" ] || "$B" gen-tasks --drift "$here/fresh-4gpu.json" --pool data/pool.json --seed 6167 \
  -o "$here/drift-4gpu.json"
tools/replan-bench --binary "$B" --old "$here/fresh-4gpu.json" --new "$here/drift-4gpu.json" --out "$work" \
  --budget 0 --budget 10% -- --model "$model" --sharding-types table_wise,column_wise,data_parallel \
  >"$here/summary-4gpu.json"
cp "$work/replan.json" "$here/replan-4gpu.json"
for i in $(seq 0 9); do
  cp "$work/budget-0-$i.json" "$here/pm4/old-$i.json"
  cp "$work/budget-10pct-$i.json" "$here/pm4/replan-$i.json"
  cp "$work/full-$i.json" "$here/pm4/full-$i.json"
done
tools/paired-measure --tasks "$here/drift-4gpu.json" --out "$here/pm4" --passes 2 --resume --measurer torchrec-per-rank \
  --binary "$B" --batch-size 2048 \
  --planner "old=--model $model" --planner "replan=--model $model" --planner "full=--model $model"
