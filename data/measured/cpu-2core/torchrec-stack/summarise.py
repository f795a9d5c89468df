#!/usr/bin/env python3
"""Prints the README's figures from what run.sh left in DIR (default: this folder).

  summarise.py [DIR]

Bench: per task set and planner the valid plans, mean predicted step and planning seconds. Real stack:
paired_compare.py's figures per measurement. Plans: what each planner's plans send through TorchRec's
input all-to-all (a table's lookups, once per shard that is not a replica), the output all-to-all's widest
rank, and how the per-task ratios of those follow the measured step's.
"""
import json
import math
import os
import statistics
import sys

PAIR = ("neuroshard", "torchrec_planner")


def load(path):
    with open(path) as f:
        return json.load(f)


def bench_rows(d):
    print("| task set | planner | valid | mean predicted step, ms | median / max planning s |")
    print("| --- | --- | --- | --- | --- |")
    for name in ("paper-4gpu-first20", "fresh-4gpu", "all-128gpu"):
        path = os.path.join(d, f"bench-{name}.json")
        if not os.path.exists(path):
            continue
        for algo, a in load(path)["algorithms"].items():
            print(f"| {name} | `{algo}` | {a['valid']}/{a['tasks']} | {a['mean_cost_ms']:.2f} | "
                  f"{a['median_plan_seconds']:.3g} / {a['max_plan_seconds']:.3g} |")
    own = os.path.join(d, "torchrec-planner-seconds.json")
    if os.path.exists(own):
        for name, seconds in load(own).items():
            kept = [s for s in seconds if s is not None]
            print(f"\nTorchRec's planner's own seconds, {name}: median {statistics.median(kept):.3f}, "
                  f"max {max(kept):.3f} ({len(kept)} plans)")


def compare_rows(d):
    print("\n| measurement | figure | tasks | neuroshard / torchrec_planner (geomean) | paired t | neuroshard faster |"
          " predicted ratio | predicted faster | corr(predicted, measured) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n in (4, 2):
        path = os.path.join(d, f"compare-{n}.json")
        if not os.path.exists(path):
            continue
        c = load(path)
        for figure in ("max_compute", "max_step"):
            f, p = c[figure], c[figure]["predicted"]
            print(f"| pm{n} | {figure} | {f['tasks']} | {f['geomean_ratio']:.3f} | {f['t_log_ratio']:+.2f} | "
                  f"{f['a_faster']} | {p['geomean_ratio']:.3f} | {p['a_faster']} | {p['correlation_with_measured']:.2f} |")


def plan_features(plan, tables, ranks):
    """Lookups through the input all-to-all, and the widest rank's output width (replicas send neither)."""
    pooling = {t["name"]: t.get("pooling_factor", 1.0) for t in tables}
    lookups, width, types = 0.0, [0] * ranks, {}
    for t in plan["tables"]:
        types[t["sharding_type"]] = types.get(t["sharding_type"], 0) + 1
        if t["sharding_type"] == "data_parallel":
            continue
        for s in t["shards"]:
            lookups += pooling[t["name"]]
            width[s["rank"]] += s["shard_sizes"][1]
    return lookups, max(width), types


def correlation(x, y):
    mx, my = statistics.mean(x), statistics.mean(y)
    num = sum((a - mx) * (b - my) for a, b in zip(x, y))
    return num / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))


def plan_rows(d):
    for n in (4, 2):
        pm = os.path.join(d, f"pm{n}")
        if not os.path.exists(os.path.join(pm, "measured.json")):
            continue
        m = load(os.path.join(pm, "measured.json"))
        task_set = load(os.path.join(d, f"fresh-{n}gpu.json"))
        types = {a: {} for a in PAIR}
        logs = {"lookups": [], "width": [], "step": []}
        for i in m["measured_tasks"]:
            steps = [m["algorithms"][a]["measured"]["task_max_step_ms"][i] for a in PAIR]
            if None in steps:  # not timed yet
                continue
            tables = task_set["tasks"][i]["tables"]
            f = {a: plan_features(load(os.path.join(pm, f"{a}-{i}.json")), tables, n) for a in PAIR}
            for a in PAIR:
                for k, v in f[a][2].items():
                    types[a][k] = types[a].get(k, 0) + v
            logs["lookups"].append(math.log(f[PAIR[0]][0] / f[PAIR[1]][0]))
            logs["width"].append(math.log(f[PAIR[0]][1] / f[PAIR[1]][1]))
            logs["step"].append(math.log(steps[0] / steps[1]))
        print(f"\npm{n}: tables by sharding type: " + "; ".join(f"{a} {types[a]}" for a in PAIR))
        for k in ("lookups", "width"):
            print(f"pm{n}: neuroshard / torchrec_planner {k}: {math.exp(statistics.mean(logs[k])):.3f}, "
                  f"correlation of the per-task log ratios with the step's: {correlation(logs[k], logs['step']):.2f}")


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    bench_rows(d)
    compare_rows(d)
    plan_rows(d)


if __name__ == "__main__":
    main()
