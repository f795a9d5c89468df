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
  mkdir -p "$D/g$n"
  .venv/bin/python - "$n" "$D/g$n" <<'PY'
import json, os, subprocess, sys
n, out = sys.argv[1], sys.argv[2]
T = "data/measured/cpu-2core/torchrec-stack"
tasks = json.load(open(f"{T}/fresh-{n}gpu.json"))
for i, task in enumerate(tasks["tasks"]):
    theirs = f"{T}/pm{n}/torchrec_planner-{i}.json"
    ours = f"{out}/neuroshard-{i}.json"
    if not os.path.exists(theirs) or os.path.exists(ours):
        continue
    subprocess.run(["cp", theirs, f"{out}/torchrec_planner-{i}.json"], check=True)
    tables = f"{out}/tables-{i}.json"
    json.dump({"tables": task["tables"]}, open(tables, "w"))
    subprocess.run(["build/shard-plan", "--tables", tables, "--gpus", str(tasks["num_devices"]), "--mem-per-gpu",
                    str(tasks["memory_per_device_bytes"]), "-o", ours, "-q", "--model", "models/cpu-fbgemm",
                    "--sharding-types", "table_wise,column_wise,data_parallel"], check=True)
PY
  mode=$([ "$n" = 4 ] && echo per-rank || echo step)
  "$here/measure_groups.py" "$D/g$n" "$T/fresh-${n}gpu.json" "$mode" "$D/g$n/groups.json"
done
"$here/summarise.py" "$D/g4/groups.json" "$D/g2/groups.json"
