#!/usr/bin/env bash
# #17's targets end to end on a fresh set (seed 2044), decided before seeing any figure.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
B=build/shard-plan
D=${1:-/tmp/m44}; mkdir -p "$D"
date -u > $D/started
lscpu | grep -E 'Model name|^CPU\(s\)|Vendor' > $D/cpu.txt
$B gen-tasks --pool data/pool.json --protocol paper-4gpu --seed 2044 --num-tasks 20 -o $D/fresh.json
start=$(date +%s.%N)
$B calibrate --out $D/cal --comm-ranks 4 > $D/cal.out 2> $D/cal.err
echo "calibrate wall $(echo "$(date +%s.%N) - $start" | bc) s" > $D/cal.time
$B calibrate --out $D/held --seed 7 --samples 150 > $D/held.out 2> $D/held.err || true
$B pretrain-cost-model --data $D/cal/calibration --comm-from models/cpu-2core --out $D/scratch > $D/scratch.out 2> $D/scratch.err
for m in models/cpu-2core $D/cal $D/scratch; do
  echo "== $m" >> $D/eval.txt
  $B eval-cost-model --model $m --data $D/held/calibration >> $D/eval.txt 2>&1
done
tools/paired-measure --tasks $D/fresh.json --out $D/pm --passes 3 \
  --planner 'neuroshard=' \
  --planner "commloop=--model $D/cal --measure-loop 8 --measure-loop-rivals torchrec" \
  --planner 'torchrec=--algo torchrec' > $D/pm.out 2> $D/pm.err
date -u > $D/finished
