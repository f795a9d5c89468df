#!/usr/bin/env python3
"""Splits the paired ratios of A against B by whether one table bounds A's plan: A's slowest rank, measured,
at least 1.4 times its ranks' mean (a rank holding one heavy table that the search kept whole), and prints the
slowest rank's compute and the step for each group, and for the tasks pooled over every file given.
  bound_by_one_table.py A:B MEASURED_JSON ...   (standard library only; times nothing)"""
import json, math, statistics as st, sys

BOUND = 1.4


def t_stat(x):
    return st.mean(x) / (st.stdev(x) / math.sqrt(len(x))) if len(x) > 1 and st.stdev(x) > 0 else float("nan")


def bound_by_one_table(runs):
    ranks = len(runs[0]["device_compute_ms"])
    per_rank = [st.mean(r["device_compute_ms"][i][1] for r in runs) for i in range(ranks)]
    return max(per_rank) >= BOUND * st.mean(per_rank)


def main():
    a, b = sys.argv[1].split(":")
    groups = {True: {"max_compute_ms": [], "max_step_ms": []}, False: {"max_compute_ms": [], "max_step_ms": []}}
    for path in sys.argv[2:]:
        algos = json.load(open(path))["algorithms"]
        for task, runs_a in algos[a]["passes"].items():
            runs_b = algos[b]["passes"].get(task)
            if not runs_b or len(runs_a) < 2 or len(runs_b) < 2:
                continue
            group = groups[bound_by_one_table(runs_a)]
            for key in group:
                group[key].append(st.mean(math.log(x[key] / y[key]) for x, y in zip(runs_a[:2], runs_b[:2])))
    for bound, group in groups.items():
        label = f"{a}'s slowest rank >= {BOUND}x its mean" if bound else "the other tasks"
        figures = ", ".join(f"{key} {math.exp(st.mean(v)):.3f} (t = {t_stat(v):+.2f})" for key, v in group.items() if v)
        print(f"{label}: {len(group['max_compute_ms'])} tasks, {figures}")


main()
