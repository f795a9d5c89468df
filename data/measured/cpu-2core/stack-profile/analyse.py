#!/usr/bin/env python3
"""Prints every figure of README.md from run.sh's pm4/measured.json and plans (standard library only):
each pair of planners paired per task on the slowest rank's compute and on the step (measured on
TorchRec + FBGEMM), and, per planner, what its plans send: the total output width, the column-wise pieces,
the data-parallel tables, and the ids per sample the input all-to-all carries (each piece of a table
receives all of the table's ids), with the per-task step ratio's correlation to their differences.

  data/measured/cpu-2core/stack-profile/analyse.py [DIR]
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "tools"))
import paired_compare  # noqa: E402


def plan_figures(directory, label, task):
    plan = json.load(open(os.path.join(directory, f"{label}-{task}.json")))
    tables = {t["name"]: t for t in json.load(open(os.path.join(directory, f"tables-{task}.json")))["tables"]}
    width = pieces = dp = 0
    ids = 0.0
    for t in plan["tables"]:
        pf = tables[t["name"]].get("pooling_factor", 1.0)
        if t["sharding_type"] == "data_parallel":
            dp += 1
            continue
        width += t["dim"]
        pieces += len(t["shards"]) if t["sharding_type"] == "column_wise" else 0
        ids += pf * len(t["shards"])
    return {"width": width, "pieces": pieces, "dp": dp, "ids": ids}


def main():
    directory = os.path.join(sys.argv[1] if len(sys.argv) > 1 else HERE, "pm4")
    path = os.path.join(directory, "measured.json")
    doc = json.load(open(path))
    labels = list(doc["algorithms"])
    print(f"{len(doc['measured_tasks'])} tasks, {doc['measured_with']}")
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            out = paired_compare.compare_one(path, a, b)
            for key in ("max_compute", "max_step"):
                s = out[key]
                print(f"  {a} / {b} {key}: {s['geomean_ratio']:.3f} (t = {s['t_log_ratio']:.2f}, {s['a_faster']} of "
                      f"{s['tasks']} lower); means {s['mean_a']:.2f} / {s['mean_b']:.2f} ms")
    tasks = doc["measured_tasks"]
    figures = {l: [plan_figures(directory, l, t) for t in tasks] for l in labels}
    for l in labels:
        n = len(tasks)
        print(f"  {l}: mean total width {sum(f['width'] for f in figures[l]) / n:.0f}, column-wise pieces "
              f"{sum(f['pieces'] for f in figures[l]) / n:.1f}, data-parallel tables {sum(f['dp'] for f in figures[l]) / n:.1f}, "
              f"ids per sample {sum(f['ids'] for f in figures[l]) / n:.1f}")
    within_task_fit(doc, directory, labels, tasks)
    steps = {l: doc["algorithms"][l]["measured"]["task_max_step_ms"] for l in labels}
    a = labels[0]
    for b in labels[1:]:
        ratio = [math.log(steps[a][t] / steps[b][t]) for t in tasks]
        for key in ("width", "ids", "pieces"):
            diff = [figures[a][k][key] - figures[b][k][key] for k in range(len(tasks))]
            print(f"  step log ratio {a}/{b} against the difference in {key}: correlation "
                  f"{paired_compare.correlation(diff, ratio):+.2f}")


def within_task_fit(doc, directory, labels, tasks):
    """Least squares of a plan's step on its slowest rank's compute and its ids per sample, each demeaned
    within its task (60 plans: what separates plans of one task, not tasks)."""
    rows = []
    for t in tasks:
        plans = [(doc["algorithms"][l]["measured"]["task_max_step_ms"][t],
                  doc["algorithms"][l]["measured"]["task_max_compute_ms"][t], plan_figures(directory, l, t)["ids"])
                 for l in labels]
        means = [sum(p[k] for p in plans) / len(plans) for k in range(3)]
        rows += [[p[k] - means[k] for k in range(3)] for p in plans]
    sxx = sum(r[1] * r[1] for r in rows)
    sxz = sum(r[1] * r[2] for r in rows)
    szz = sum(r[2] * r[2] for r in rows)
    sxy = sum(r[1] * r[0] for r in rows)
    szy = sum(r[2] * r[0] for r in rows)
    det = sxx * szz - sxz * sxz
    b_compute, b_ids = (szz * sxy - sxz * szy) / det, (sxx * szy - sxz * sxy) / det
    residual = sum((r[0] - b_compute * r[1] - b_ids * r[2]) ** 2 for r in rows)
    total = sum(r[0] ** 2 for r in rows)
    print(f"  within a task, step = {b_compute:.2f} x max compute + {b_ids:.4f} ms x ids per sample "
          f"(R^2 {1 - residual / total:.2f}, {len(rows)} plans)")


if __name__ == "__main__":
    main()
