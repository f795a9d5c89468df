#!/usr/bin/env python3
"""How well the measure loop's own timings (FBGEMM's TBE in shard-plan's process, while planning) match
the real stack's ranks of the plan it handed over.

  python3 loop_timing.py [pm4 [LABEL]]     (standard library only; times nothing)

For each LABEL plan (default loop32) whose ranks the loop measured: the loop's measured compute and the
model's prediction per rank, against the real stack's (TorchRec + FBGEMM, the mean of the passes in
DIR/measured.json), each within the plan (the plan's mean log ratio removed: balance sees no common
scale). Also the loop's common scale (the real stack over the loop, geometric mean).
"""
import json
import math
import os
import statistics as st
import sys

from error_floor import within_plan


def within(values):
    return within_plan(values, range(len(values)))


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "pm4"
    label = sys.argv[2] if len(sys.argv) > 2 else "loop32"
    measured = json.load(open(os.path.join(folder, "measured.json")))
    off_loop, off_model, scale = [], [], []
    for task, runs in measured["algorithms"][label]["passes"].items():
        plan = json.load(open(os.path.join(folder, f"{label}-{task}.json")))
        timed = {d["rank"]: d for d in plan["measure_loop"].get("measured_devices", [])}
        ranks = [r for r in sorted(timed) if timed[r]["predicted_compute_ms"] > 0.3]
        if len(ranks) < 2:
            continue
        stack = [math.log(st.mean(run["device_compute_ms"][r][1] for run in runs)) for r in ranks]
        loop = [math.log(timed[r]["measured_compute_ms"]) for r in ranks]
        model = [math.log(timed[r]["predicted_compute_ms"]) for r in ranks]
        off_loop += [a - b for a, b in zip(within(stack), within(loop))]
        off_model += [a - b for a, b in zip(within(stack), within(model))]
        scale += [a - b for a, b in zip(stack, loop)]
    print(f"{label}: {len(off_loop)} ranks the loop timed; within the plan, the real stack against")
    print(f"  the loop's timing: sd {st.pstdev(off_loop):.3f}   the model: sd {st.pstdev(off_model):.3f}")
    print(f"  the real stack / the loop's timing, geometric mean {math.exp(st.mean(scale)):.3f}")


if __name__ == "__main__":
    main()
