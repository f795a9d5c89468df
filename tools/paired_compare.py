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

Pooled over several task sets, each with its own labels (a planner's label may differ from set to set):

  tools/paired_compare.py --pool s2042/measured.json:calloop:torchrec --pool s2043/measured.json:commloop:torchrec

prints each set's statistics under "sets" and, under "pooled", the same statistics over all their tasks
together: one set of 20 tasks rarely reaches |t| >= 2 on a noisy host, and picking the set that did would
be fishing.
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


# Measured per task, and the model's figure for it: the predicted step is the plan cost.
QUANTITIES = (("task_max_compute_ms", "max_compute", lambda algo: algo["measured"].get("task_predicted_max_compute_ms")),
              ("task_max_step_ms", "max_step", lambda algo: algo.get("task_costs_ms")))


class BadInput(Exception):
    pass


def load_pair(path, a, b):
    """The two algorithms' entries of one result file; BadInput when either has no measurement."""
    with open(path) as f:
        doc = json.load(f)
    algos = doc.get("algorithms", {})
    for name in (a, b):
        if name not in algos or "measured" not in algos[name]:
            raise BadInput(f"{path}: no measured per-task results for {name} (run bench with --measure N --json --per-task)")
    return doc, algos[a], algos[b]


def series(algo_a, algo_b, key, predicted):
    """Per task: measured a and b, predicted a and b (None lists where the file has no predictions)."""
    if key not in algo_a["measured"] or key not in algo_b["measured"]:
        return None
    return algo_a["measured"][key], algo_b["measured"][key], predicted(algo_a), predicted(algo_b)


def pad(values, n):
    """`values` as a list of n, None where it is missing or short."""
    values = values or []
    return [values[i] if i < len(values) else None for i in range(n)]


def compare_one(path, a, b, pooled=None):
    """One file's statistics; with `pooled` (label: four columns), its tasks are appended there too, and a
    quantity this file lacks is dropped from it: the pool holds only what every set measured."""
    doc, algo_a, algo_b = load_pair(path, a, b)
    out = {"task_set": doc.get("task_set"), "cost_model": doc.get("cost_model"), "a": a, "b": b}
    for key, label, predicted in QUANTITIES:
        s = series(algo_a, algo_b, key, predicted)
        if s is not None:
            out[label] = paired(*s)
        if pooled is None or label not in pooled:
            continue
        if s is None:
            del pooled[label]
            continue
        n = min(len(s[0]), len(s[1]))
        for column, values in zip(pooled[label], s):
            column.extend(pad(values, n))
    return out


def compare_pooled(triples):
    pooled = {label: ([], [], [], []) for _, label, _ in QUANTITIES}
    sets = [compare_one(path, a, b, pooled) | {"file": path} for path, a, b in triples]
    return {"sets": sets, "pooled": {label: paired(*columns) for label, columns in pooled.items()}}


def parse_triple(value):
    parts = value.rsplit(":", 2)
    if len(parts) != 3 or not all(parts):
        raise BadInput(f"--pool: expected FILE:A:B, got {value!r}")
    return parts


def main(argv):
    args = argv[1:]
    try:
        if args and args[0] == "--pool":
            if len(args) % 2 != 0 or any(flag != "--pool" for flag in args[0::2]):
                raise BadInput("usage: paired_compare.py --pool FILE:A:B [--pool FILE:A:B ...]")
            out = compare_pooled([parse_triple(v) for v in args[1::2]])
        elif len(args) == 3:
            out = compare_one(*args)
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (BadInput, OSError, json.JSONDecodeError) as e:
        print(f"paired_compare: {e}", file=sys.stderr)
        return 2
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
