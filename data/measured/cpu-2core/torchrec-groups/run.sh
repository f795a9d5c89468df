#!/usr/bin/env bash
# The measurement of README.md: neuroshard (models/cpu-fbgemm) built as one group and as planned, and
# TorchRec's planner's plans from #40, on the real stack. `run.sh [DIR]` (default: this folder) plans
# into DIR/g4 and DIR/g2 and times there; it resumes where a stopped run left off.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../../../.."
D=${1:-$here}
T=data/measured/cpu-2core/torchrec-stack
lscpu | grep -E 'Model name|^CPU\(s\)|Vendor' > "$D/cpu.txt"
for n in 4 2; do
  "$here/plan_tasks.py" "$n" "$D/g$n" --model models/cpu-fbgemm --sharding-types table_wise,column_wise,data_parallel
  mode=$([ "$n" = 4 ] && echo per-rank || echo step)
  "$here/measure_groups.py" "$D/g$n" "$T/fresh-${n}gpu.json" "$mode" "$D/g$n/groups.json"
done
"$here/summarise.py" "$D/g4/groups.json" "$D/g2/groups.json"
