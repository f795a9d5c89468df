#!/usr/bin/env python3
"""Paired comparison of two algorithms in a `shard-plan bench --json --per-task` result.

For each measured quantity (max compute, and the whole step when --measure-comm ran), over the tasks where
both algorithms have a measurement: the means, the geometric mean of the per-task ratio A/B, how many
tasks A was faster, and the paired t statistic of the log ratios (negative: A faster). Standard library.

  shard-plan bench --tasks T --algos a,b --measure 20 --json --per-task > bench.json
  tools/paired_compare.py bench.json a b
"""
import json
import math
import sys


def paired(a, b):
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None and x > 0 and y > 0]
    n = len(pairs)
    if n == 0:
        return None
    logs = [math.log(x / y) for x, y in pairs]
    mean = sum(logs) / n
    var = sum((v - mean) ** 2 for v in logs) / (n - 1) if n > 1 else 0.0
    t = mean / math.sqrt(var / n) if var > 0 else float("nan")
    return {
        "tasks": n,
        "mean_a": sum(x for x, _ in pairs) / n,
        "mean_b": sum(y for _, y in pairs) / n,
        "geomean_ratio": math.exp(mean),
        "a_faster": sum(1 for x, y in pairs if x < y),
        "t_log_ratio": t,
    }


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        doc = json.load(f)
    a, b = argv[2], argv[3]
    algos = doc["algorithms"]
    for name in (a, b):
        if name not in algos or "measured" not in algos[name]:
            print(f"{argv[1]}: no measured per-task results for {name} (run bench with --measure N --json --per-task)",
                  file=sys.stderr)
            return 2
    out = {"task_set": doc.get("task_set"), "cost_model": doc.get("cost_model"), "a": a, "b": b}
    for key, label in (("task_max_compute_ms", "max_compute"), ("task_max_step_ms", "max_step")):
        if key in algos[a]["measured"] and key in algos[b]["measured"]:
            out[label] = paired(algos[a]["measured"][key], algos[b]["measured"][key])
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
