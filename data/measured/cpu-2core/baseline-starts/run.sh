#!/usr/bin/env bash
# Planning time with and without baseline starts, alternated, nothing else running.
here="$(cd "$(dirname "$0")" && pwd)"; cd "$here/../../../.."; out="$here"
for rep in 1 2; do
  tools/scale-bench --cases 856x128,5000x1024 --json > $out/scale-on-$rep.json 2> /dev/null
  tools/scale-bench --cases 856x128,5000x1024 --json -- --no-baseline-starts > $out/scale-off-$rep.json 2> /dev/null
done
for set in paper-4gpu paper-8gpu; do
  build/shard-plan bench --tasks data/tasks/$set.json --algos neuroshard --json --per-task -q > $out/bench-$set-on.json
  build/shard-plan bench --tasks data/tasks/$set.json --algos neuroshard --json --per-task -q --no-baseline-starts > $out/bench-$set-off.json
done

