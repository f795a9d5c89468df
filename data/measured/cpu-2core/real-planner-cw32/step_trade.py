#!/usr/bin/env python3
"""What a split trades on this stack: least squares, over every timed plan (demeaned per task, so only what
the planners change is left), of the step on the slowest rank's compute and the ids per sample the input
all-to-all carries (each column-wise piece receives all of its table's ids), measured and as the model
predicts it (`shard-plan evaluate` with ../search-picks/cal and the real stack's profile).
  step_trade.py BINARY PM_DIR ...   (from this directory; e.g. ../../../../build/shard-plan ../rounds-41/pm8 pm8)"""
import json, math, os, statistics as st, sys

from rescore import predicted


def ids_per_sample(plan, tables):
    return sum(tables[t["name"]]["pooling_factor"] * len(t["shards"]) for t in plan["tables"]
               if t["sharding_type"] != "data_parallel")


def fit(groups):
    """Two slopes, per-task means removed; their standard errors."""
    xs, ys = [], []
    for rows in groups.values():
        means = [st.mean(r[i] for r in rows) for i in range(3)]
        for r in rows:
            xs.append((r[0] - means[0], r[1] - means[1]))
            ys.append(r[2] - means[2])
    a11, a12, a22 = (sum(x[i] * x[j] for x in xs) for i, j in ((0, 0), (0, 1), (1, 1)))
    b1, b2 = (sum(x[i] * y for x, y in zip(xs, ys)) for i in (0, 1))
    det = a11 * a22 - a12 * a12
    c1, c2 = (b1 * a22 - b2 * a12) / det, (a11 * b2 - a12 * b1) / det
    residual = [y - c1 * x[0] - c2 * x[1] for x, y in zip(xs, ys)]
    s2 = sum(e * e for e in residual) / max(1, len(ys) - 2 - len(groups))
    return c1, math.sqrt(s2 * a22 / det), c2, math.sqrt(s2 * a11 / det), len(ys)


def main():
    binary = sys.argv[1]
    measured_rows, predicted_rows = {}, {}
    for pm in sys.argv[2:]:
        for planner, data in json.load(open(os.path.join(pm, "measured.json")))["algorithms"].items():
            for task, runs in data["passes"].items():
                plan_path, tables_path = os.path.join(pm, f"{planner}-{task}.json"), os.path.join(pm, f"tables-{task}.json")
                tables = {t["name"]: t for t in json.load(open(tables_path))["tables"]}
                ids = ids_per_sample(json.load(open(plan_path)), tables)
                compute = st.mean(r["max_compute_ms"] for r in runs)
                step = st.mean(r["max_step_ms"] for r in runs)
                measured_rows.setdefault((pm, task), []).append((compute, ids, step))
                predicted_compute, predicted_step = predicted(binary, plan_path, tables_path)
                predicted_rows.setdefault((pm, task), []).append((predicted_compute, ids, predicted_step))
    for label, groups in (("measured", measured_rows), ("predicted", predicted_rows)):
        c1, se1, c2, se2, n = fit(groups)
        print(f"{label}, {n} plans: step {c1:.2f} (se {se1:.2f}) ms per ms of the slowest rank's compute, "
              f"{c2:.4f} (se {se2:.4f}) ms per id per sample; {c2 / c1:.4f} ms of compute per id")


if __name__ == "__main__":
    main()
