#!/usr/bin/env python3
"""Per timing of repeat/: each rank's ln(predicted / measured) compute under the run's model, their mean, and
the same plan's mean in the run (pm4/measured.json, both passes); then, for task 10, how much a rank's
compute moves between repeats of one seed and between seeds. Run from the repository root."""
import glob
import json
import math
import os
import statistics as st
import subprocess
from collections import defaultdict

here = os.path.dirname(os.path.abspath(__file__))
pm4 = os.path.join(here, "..", "pm4")


def predicted(task, label="cluster"):
    out = subprocess.run(["build/shard-plan", "evaluate", "--plan", f"{pm4}/{label}-{task}.json", "--tables",
                          f"{pm4}/tables-{task}.json", "--model", os.path.join(here, "..", "model"), "--hardware",
                          "cpu-2core", "--json"], capture_output=True, text=True, check=True).stdout
    return [d["compute_ms"] for d in json.loads(out)["devices"]]


run = json.load(open(f"{pm4}/measured.json"))["algorithms"]["cluster"]["passes"]
timings = defaultdict(list)  # (task, seed) -> per-rank measured compute of each repeat
for path in sorted(glob.glob(os.path.join(here, "m-*.json"))):
    _, task, seed, _ = os.path.basename(path)[:-5].split("-")
    doc = json.load(open(path))
    timings[(int(task), int(seed[1:]))].append([d["measured_compute_ms"] for d in doc["devices"]])
print("task seed repeat  ln(pred/meas) per rank            mean   | the run's mean")
for (task, seed), repeats in sorted(timings.items()):
    pred = predicted(task)
    in_run = st.mean(math.log(pred[r] / p["device_compute_ms"][r][1]) for p in run[str(task)] for r in range(len(pred)))
    for k, measured in enumerate(repeats):
        ratios = [math.log(p / m) for p, m in zip(pred, measured)]
        print(f"{task:4} {seed:4} {k + 1:6}  " + " ".join(f"{x:+.3f}" for x in ratios) + f"  {st.mean(ratios):+.3f} | {in_run:+.3f}")
repeat_sd = [st.stdev([math.log(m[r]) for m in reps]) for (task, _), reps in timings.items() if task == 10 and len(reps) > 1
             for r in range(4)]
seed_means = [[st.mean(math.log(m[r]) for m in reps) for (task, _), reps in timings.items() if task == 10] for r in range(4)]
print(f"task 10: a rank's ln(compute) between repeats of one seed, sd {st.mean(repeat_sd):.3f}; "
      f"between the 5 seeds' means, sd {st.mean(st.stdev(m) for m in seed_means):.3f}")


def pearson(xs, ys):
    mx, my = st.mean(xs), st.mean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    return sxy / math.sqrt(sum((x - mx) ** 2 for x in xs) * sum((y - my) ** 2 for y in ys))


# Over the run's ranks without data-parallel tables: what the error grows with.
errors, pred_ms, max_pooling = [], [], []
for label, algo in json.load(open(f"{pm4}/measured.json"))["algorithms"].items():
    for task, passes in algo["passes"].items():
        plan = json.load(open(f"{pm4}/{label}-{task}.json"))
        pooling = {t["name"]: t["pooling_factor"] for t in json.load(open(f"{pm4}/tables-{task}.json"))["tables"]}
        for r, p in enumerate(predicted(task, label)):
            mine = [t for t in plan["tables"] if any(s["rank"] == r for s in t["shards"])]
            if any(t["sharding_type"] == "data_parallel" for t in mine):
                continue
            errors.append(math.log(p / st.mean(q["device_compute_ms"][r][1] for q in passes)))
            pred_ms.append(math.log(p))
            max_pooling.append(math.log(max(pooling[t["name"]] for t in mine)))
print(f"the run's {len(errors)} ranks without data-parallel tables: ln(predicted / measured) against "
      f"ln(predicted) {pearson(pred_ms, errors):+.2f}, against ln(largest pooling factor) "
      f"{pearson(max_pooling, errors):+.2f}")
