#!/usr/bin/env bash
# #45 item 3's loop variant: plans of the calibrated TBE model with --measure-loop 8 --kernel fbgemm-tbe,
# timed against TorchRec's planner's on the real stack (4 GPUs, per-rank), one pass.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; cd "$here/../../../.."
M=data/measured/cpu-2core/fbgemm-tbe/calibrated
T=data/measured/cpu-2core/torchrec-stack
O=${1:-$here/loop4}
mkdir -p $O
.venv/bin/python - "$M" "$O" <<'PY'
import json, os, subprocess, sys
model, out = sys.argv[1], sys.argv[2]
T = "data/measured/cpu-2core/torchrec-stack"
tasks = json.load(open(f"{T}/fresh-4gpu.json"))
for i, task in enumerate(tasks["tasks"]):
    theirs = f"{T}/pm4/torchrec_planner-{i}.json"
    ours = f"{out}/neuroshard-{i}.json"
    if not os.path.exists(theirs) or os.path.exists(ours):
        continue
    subprocess.run(["cp", theirs, f"{out}/torchrec_planner-{i}.json"], check=True)
    tables = f"{out}/tables-{i}.json"
    json.dump({"tables": task["tables"]}, open(tables, "w"))
    subprocess.run(["build/shard-plan", "--tables", tables, "--gpus", str(tasks["num_devices"]), "--mem-per-gpu",
                    str(tasks["memory_per_device_bytes"]), "-o", ours, "-q", "--model", model, "--measure-loop", "8",
                    "--kernel", "fbgemm-tbe", "--sharding-types", "table_wise,column_wise,data_parallel"], check=True)
PY
data/measured/cpu-2core/torchrec-groups/measure_groups.py $O $T/fresh-4gpu.json per-rank $O/groups.json \
  --variants neuroshard_one_group,torchrec_planner

