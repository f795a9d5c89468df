#!/usr/bin/env python3
"""Prints every figure of search-picks/README.md from run.sh's output (standard library only):

1. per set, each planner against the others: measured and predicted max compute, paired per task, and the
   correlation of predicted and measured per-task log ratios (tools/paired_compare.py's statistics);
2. the model's error where it matters: per planner, log(measured / predicted) of the plan's max compute
   (how much the plan's promise was broken), of its predicted-slowest rank, and of every rank;
3. which shard sets the model under-predicts: each rank's log error against features of its shards
   (least squares over all planners' ranks, standardised coefficients), and how much of neuroshard's
   error a correction in two of them (shards, rows), fitted on the rivals' ranks alone, removes;
4. what the search optimised: each planner's mean predicted slowest total, compute and all-to-all.

g4 and g8 are run.sh's sets; g4-compute is run2.sh's (the search on compute alone, `computeonly`).

  data/measured/cpu-2core/search-picks/analyse.py [DIR]
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "tools"))
import paired_compare  # noqa: E402


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def mean(values):
    return sum(values) / len(values) if values else float("nan")


def sd(values):
    m = mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else float("nan")


def ranks_of(plan_path, tables_path):
    """Per rank: its shards as (table, columns, rows) with the table's pooling and reuse."""
    with open(plan_path) as f:
        plan = json.load(f)
    with open(tables_path) as f:
        tables = {t["name"]: t for t in json.load(f)["tables"]}
    ranks = [[] for _ in range(plan["num_devices"])]
    for t in plan["tables"]:
        for s in t["shards"]:
            ranks[s["rank"]].append({"table": tables[t["name"]], "rows": s["shard_sizes"][0],
                                     "cols": s["shard_sizes"][1], "split": len(t["shards"]) > 1,
                                     "type": t["sharding_type"]})
    return ranks


def features(shards):
    cols = [s["cols"] for s in shards]
    lookups = [s["table"]["pooling_factor"] * s["cols"] for s in shards]
    return {
        "shards": len(shards),
        "log_width": math.log1p(sum(cols)),
        "log_lookup_bytes": math.log1p(sum(lookups)),
        "log_rows": math.log1p(sum(s["rows"] for s in shards)),
        "pieces": sum(1 for s in shards if s["split"]),
        "width_4_mod_8": sum(1 for c in cols if c % 8 == 4),
        "narrow_le_16": sum(1 for c in cols if c <= 16),
        "max_pooling": math.log1p(max((s["table"]["pooling_factor"] for s in shards), default=0.0)),
    }


def per_rank_errors(directory, label, task):
    """Per rank: (predicted, measured geomean over passes, features)."""
    doc = json.load(open(os.path.join(directory, "measured.json")))
    runs = doc["algorithms"][label]["passes"].get(str(task), [])
    if not runs or "device_compute_ms" not in runs[0]:
        return None
    ranks = ranks_of(os.path.join(directory, f"{label}-{task}.json"), os.path.join(directory, f"tables-{task}.json"))
    out = []
    for r in range(len(runs[0]["device_compute_ms"])):
        predicted = runs[0]["device_compute_ms"][r][0]
        measured = geomean([run["device_compute_ms"][r][1] for run in runs])
        out.append((predicted, measured, features(ranks[r])))
    return out


def solve(a, b):
    """Least squares a x = b by the normal equations (a few columns)."""
    n = len(a[0])
    m = [[sum(row[i] * row[j] for row in a) for j in range(n)] + [sum(row[i] * y for row, y in zip(a, b))]
         for i in range(n)]
    for i in range(n):
        p = max(range(i, n), key=lambda k: abs(m[k][i]))
        m[i], m[p] = m[p], m[i]
        if abs(m[i][i]) < 1e-12:
            return None
        for k in range(n):
            if k != i:
                f = m[k][i] / m[i][i]
                m[k] = [x - f * y for x, y in zip(m[k], m[i])]
    return [m[i][n] / m[i][i] for i in range(n)]


def report_set(directory):
    doc = json.load(open(os.path.join(directory, "measured.json")))
    labels = list(doc["algorithms"])
    print(f"== {directory}: {doc['task_set']}, {len(doc['measured_tasks'])} tasks")
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            s = paired_compare.compare_one(os.path.join(directory, "measured.json"), a, b)["max_compute"]
            p = s.get("predicted", {})
            print(f"  {a} / {b}: measured {s['geomean_ratio']:.3f} (t = {s['t_log_ratio']:.2f}, {s['a_faster']} of "
                  f"{s['tasks']}); predicted {p.get('geomean_ratio', float('nan')):.3f} (t = "
                  f"{p.get('t_log_ratio', float('nan')):.2f}); correlation {p.get('correlation_with_measured', float('nan')):.2f}")
    rows = []
    for label in labels:
        plan_err, slowest_err, rank_err = [], [], []
        for task in doc["measured_tasks"]:
            ranks = per_rank_errors(directory, label, task)
            if not ranks:
                continue
            plan_err.append(math.log(max(m for _, m, _ in ranks) / max(p for p, _, _ in ranks)))
            slowest = max(ranks, key=lambda r: r[0])
            slowest_err.append(math.log(slowest[1] / slowest[0]))
            for p, m, f in ranks:
                rank_err.append(math.log(m / p))
                rows.append((label, math.log(m / p), f))
        print(f"  {label}: log(measured/predicted) max compute {mean(plan_err):+.3f} (sd {sd(plan_err):.3f}), "
              f"predicted-slowest rank {mean(slowest_err):+.3f}, every rank {mean(rank_err):+.3f} "
              f"(sd {sd(rank_err):.3f}, n {len(rank_err)})")
    return rows


def report_features(rows):
    names = list(rows[0][2])
    cols = {n: [r[2][n] for r in rows] for n in names}
    z = {n: (mean(v), sd(v) or 1.0) for n, v in cols.items()}
    a = [[1.0] + [(r[2][n] - z[n][0]) / (z[n][1] or 1.0) for n in names] for r in rows]
    coef = solve(a, [r[1] for r in rows])
    print(f"== rank log error on standardised features, {len(rows)} ranks (all planners)")
    if coef is None:
        print("  singular")
        return
    print(f"  intercept {coef[0]:+.3f}")
    for n, c in zip(names, coef[1:]):
        single = paired_compare.correlation(cols[n], [r[1] for r in rows])
        print(f"  {n:18s} {c:+.3f}   (correlation alone {single:+.2f})")


def objective(directory):
    doc = json.load(open(os.path.join(directory, "measured.json")))
    print("  predicted, mean over tasks of the slowest rank's total / compute / all-to-all (ms):")
    for label in doc["algorithms"]:
        figures = []
        for task in doc["measured_tasks"]:
            devices = json.load(open(os.path.join(directory, f"{label}-{task}.json")))["devices"]
            figures.append((max(d["total_ms"] for d in devices), max(d["compute_ms"] for d in devices),
                            max(d["fw_comm_ms"] + d["bw_comm_ms"] for d in devices)))
        print(f"    {label}: " + " / ".join(f"{mean([f[k] for f in figures]):.2f}" for k in range(3)))


def feature_correction(directory, ours="neuroshard"):
    """Fits log(measured / predicted) = a + b shards + c log rows on the rivals' ranks; each planner's
    max-compute error before and after applying it."""
    doc = json.load(open(os.path.join(directory, "measured.json")))
    names = ("shards", "log_rows")
    by_plan = {(label, task): per_rank_errors(directory, label, task) for label in doc["algorithms"]
               for task in doc["measured_tasks"]}
    train = [r for (label, _), ranks in by_plan.items() if label != ours and ranks for r in ranks]
    coef = solve([[1.0] + [f[n] for n in names] for _, _, f in train], [math.log(m / p) for p, m, _ in train])
    print(f"  a correction in {', '.join(names)} fitted on the rivals' ranks: " + ", ".join(f"{c:+.4f}" for c in coef))
    for label in doc["algorithms"]:
        raw, corrected = [], []
        for (l, _), ranks in by_plan.items():
            if l != label or not ranks:
                continue
            scaled = [(p * math.exp(coef[0] + sum(c * f[n] for c, n in zip(coef[1:], names))), m) for p, m, f in ranks]
            raw.append(math.log(max(m for _, m, _ in ranks) / max(p for p, _, _ in ranks)))
            corrected.append(math.log(max(m for _, m in scaled) / max(p for p, _ in scaled)))
        print(f"    {label}: max-compute log error {mean(raw):+.3f} -> {mean(corrected):+.3f}")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else HERE
    rows = []
    for g in ("g4", "g8", "g4-compute"):
        d = os.path.join(root, g)
        if not os.path.exists(os.path.join(d, "measured.json")):
            continue
        set_rows = report_set(d)
        objective(d)
        if g != "g4-compute":
            rows += set_rows
            feature_correction(d)
    if rows:
        report_features(rows)


if __name__ == "__main__":
    main()
