#!/usr/bin/env python3
"""Prints run.sh's figures: per case, each run's planning time for PRE and NOW and the ratio of medians."""
import glob, json, os, statistics, sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
reps = sorted({int(p.rsplit("-", 1)[1].split(".")[0]) for p in glob.glob(f"{d}/scale-pre-*.json")})
for s in ("paper-4gpu", "paper-8gpu"):
    for m in ("cpu", "h100"):
        row = {}
        for who in ("pre", "now"):
            runs = [json.load(open(f"{d}/bench-{s}-{m}-{who}-{r}.json"))["algorithms"]["neuroshard"] for r in reps]
            row[who] = ([1000 * x["median_plan_seconds"] for x in runs], runs[0]["mean_cost_ms"])
        ratio = statistics.median(row["now"][0]) / statistics.median(row["pre"][0])
        fmt = lambda v: ", ".join(f"{x:.2f}" for x in v)
        print(f"{s} {m}: pre [{fmt(row['pre'][0])}] ms (mean cost {row['pre'][1]:.4f}), "
              f"now [{fmt(row['now'][0])}] ms (mean cost {row['now'][1]:.4f}), median ratio {ratio:.3f}")
for i, case in enumerate(("856x128", "5000x1024")):
    t = {who: [json.load(open(f"{d}/scale-{who}-{r}.json"))["cases"][i]["seconds"] for r in reps] for who in ("pre", "now")}
    ratio = statistics.median(t["now"]) / statistics.median(t["pre"])
    print(f"{case}: pre {t['pre']} s, now {t['now']} s, median ratio {ratio:.3f}")
