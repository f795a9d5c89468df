#!/usr/bin/env python3
"""Splits the paired ratios of A against B by whether one table bounds A's plan: A's slowest rank, measured,
at least 1.4 times its ranks' mean (a rank holding one heavy table that the search kept whole), and prints the
slowest rank's compute and the step for each group, and for the tasks pooled over every file given.
  bound_by_one_table.py A:B MEASURED_JSON ...   (standard library only; times nothing)"""
import json, math, os, statistics as st, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "loop-and-all-types"), os.path.join(HERE, "..", "loop-budget")]
from analyse import t_stat  # noqa: E402
from pooled import task_log_ratios  # noqa: E402

BOUND = 1.4
KEYS = ("max_compute_ms", "max_step_ms")


def bound_by_one_table(runs):
    ranks = len(runs[0]["device_compute_ms"])
    per_rank = [st.mean(r["device_compute_ms"][i][1] for r in runs) for i in range(ranks)]
    return max(per_rank) >= BOUND * st.mean(per_rank)


def main():
    a, b = sys.argv[1].split(":")
    groups = {bound: {key: [] for key in KEYS} for bound in (True, False)}
    for path in sys.argv[2:]:
        runs_a = json.load(open(path))["algorithms"][a]["passes"]
        logs = {key: task_log_ratios(path, a, b, key) for key in KEYS}
        for task in logs[KEYS[0]]:
            group = groups[bound_by_one_table(runs_a[task])]
            for key in KEYS:
                group[key].append(logs[key][task])
    for bound, group in groups.items():
        label = f"{a}'s slowest rank >= {BOUND}x its mean" if bound else "the other tasks"
        figures = ", ".join(f"{key} {math.exp(st.mean(v)):.3f} (t = {t_stat(v):+.2f})" for key, v in group.items() if v)
        print(f"{label}: {len(group[KEYS[0]])} tasks, {figures}")


if __name__ == "__main__":
    main()
