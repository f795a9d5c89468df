#!/usr/bin/env bash
# Planning time of this build against BEFORE (a build of the commit before per-table constraints, e.g. a
# worktree of 299e6c9 built with scripts/setup.sh), paired in one run, nothing else running:
#   run.sh /tmp/before/build/shard-plan
set -euo pipefail
before=$1
here="$(cd "$(dirname "$0")" && pwd)"; cd "$here/../../../.."
w=$(mktemp -d)
build/shard-plan gen-pool --seed 1 --num-tables 856 -o $w/p856.json --quiet
build/shard-plan gen-pool --seed 1 --num-tables 5000 -o $w/p5000.json --quiet
for c in 856:128 5000:1024; do
  t=${c%:*}; g=${c#*:}
  farm-bench -n 5 --timeout 300 --vs "$before plan --tables $w/p$t.json --gpus $g --mem-per-gpu 16GiB -o $w/b.json --quiet" \
    -- build/shard-plan plan --tables $w/p$t.json --gpus $g --mem-per-gpu 16GiB -o $w/a.json --quiet | grep -E "wall"
  cmp $w/a.json $w/b.json && echo "$t x $g: the same plan"
done
for set in paper-4gpu paper-8gpu; do
  for rep in 1 2; do
    for bin in "$before" build/shard-plan; do
      "$bin" bench --tasks data/tasks/$set.json --algos neuroshard --json -q |
        python3 -c "import json,sys; x=json.load(sys.stdin)['algorithms']['neuroshard']; print('$set', '$bin', round(1e3*x['median_plan_seconds'], 2), 'ms median,', x['mean_cost_ms'], 'ms mean predicted')"
    done
  done
done
