#!/usr/bin/env bash
# #42's speed target: planning time against the build before #42 (PRE, 408c7b7^ built the same way),
# paired in one run, alternating the binaries, nothing else running; both bundled models, named
# explicitly (the default model on a machine changed after 408c7b7^; models/default is models/cpu-2core).
# Usage: run.sh PRE_CHECKOUT NOW_BINARY [REPS]  (PRE_CHECKOUT/build/shard-plan and its models/)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; cd "$here/../../../.."
pre=$1; now=$2; reps=${3:-3}; out=${OUT_DIR:-$here}
lscpu | grep -E 'Model name|^CPU\(s\)|Vendor' > "$out/cpu.txt"
for rep in $(seq 1 "$reps"); do
  for who in pre now; do
    if [ $who = pre ]; then bin=$pre/build/shard-plan; cpu=$pre/models/default; h100=$pre/models/h100
    else bin=$now; cpu=models/cpu-2core; h100=models/h100; fi
    for model in cpu h100; do
      dir=$cpu; [ $model = h100 ] && dir=$h100
      for set in paper-4gpu paper-8gpu; do
        "$bin" bench --tasks data/tasks/$set.json --algos neuroshard --model "$dir" --json -q > "$out/bench-$set-$model-$who-$rep.json"
      done
    done
    tools/scale-bench --binary "$bin" --cases 856x128,5000x1024 --json -- --model "$cpu" > "$out/scale-$who-$rep.json" 2> /dev/null
  done
done
