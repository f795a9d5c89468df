#!/usr/bin/env python3
"""Per task set and model: tasks where some baseline's plan scores below neuroshard's (predicted)."""
import glob, json, os

here = os.path.dirname(os.path.abspath(__file__))
for path in sorted(glob.glob(f"{here}/bench-*.json")):
    algos = json.load(open(path))["algorithms"]
    ours = algos.pop("neuroshard")
    losses, best = 0, {}
    for i, cost in enumerate(ours["task_costs_ms"]):
        rivals = {a: v["task_costs_ms"][i] for a, v in algos.items() if v["task_costs_ms"][i] is not None}
        losses += any(c < cost for c in rivals.values())
    means = {a: v["mean_cost_ms"] for a, v in algos.items()}
    rival = min(means, key=means.get)
    print(f"{os.path.basename(path)}: {len(ours['task_costs_ms'])} tasks, {losses} lost; neuroshard "
          f"{ours['mean_cost_ms']:.2f} ms, best baseline {rival} {means[rival]:.2f} ms")
