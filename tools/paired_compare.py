#!/usr/bin/env python3
"""Paired comparison of two algorithms in a `shard-plan bench --json --per-task` result.

For each measured quantity (max compute, and the whole step when --measure-comm ran), over the tasks where
both algorithms have a measurement: the means, the geometric mean of the per-task ratio A/B, how many
tasks A was faster, and the paired t statistic of the log ratios (negative: A faster). Standard library.

Beside it, "predicted": the same statistics of the model's figures on the same tasks (bench files that
carry them), and the correlation of the per-task log ratios, predicted against measured. A measured
ratio near the predicted one says the model told the truth and the gap is the planner's objective; a
measured ratio far from it, with a low correlation, says the model's promise did not hold.

  shard-plan bench --tasks T --algos a,b --measure 20 --json --per-task > bench.json
  tools/paired_compare.py bench.json a b
"""
import json
import math
import sys


def usable(*values):
    return all(v is not None and v > 0 for v in values)


def paired(a, b, predicted_a=None, predicted_b=None):
    keep = [i for i in range(min(len(a), len(b))) if usable(a[i], b[i])]
    if predicted_a is not None and predicted_b is not None:
        with_prediction = [i for i in keep if i < len(predicted_a) and i < len(predicted_b)
                           and usable(predicted_a[i], predicted_b[i])]
        if len(with_prediction) < len(keep):  # a measured task without its prediction: compare none rather than fewer
            predicted_a = predicted_b = None
    if not keep:
        return None
    out = summary([a[i] for i in keep], [b[i] for i in keep])
    if predicted_a is not None and predicted_b is not None:
        predicted = summary([predicted_a[i] for i in keep], [predicted_b[i] for i in keep])
        predicted["correlation_with_measured"] = correlation(
            [math.log(predicted_a[i] / predicted_b[i]) for i in keep], [math.log(a[i] / b[i]) for i in keep])
        out["predicted"] = predicted
    return out


def summary(a, b):
    n = len(a)
    logs = [math.log(x / y) for x, y in zip(a, b)]
    mean = sum(logs) / n
    var = sum((v - mean) ** 2 for v in logs) / (n - 1) if n > 1 else 0.0
    t = mean / math.sqrt(var / n) if var > 0 else float("nan")
    return {
        "tasks": n,
        "mean_a": sum(a) / n,
        "mean_b": sum(b) / n,
        "geomean_ratio": math.exp(mean),
        "a_faster": sum(1 for x, y in zip(a, b) if x < y),
        "t_log_ratio": t,
    }


def correlation(xs, ys):
    n = len(xs)
    if n < 2:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


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
    # measured per task, and the model's figure for it: the predicted step is the plan cost
    quantities = (("task_max_compute_ms", "max_compute", lambda algo: algo["measured"].get("task_predicted_max_compute_ms")),
                  ("task_max_step_ms", "max_step", lambda algo: algo.get("task_costs_ms")))
    for key, label, predicted in quantities:
        if key in algos[a]["measured"] and key in algos[b]["measured"]:
            out[label] = paired(algos[a]["measured"][key], algos[b]["measured"][key],
                                predicted(algos[a]), predicted(algos[b]))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
