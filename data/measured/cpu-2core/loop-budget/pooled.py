#!/usr/bin/env python3
"""One ratio over several measured sets, paired per task: a planner against a rival, the geometric mean
of each task's passes, pooled over every task of every set (standard library only; times nothing).

  python3 pooled.py A:B KEY MEASURED.json [MEASURED.json ...]     (KEY: max_compute_ms or max_step_ms)
"""
import json
import math
import statistics as st
import sys


def task_log_ratios(path, a, b, key):
    """{task: mean over the passes of log(a / b)}, for the tasks both planners were timed on."""
    algos = json.load(open(path))["algorithms"]
    logs = {}
    for task, runs_a in algos[a]["passes"].items():
        runs_b = algos[b]["passes"].get(task, [])
        passes = min(len(runs_a), len(runs_b))
        if passes:
            logs[task] = st.mean(math.log(runs_a[p][key] / runs_b[p][key]) for p in range(passes))
    return logs


def main():
    a, b = sys.argv[1].split(":")
    key = sys.argv[2]
    logs = []
    for path in sys.argv[3:]:
        mine = list(task_log_ratios(path, a, b, key).values())
        print(f"{path}: {len(mine)} tasks, {a} / {b} {key} {math.exp(st.mean(mine)):.3f}")
        logs += mine
    t = st.mean(logs) / (st.stdev(logs) / math.sqrt(len(logs)))
    lower = sum(x < 0 for x in logs)
    print(f"pooled, {len(logs)} tasks: {math.exp(st.mean(logs)):.3f} (t = {t:+.2f}, {lower} of {len(logs)} lower)")


if __name__ == "__main__":
    main()
