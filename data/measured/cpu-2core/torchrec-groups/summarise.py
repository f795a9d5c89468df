#!/usr/bin/env python3
"""Pairs measure_groups.py's timings per task: geometric mean of the per-task ratio, paired t of the log
ratios, tasks where the first is faster; for the step and the slowest rank's compute. One group against
as planned also apart for the tasks whose plan has column-wise tables (the builds differ) and the others
(the same build twice: the noise).

  summarise.py groups-4gpu.json [groups-2gpu.json ...]"""
import json
import math
import os
import statistics
import sys

PAIRS = [("neuroshard_one_group", "neuroshard_as_planned"), ("neuroshard_one_group", "torchrec_planner"),
         ("neuroshard_as_planned", "torchrec_planner")]


def per_task(measured, label, figure, only=None):
    """{task: mean over passes of the figure}, for the tasks in `only` (None: all)."""
    values = {}
    for key, m in measured.items():
        task, _, got = key.split("/")
        if got == label and (only is None or int(task) in only):
            values.setdefault(int(task), []).append(m[figure])
    return {t: statistics.fmean(v) for t, v in values.items()}


def split_tasks(plans_dir, measured):
    """The tasks whose neuroshard plan has column-wise tables (the two builds differ), and the others."""
    tasks = {int(k.split("/")[0]) for k in measured}
    differ = set()
    for t in tasks:
        path = os.path.join(plans_dir, f"neuroshard-{t}.json")
        with open(path) as f:
            if any(x["sharding_type"] == "column_wise" for x in json.load(f)["tables"]):
                differ.add(t)
    return differ, tasks - differ


def paired(a, b):
    tasks = sorted(set(a) & set(b))
    logs = [math.log(a[t] / b[t]) for t in tasks]
    n = len(logs)
    if n < 2:
        return {"tasks": n}
    mean = statistics.fmean(logs)
    t = mean / (statistics.stdev(logs) / math.sqrt(n)) if n > 1 and statistics.stdev(logs) > 0 else float("nan")
    return {"tasks": n, "ratio": round(math.exp(mean), 4), "t": round(t, 2), "first_faster": sum(x < 0 for x in logs)}


def main():
    out = {}
    for path in sys.argv[1:]:
        with open(path) as f:
            doc = json.load(f)
        m = doc["measured"]
        res = {}
        for figure in ("max_step_ms", "max_compute_ms", "max_output_a2a_ms"):
            for first, second in PAIRS:
                res[f"{figure}: {first} / {second}"] = paired(per_task(m, first, figure), per_task(m, second, figure))
        differ, same = split_tasks(doc["plans"], m)
        for name, only in (("builds differ", differ), ("builds identical", same)):
            for figure in ("max_step_ms", "max_compute_ms"):
                res[f"{figure}: neuroshard_one_group / neuroshard_as_planned, {name}"] = paired(
                    per_task(m, "neuroshard_one_group", figure, only), per_task(m, "neuroshard_as_planned", figure, only))
        means = {label: round(statistics.fmean(values.values()), 2)
                 for label in ("neuroshard_one_group", "neuroshard_as_planned", "torchrec_planner")
                 if (values := per_task(m, label, "max_step_ms"))}
        out[path] = {"mode": doc["mode"], "mean_max_step_ms": means, "pairs": res}
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
