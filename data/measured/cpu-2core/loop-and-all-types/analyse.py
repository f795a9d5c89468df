#!/usr/bin/env python3
"""Prints this run's figures: per pair of planners, the slowest rank's compute and the step, paired per
task (geometric mean of the two passes' ratio, paired t of the log ratios, tasks where the first is
faster), the predicted ratio and its correlation with the measured one, and how far the measurement
repeats itself: the correlation of the two passes' per-task log ratios, and the ceiling that puts on any
prediction's correlation with their mean (Spearman-Brown: sqrt(2r / (1 + r))).
  analyse.py [MEASURED_JSON A:B ...]   (default: pm4/measured.json and this run's pairs)"""
import json, math, os, statistics as st, sys

here = os.path.dirname(os.path.abspath(__file__))


def corr(x, y):
    mx, my = st.mean(x), st.mean(y)
    sx = math.sqrt(sum((a - mx) ** 2 for a in x))
    sy = math.sqrt(sum((b - my) ** 2 for b in y))
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / (sx * sy) if sx > 0 and sy > 0 else float("nan")


def t_stat(x):
    return st.mean(x) / (st.stdev(x) / math.sqrt(len(x))) if len(x) > 1 and st.stdev(x) > 0 else float("nan")


def compare(algos, a, b, key, predicted_key):
    per_pass, mean, predicted = ([], []), [], []
    for task, runs_a in algos[a]["passes"].items():
        runs_b = algos[b]["passes"].get(task, [])
        if len(runs_a) < 2 or len(runs_b) < 2 or any(r.get(key) is None for r in runs_a[:2] + runs_b[:2]):
            continue  # unmeasured, or a compute-only timing (no step)
        ratios = [math.log(runs_a[p][key] / runs_b[p][key]) for p in range(2)]
        for p in range(2):
            per_pass[p].append(ratios[p])
        mean.append(sum(ratios) / 2)
        if predicted_key:
            predicted.append(math.log(runs_a[0][predicted_key] / runs_b[0][predicted_key]))
    if not mean:
        return
    r = corr(*per_pass)
    line = (f"{a} / {b}, {key}: {math.exp(st.mean(mean)):.3f} (t = {t_stat(mean):+.2f}, {sum(m < 0 for m in mean)} of "
            f"{len(mean)} lower); passes agree r = {r:.2f}")
    if r > 0:
        line += f" (ceiling {math.sqrt(2 * r / (1 + r)):.2f})"
    if predicted:
        line += f"; predicted {math.exp(st.mean(predicted)):.3f}, correlation {corr(predicted, mean):.2f}"
    print(line)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "pm4", "measured.json")
    pairs = sys.argv[2:] or ["inputids:cw32", "inputids:alltypes", "loop:cw32", "loop:alltypes", "loop:inputids",
                             "alltypes:cw32"]
    algos = json.load(open(path))["algorithms"]
    for pair in pairs:
        a, b = pair.split(":")
        compare(algos, a, b, "max_compute_ms", "predicted_max_compute_ms")
        compare(algos, a, b, "max_step_ms", None)


if __name__ == "__main__":
    main()
