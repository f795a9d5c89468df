#!/usr/bin/env bash
# #62 item 4: whole-process wall time of `plan --time-limit` at scale, three runs per case, one after
# another with nothing else running. Pools from gen-pool --seed 1; 16 GiB GPUs; the default model.
#   data/measured/cpu-2core/time-limit-62/run.sh [BINARY]   (prints "tables gpus limit seconds" lines)
set -euo pipefail
binary="$(realpath "${1:-build/shard-plan}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for tables in 20000 100000; do
  "$binary" gen-pool --num-tables "$tables" --seed 1 -o "$work/pool$tables.json" -q
done
for case in "20000 1" "20000 2" "20000 5" "100000 8" "100000 30"; do
  read -r tables limit <<<"$case"
  for run in 1 2 3; do
    start=$(date +%s.%N)
    "$binary" --tables "$work/pool$tables.json" --gpus 4096 --mem-per-gpu 16GiB --time-limit "$limit" \
      -o "$work/plan.json" >/dev/null 2>"$work/err.txt"
    end=$(date +%s.%N)
    echo "$tables 4096 $limit $(echo "$end - $start" | bc -l | xargs printf '%.2f')"
  done
done
