#!/usr/bin/env bash
# Does a model fine-tuned on the real stack's per-rank timings predict the real stack's ranks better than the
# one calibrated on FBGEMM's kernel alone (../search-picks/cal)? Written after run.sh's timings, before
# any of the figures below. Two folds by task (tasks 0-9 and 10-19 of pm4/, every planner's plans): the
# TBE-calibrated model fine-tuned on one half's ranks (calibrate --sets), both models scored on the other
# half's (eval-cost-model). Then cal-torchrec/: fine-tuned on all 20 tasks' ranks, for fresh tasks.
#   SHARDPLAN_BINARY=... data/measured/cpu-2core/rounds-41/calibrate.sh      (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
B="${SHARDPLAN_BINARY:-build/shard-plan}"
cal=data/measured/cpu-2core/search-picks/cal
cpu="$(sed -n 's/^Model name: *//p' "$here/cpu.txt")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for half in 0-9 10-19; do
  tools/torchrec-cost-data --measured "$here/pm4" --tasks "$half" --device-model "$cpu" --out "$work/sets-$half"
done
for fold in "0-9 10-19" "10-19 0-9"; do
  set -- $fold
  "$B" calibrate --base "$cal" --sets "$work/sets-$1" --out "$work/tuned-$1" -q
  echo "== tuned on tasks $1, scored on tasks $2"
  echo "-- TBE-calibrated model"; "$B" eval-cost-model --model "$cal" --data "$work/sets-$2" 2>/dev/null | grep compute
  echo "-- fine-tuned on TorchRec's ranks"; "$B" eval-cost-model --model "$work/tuned-$1" --data "$work/sets-$2" 2>/dev/null | grep compute
done
rm -rf "$here/torchrec-sets" "$here/cal-torchrec"
tools/torchrec-cost-data --measured "$here/pm4" --device-model "$cpu" --out "$here/torchrec-sets"
"$B" calibrate --base "$cal" --sets "$here/torchrec-sets" --out "$here/cal-torchrec"
