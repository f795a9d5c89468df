#!/usr/bin/env bash
# Production configs planned by this build and by BEFORE (a build of 299e6c9, before the search's own
# row-wise starts), with models/h100 on h100-sxm-ib400, rowwise_adagrad, 80 GB GPUs:
#   run.sh /tmp/before/build/shard-plan
set -uo pipefail
before=$1
here="$(cd "$(dirname "$0")" && pwd)"; cd "$here/../../../.."
w=$(mktemp -d)
plan() {  # binary, config, gpus, model
  /usr/bin/time -f "%e s whole process" "$1" --tables "data/configs/$2" --gpus "$3" --mem-per-gpu 80GB \
    --optimizer rowwise_adagrad --hardware h100-sxm-ib400 --model "$4" -o "$w/p.json" 2>&1 |
    grep -E "cost \(|vs best|start:|row-wise blocks|error|whole process"
  [ -f "$w/p.json" ] && build/shard-plan validate --plan "$w/p.json" --tables "data/configs/$2" | tail -1
  rm -f "$w/p.json"
}
for bin in "$before" build/shard-plan; do
  for g in 64 128; do
    for m in models/h100 models/cpu-2core; do echo "== $bin hugectr-7table-470b $g GPUs $m"; plan "$bin" hugectr-7table-470b.json $g $m; done
  done
  for g in 256 512 1024; do echo "== $bin synthetic-1200-tables $g GPUs"; plan "$bin" synthetic-1200-tables.json $g models/h100; done
done
