#!/usr/bin/env python3
"""How far the model and FBGEMM's kernel timed alone are off each rank of a plan on the real stack.

  python3 error_floor.py [../rounds-41 [MEASURED.json ...]]   (standard library only; reads what rounds-41
                  and loop-and-all-types measured, and part 1 for each further MEASURED.json; times nothing)

1. Per planner, within each plan (the plan's mean log ratio removed, so the VM's whole-job drift is out):
   the per-pass noise of a rank's measured compute (from the two passes' difference) and the spread of
   measured over predicted per rank, and the model's share of it once the noise is taken out.
2. The same ranks timed on FBGEMM's TBE alone (loop-and-all-types/tc4: every rank's set in one process):
   how far that timing is off the real stack's, within the plan, against the model.
3. Whether plan features explain the model's per-rank error: least squares of log(measured / predicted)
   on each feature, scored leaving one task out at a time; as measured (a), and within the plan (b).
"""
import json
import math
import os
import statistics as st
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MIN_PREDICTED_MS = 0.3  # ranks with almost nothing on them are timer noise


def passes(measured, planner):
    return measured["algorithms"][planner]["passes"]


def within_plan(logs, keep):
    mean = st.mean(logs[i] for i in keep)
    return [logs[i] - mean for i in keep]


def noise_and_model_spread(measured, planner):
    diffs, residuals = [], []
    for runs in passes(measured, planner).values():
        if len(runs) < 2:
            continue
        predicted = [p for p, _ in runs[0]["device_compute_ms"]]
        keep = [i for i, p in enumerate(predicted) if p > MIN_PREDICTED_MS]
        if len(keep) < 2:
            continue
        per_pass = [within_plan([math.log(m / p) for p, m in run["device_compute_ms"]], keep) for run in runs[:2]]
        diffs += [a - b for a, b in zip(*per_pass)]
        residuals += [(a + b) / 2 for a, b in zip(*per_pass)]
    noise = st.pstdev(diffs) / math.sqrt(2)
    spread = st.pstdev(residuals)
    return noise, spread, math.sqrt(max(0.0, spread ** 2 - noise ** 2 / 2)), len(residuals)


def mean_log_per_rank(runs, index):
    ranks = len(runs[0]["device_compute_ms"])
    return [st.mean(math.log(run["device_compute_ms"][r][index]) for run in runs) for r in range(ranks)]


def kernel_alone_against_stack(stack, kernel_alone, planners):
    off_kernel, off_model = [], []
    for planner in planners:
        on_kernel, on_stack = passes(kernel_alone, planner), passes(stack, planner)
        for task, runs in on_kernel.items():
            if task not in on_stack:
                continue
            k = mean_log_per_rank(runs, 1)
            s = mean_log_per_rank(on_stack[task], 1)
            p = mean_log_per_rank(runs[:1], 0)
            keep = range(len(k))
            for a, b, c in zip(within_plan(s, keep), within_plan(k, keep), within_plan(p, keep)):
                off_kernel.append(a - b)
                off_model.append(a - c)
    return st.pstdev(off_kernel), st.pstdev(off_model), len(off_kernel)


def rank_features(plan, tables):
    shards = [(table, shard) for table in plan["tables"] for shard in table["shards"]]
    by_rank = {}
    for table, shard in shards:
        by_rank.setdefault(shard["rank"], []).append((tables[table["name"]], shard["shard_sizes"][1]))
    features = {}
    for rank, held in by_rank.items():
        weights = [t["pooling_factor"] * (width + 8) for t, width in held]
        total = sum(weights)

        def weighted(f):
            return sum(w * f(t, width) for w, (t, width) in zip(weights, held)) / total
        features[rank] = {
            "log rows": weighted(lambda t, w: math.log(t["rows"])),
            "log pooling": weighted(lambda t, w: math.log(t["pooling_factor"])),
            "width / 100": weighted(lambda t, w: w / 100),
            "hot ids": weighted(lambda t, w: sum(t["reuse_hist"][:6])),
            "split": weighted(lambda t, w: float(w < t["dim"])),
            "log bytes": weighted(lambda t, w: math.log(t["rows"] * w * 4)),
            "log shards": math.log(len(held)),
        }
    return features


def rank_errors(measured, plans_dir, within):
    """(task, features, log measured/predicted) per rank; within: less the plan's mean, as balance sees it."""
    rows = []
    for planner, data in measured["algorithms"].items():
        for task, runs in data["passes"].items():
            plan = json.load(open(os.path.join(plans_dir, f"{planner}-{task}.json")))
            tables = {t["name"]: t for t in json.load(open(os.path.join(plans_dir, f"tables-{task}.json")))["tables"]}
            features = rank_features(plan, tables)
            plan_rows = []
            for rank, (predicted, _) in enumerate(runs[0]["device_compute_ms"]):
                if predicted <= MIN_PREDICTED_MS or rank not in features:
                    continue
                measured_ms = st.mean(run["device_compute_ms"][rank][1] for run in runs)
                plan_rows.append((task, features[rank], math.log(measured_ms / predicted)))
            shift = st.mean(y for _, _, y in plan_rows) if within and plan_rows else 0.0
            rows += [(t, f, y - shift) for t, f, y in plan_rows]
    return rows


def least_squares(xs, ys):
    """Normal equations by Gauss-Jordan: a few columns only."""
    n = len(xs[0])
    a = [[sum(x[i] * x[j] for x in xs) for j in range(n)] + [sum(x[i] * y for x, y in zip(xs, ys))] for i in range(n)]
    for c in range(n):
        pivot = max(range(c, n), key=lambda r: abs(a[r][c]))
        a[c], a[pivot] = a[pivot], a[c]
        for r in range(n):
            if r != c:
                f = a[r][c] / a[c][c]
                a[r] = [u - f * v for u, v in zip(a[r], a[c])]
    return [a[i][n] / a[i][i] for i in range(n)]


def leave_one_task_out(rows, names):
    def design(features):
        return [1.0] + [features[n] for n in names]
    misses = []
    for task in sorted({t for t, _, _ in rows}):
        train = [(design(f), y) for t, f, y in rows if t != task]
        beta = least_squares([x for x, _ in train], [y for _, y in train])
        misses += [y - sum(b * x for b, x in zip(beta, design(f))) for t, f, y in rows if t == task]
    return st.pstdev(misses), st.mean(abs(math.exp(m) - 1) for m in misses)


def main():
    rounds = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "rounds-41")
    stack = json.load(open(os.path.join(rounds, "pm4", "measured.json")))
    print("1. within a plan, per rank (log sd): per-pass noise, measured/predicted spread, the model's share")
    for path, measured in [(os.path.join(rounds, "pm4"), stack)] + [(p, json.load(open(p))) for p in sys.argv[2:]]:
        for planner in measured["algorithms"]:
            noise, spread, model, n = noise_and_model_spread(measured, planner)
            print(f"   {path}: {planner:10s} {n:3d} ranks  noise {noise:.3f}  spread {spread:.3f}  model {model:.3f}")
    tc4 = os.path.join(rounds, "..", "loop-and-all-types", "tc4", "measured.json")
    off_kernel, off_model, n = kernel_alone_against_stack(stack, json.load(open(tc4)), ("inputids", "loop", "cw32"))
    print(f"2. the real stack's ranks against FBGEMM's TBE timed alone, within a plan ({n} ranks): "
          f"sd {off_kernel:.3f}; against the model: {off_model:.3f}")
    for within in (False, True):
        rows = rank_errors(stack, os.path.join(rounds, "pm4"), within)
        print(f"3{'b' if within else 'a'}. the model's per-rank error{' within the plan' if within else ''} on "
              f"plan features, one task left out at a time ({len(rows)} ranks)")
        names = list(rows[0][1])
        for chosen in [[]] + [[n] for n in names] + [names]:
            sd, mape = leave_one_task_out(rows, chosen)
            print(f"   {'+'.join(chosen) or 'a constant':78s} sd {sd:.4f}  MAPE {100 * mape:.2f}%")


if __name__ == "__main__":
    main()
