#!/usr/bin/env python3
"""Times plans already made on the real stack (python -m shardplan.measure) built two ways: as planned
(TorchRec runs table-wise and column-wise tables as two groups of all-to-alls, `--separate-groups`) and
as one group (table-wise tables built as single-shard column-wise ones, the bridge's default).

  measure_groups.py PLANS_DIR TASKS_JSON MODE OUT.json [--passes N]

For each task i of TASKS_JSON with PLANS_DIR/neuroshard-i.json and PLANS_DIR/torchrec_planner-i.json
(its tables are written to tables-i.json beside OUT.json): neuroshard one group, neuroshard as planned, TorchRec's plan (one group: it has no
column-wise tables, so both builds are the same), in an order rotated from task to task. Resumes from
OUT.json: what it holds is kept. Run from the source tree's root with .venv and build/shard-plan."""
import argparse
import json
import os
import subprocess
import sys

VARIANTS = [("neuroshard_one_group", "neuroshard", []), ("neuroshard_as_planned", "neuroshard", ["--separate-groups"]),
            ("torchrec_planner", "torchrec_planner", [])]


def measure(plan, tables, mode, extra, scratch, keep):
    env = dict(os.environ, SHARDPLAN_BINARY=os.path.abspath("build/shard-plan"), PYTHONFAULTHANDLER="1",
               PYTHONPATH=os.path.abspath("python"))
    cmd = [".venv/bin/python", "-m", "shardplan.measure", "--plan", plan, "--tables", tables, "--mode", mode,
           "-o", scratch] + extra
    for attempt in (1, 2):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode == 0:
            break
        print(f"attempt {attempt}: {' '.join(cmd)}: exit {r.returncode}\n{r.stderr[-1500:]}", file=sys.stderr)
        if attempt == 2:
            raise SystemExit(1)
    with open(scratch) as f:
        doc = json.load(f)
    os.makedirs(os.path.dirname(keep), exist_ok=True)
    os.replace(scratch, keep)  # the whole measurement, every rank's figures
    m = doc["measured"]
    devices = doc["devices"]
    return {"max_compute_ms": m["max_compute_ms"], "max_step_ms": m["max_total_ms"],
            "max_output_a2a_ms": max(d["measured_output_a2a_fw_ms"] + d["measured_output_a2a_bw_ms"] for d in devices),
            "max_fw_comm_ms": max(d["measured_fw_comm_ms"] for d in devices),
            "max_bw_comm_ms": max(d["measured_bw_comm_ms"] for d in devices)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("plans")
    p.add_argument("tasks")
    p.add_argument("mode", choices=("per-rank", "step"))
    p.add_argument("out")
    p.add_argument("--passes", type=int, default=1)
    p.add_argument("--variants", default=",".join(v for v, _, _ in VARIANTS),
                   help="the builds to time, comma-separated (default: all three)")
    a = p.parse_args()
    chosen = a.variants.split(",")
    unknown = [v for v in chosen if v not in {v for v, _, _ in VARIANTS}]
    if unknown:
        raise SystemExit(f"--variants: unknown {unknown}")
    variants = [v for v in VARIANTS if v[0] in chosen]
    with open(a.tasks) as f:
        tasks = json.load(f)["tasks"]
    n_tasks = len(tasks)
    scratch_dir = os.path.dirname(os.path.abspath(a.out))
    done = {}
    if os.path.exists(a.out):
        with open(a.out) as f:
            done = json.load(f)["measured"]
    for pass_ in range(a.passes):
        for i in range(n_tasks):
            plans = {v: os.path.join(a.plans, f"{src}-{i}.json") for v, src, _ in variants}
            if not all(os.path.exists(x) for x in plans.values()):
                continue
            tables = os.path.join(scratch_dir, f"tables-{i}.json")
            with open(tables, "w") as f:
                json.dump({"tables": tasks[i]["tables"]}, f)
            k = (i + pass_) % len(variants)
            for label, _, extra in variants[k:] + variants[:k]:
                key = f"{i}/{pass_}/{label}"
                if key in done:
                    continue
                done[key] = measure(plans[label], tables, a.mode, extra, a.out + ".last",
                                    os.path.join(scratch_dir, "docs", key.replace("/", "-") + ".json"))
                tmp = a.out + ".tmp"
                with open(tmp, "w") as f:
                    json.dump({"plans": a.plans, "tasks": a.tasks, "mode": a.mode, "measured": done}, f, indent=1)
                os.replace(tmp, a.out)
                print(key, json.dumps(done[key]), flush=True)


if __name__ == "__main__":
    main()
