#!/usr/bin/env bash
# #42's never-worse target after the speed-ups, on fresh tasks (seeds not used before): every planner,
# both bundled models, per task. count_losses.py prints the tasks where a baseline scores below neuroshard.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; cd "$here/../../../../.."
B=${1:-build/shard-plan}
$B gen-tasks --pool data/pool.json --protocol paper-8gpu --seed 6301 --num-tasks 20 -o $here/fresh-8gpu.json > /dev/null
$B gen-tasks --pool data/pool.json --protocol paper-8gpu --seed 6302 --num-tasks 20 --gpus 32 --min-tables 60 \
  --max-tables 240 -o $here/fresh-32gpu.json > /dev/null
for n in 8 32; do for m in cpu-2core h100; do
  $B bench --tasks $here/fresh-${n}gpu.json --model models/$m --json --per-task -q > $here/bench-$n-$m.json
done; done
