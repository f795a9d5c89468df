#!/usr/bin/env python3
"""Prints every figure of README.md from the measurements in ../torchrec-groups (run from the source
tree's root with .venv's python, after building build/shard-plan):

  analyse.py [MODEL_DIR ...]

the step, compute and comm per run and planner; least squares of a rank's comm on plan features, per rank
and paired within a task; and, for each MODEL_DIR, the correlation over the 4-GPU tasks of the per-task
log ratio (neuroshard's step over TorchRec's) predicted by `shard-plan evaluate` against measured."""
import collections
import glob
import json
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

G = "data/measured/cpu-2core/torchrec-groups"
TASKS = "data/measured/cpu-2core/torchrec-stack/fresh-{}gpu.json"
VARIANTS = ("neuroshard_one_group", "torchrec_planner")


def plan_of(g, variant, task):
    return f"{G}/{g}/{'neuroshard' if variant.startswith('neuroshard') else 'torchrec_planner'}-{task}.json"


def step_table():
    print("run planner: mean of slowest rank's compute, step, a rank's comm (ms)")
    for g in ("g4", "g2"):
        for v in VARIANTS:
            docs = [json.load(open(f)) for f in glob.glob(f"{G}/{g}/docs/*-{v}.json")]
            comp = np.mean([d["measured"]["max_compute_ms"] for d in docs])
            step = np.mean([d["measured"]["max_total_ms"] for d in docs])
            comm = np.mean([np.mean([x["measured_fw_comm_ms"] + x["measured_bw_comm_ms"] for x in d["devices"]]) for d in docs])
            print(f"  {g} {v} ({len(docs)} tasks): {comp:.2f} {step:.2f} {comm:.2f}")


def rank_rows():
    tasks = json.load(open(TASKS.format(4)))["tasks"]
    rows = []
    for path in sorted(glob.glob(f"{G}/g4/docs/*.json")):
        m = re.match(r"(\d+)-\d+-(.*)\.json", os.path.basename(path))
        task, variant = int(m.group(1)), m.group(2)
        if variant not in VARIANTS:
            continue
        plan, doc = json.load(open(plan_of("g4", variant, task))), json.load(open(path))
        pf = {t["name"]: t.get("pooling_factor", 1.0) for t in tasks[task]["tables"]}
        width, ids = np.zeros(plan["num_devices"]), np.zeros(plan["num_devices"])
        dp = 0.0
        for t in plan["tables"]:
            if t["sharding_type"] == "data_parallel":
                dp += t["rows"] * t["dim"] * 4 / 1e6
                continue
            for s in t["shards"]:
                width[s["rank"]] += s["shard_sizes"][1]
                ids[s["rank"]] += pf[t["name"]]
        for d in doc["devices"]:
            r = d["rank"]
            rows.append({"variant": variant, "task": task, "width": width[r], "ids": ids[r], "total_width": width.sum(),
                         "total_ids": ids.sum(), "dp_mb": dp, "compute": d["measured_compute_ms"],
                         "comm": d["measured_fw_comm_ms"] + d["measured_bw_comm_ms"]})
    return rows


def r2_of(y, columns):
    x = np.column_stack([np.ones(len(y))] + columns)
    beta = np.linalg.lstsq(x, y, rcond=None)[0]
    return 1 - ((y - x @ beta) ** 2).sum() / ((y - y.mean()) ** 2).sum()


def regressions(rows):
    y = np.array([r["comm"] for r in rows])
    print(f"a rank's comm on plan features, {len(rows)} ranks: R^2")
    for keys in (["width"], ["ids"], ["total_width"], ["total_width", "total_ids", "dp_mb"]):
        print(f"  {'+'.join(keys)}: {r2_of(y, [np.array([r[k] for r in rows]) for k in keys]):.3f}")
    by = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows:
        by[r["task"]][r["variant"]].append(r)
    diffs = []
    for per in by.values():
        if all(v in per for v in VARIANTS):
            a, b = per[VARIANTS[0]], per[VARIANTS[1]]
            mean = lambda s, k: np.mean([r[k] for r in s])
            diffs.append([mean(a, k) - mean(b, k) for k in ("comm", "total_width", "total_ids", "dp_mb")])
    d = np.array(diffs)
    print(f"paired within a task ({len(d)} tasks), neuroshard minus TorchRec: mean comm {d[:, 0].mean():+.2f} ms, "
          f"total ids {d[:, 2].mean():+.1f}; R^2 on total width {r2_of(d[:, 0], [d[:, 1]]):.3f}, total ids "
          f"{r2_of(d[:, 0], [d[:, 2]]):.3f}, both with data-parallel MB {r2_of(d[:, 0], [d[:, 1], d[:, 2], d[:, 3]]):.3f}")


def predicted_max(plan, tables, model):
    out = subprocess.run(["build/shard-plan", "evaluate", "--plan", plan, "--tables", tables, "--model", model, "--json",
                          "-q"], capture_output=True, text=True, check=True)
    return max(d["total_ms"] for d in json.loads(out.stdout)["devices"])


def ranking(model):
    tasks = json.load(open(TASKS.format(4)))["tasks"]
    measured = json.load(open(f"{G}/g4/groups.json"))["measured"]
    pred, meas = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i, task in enumerate(tasks):
            steps = [measured.get(f"{i}/0/{v}") for v in VARIANTS]
            if not all(steps):
                continue
            tables = os.path.join(tmp, "tables.json")
            json.dump({"tables": task["tables"]}, open(tables, "w"))
            p = [predicted_max(plan_of("g4", v, i), tables, model) for v in VARIANTS]
            pred.append(math.log(p[0] / p[1]))
            meas.append(math.log(steps[0]["max_step_ms"] / steps[1]["max_step_ms"]))
    print(f"{model}: {len(pred)} tasks, predicted ratio {math.exp(np.mean(pred)):.3f}, measured "
          f"{math.exp(np.mean(meas)):.3f}, correlation of the log ratios {np.corrcoef(pred, meas)[0, 1]:.2f}")


def main():
    step_table()
    regressions(rank_rows())
    for model in sys.argv[1:]:
        ranking(model)


if __name__ == "__main__":
    main()
