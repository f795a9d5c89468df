#!/usr/bin/env bash
# #61's predicted targets (written before any figure): replans from the old plan at move budgets 0 and 10%
# against a full replan, on fresh tasks drifted by gen-tasks --drift (defaults: pooling factors x
# exp(N(0, 0.3)), 10% of the tables grown x1.25-2, 10% retired, 10% added from the pool), under the default
# model (the bundled h100), then 856 tables on 128 GPUs (data/tasks/all-128gpu.json drifted) for the time.
#   data/measured/cpu-2core/replan-61/run.sh [PLANS_DIR]     (from the repository root; plans go to /tmp)
set -euo pipefail
here="$(dirname "$0")"
plans="${1:-/tmp/replan-61}"
B="${SHARDPLAN_BINARY:-build/shard-plan}"
P=data/pool.json
lscpu | grep -E "Model name|Vendor ID|^CPU\(s\)" >"$here/cpu.txt"
[ -s "$here/fresh-8gpu.json" ] || "$B" gen-tasks --pool $P --protocol paper-8gpu --seed 6161 --num-tasks 20 -o "$here/fresh-8gpu.json"
[ -s "$here/fresh-32gpu.json" ] || "$B" gen-tasks --pool $P --protocol paper-8gpu --seed 6162 --num-tasks 10 --gpus 32 \
  --min-tables 80 --max-tables 480 --name fresh-32gpu -o "$here/fresh-32gpu.json"
[ -s "$here/drift-8gpu.json" ] || "$B" gen-tasks --drift "$here/fresh-8gpu.json" --pool $P --seed 6163 -o "$here/drift-8gpu.json"
[ -s "$here/drift-32gpu.json" ] || "$B" gen-tasks --drift "$here/fresh-32gpu.json" --pool $P --seed 6164 -o "$here/drift-32gpu.json"
[ -s "$here/drift-128gpu.json" ] || "$B" gen-tasks --drift data/tasks/all-128gpu.json --pool $P --seed 6165 -o "$here/drift-128gpu.json"
for set in 8gpu 32gpu; do
  tools/replan-bench --binary "$B" --old "$here/fresh-$set.json" --new "$here/drift-$set.json" --out "$plans/$set" \
    --budget 0 --budget 10% >"$here/summary-$set.json"
  cp "$plans/$set/replan.json" "$here/replan-$set.json"
done
tools/replan-bench --binary "$B" --old data/tasks/all-128gpu.json --new "$here/drift-128gpu.json" --out "$plans/128gpu" \
  --budget 0 --budget 10% >"$here/summary-128gpu.json"
cp "$plans/128gpu/replan.json" "$here/replan-128gpu.json"
# Whole shards only, as the Python replan plans (--keep-shapes).
tools/replan-bench --binary "$B" --old "$here/fresh-8gpu.json" --new "$here/drift-8gpu.json" --out "$plans/keep-8gpu" \
  --budget 0 --budget 10% --replan-args=--keep-shapes >"$here/summary-keep-shapes-8gpu.json"
tools/replan-bench --binary "$B" --old "$here/fresh-32gpu.json" --new "$here/drift-32gpu.json" --out "$plans/keep-32gpu" \
  --budget 10% --replan-args=--keep-shapes >"$here/summary-keep-shapes-32gpu.json"
# A second fresh pair of sets (seeds 7171-7174), to check a change of the search beyond the first.
[ -s "$here/fresh2-8gpu.json" ] || "$B" gen-tasks --pool $P --protocol paper-8gpu --seed 7171 --num-tasks 20 -o "$here/fresh2-8gpu.json"
[ -s "$here/drift2-8gpu.json" ] || "$B" gen-tasks --drift "$here/fresh2-8gpu.json" --pool $P --seed 7172 -o "$here/drift2-8gpu.json"
[ -s "$here/fresh2-32gpu.json" ] || "$B" gen-tasks --pool $P --protocol paper-8gpu --seed 7173 --num-tasks 10 --gpus 32 \
  --min-tables 80 --max-tables 480 --name fresh-32gpu -o "$here/fresh2-32gpu.json"
[ -s "$here/drift2-32gpu.json" ] || "$B" gen-tasks --drift "$here/fresh2-32gpu.json" --pool $P --seed 7174 -o "$here/drift2-32gpu.json"
for set in 8gpu 32gpu; do
  tools/replan-bench --binary "$B" --old "$here/fresh2-$set.json" --new "$here/drift2-$set.json" --out "$plans/second-$set" \
    --budget 0 --budget 10% >"$here/summary2-$set-${SHARDPLAN_BINARY_LABEL:-new}.json"
done
