#!/usr/bin/env python3
"""Plans #40's fresh tasks with neuroshard for measure_groups.py, beside TorchRec's planner's plans of #40.

  plan_tasks.py N OUT_DIR [shard-plan flags ...]     (from the source tree's root)

For each task i of data/measured/cpu-2core/torchrec-stack/fresh-{N}gpu.json that TorchRec's planner
planned (pm{N}/torchrec_planner-i.json): copies that plan, writes tables-i.json, and plans
neuroshard-i.json with build/shard-plan and the given flags. A plan already there is kept."""
import json
import os
import shutil
import subprocess
import sys

T = "data/measured/cpu-2core/torchrec-stack"


def main():
    n, out, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(out, exist_ok=True)
    with open(f"{T}/fresh-{n}gpu.json") as f:
        tasks = json.load(f)
    for i, task in enumerate(tasks["tasks"]):
        theirs, ours = f"{T}/pm{n}/torchrec_planner-{i}.json", f"{out}/neuroshard-{i}.json"
        if not os.path.exists(theirs) or os.path.exists(ours):
            continue
        shutil.copy(theirs, f"{out}/torchrec_planner-{i}.json")
        tables = f"{out}/tables-{i}.json"
        with open(tables, "w") as f:
            json.dump({"tables": task["tables"]}, f)
        subprocess.run(["build/shard-plan", "--tables", tables, "--gpus", str(tasks["num_devices"]), "--mem-per-gpu",
                        str(tasks["memory_per_device_bytes"]), "-o", ours, "-q", *flags], check=True)


if __name__ == "__main__":
    main()
