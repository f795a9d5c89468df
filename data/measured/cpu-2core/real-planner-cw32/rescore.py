#!/usr/bin/env python3
"""Scores every timed plan with one model (TorchRec's planner's plans were scored by the binary's default
model when planned, the others by ../search-picks/cal), then prints, per pair of planners, the predicted
ratio of the slowest rank's compute and its correlation with the measured per-task log ratio.
  rescore.py [pm4|pm8 [BINARY [PAIR ...]]]   (from the repository root; writes PM/rescored.json; BINARY
                  default build/shard-plan; PAIR as A:B, default every planner against cw32 and trplanner32)"""
import json, math, os, statistics as st, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "search-picks", "cal")
PROFILE = os.path.join(HERE, "..", "..", "..", "hardware", "cpu-2core-torchrec.json")


def corr(x, y):
    mx, my = st.mean(x), st.mean(y)
    sx, sy = math.sqrt(sum((a - mx) ** 2 for a in x)), math.sqrt(sum((b - my) ** 2 for b in y))
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / (sx * sy) if sx > 0 and sy > 0 else float("nan")


def predicted_max_compute(binary, pm, planner, task):
    cmd = [binary, "evaluate", "--plan", os.path.join(pm, f"{planner}-{task}.json"), "--tables",
           os.path.join(pm, f"tables-{task}.json"), "--model", MODEL, "--hardware", PROFILE, "--json", "-q"]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["predicted"]["max_compute_ms"]


def main():
    pm = os.path.join(HERE, sys.argv[1] if len(sys.argv) > 1 else "pm4")
    binary = sys.argv[2] if len(sys.argv) > 2 else "build/shard-plan"
    algos = json.load(open(os.path.join(pm, "measured.json")))["algorithms"]
    scored = {p: {t: predicted_max_compute(binary, pm, p, t) for t in algos[p]["passes"]} for p in algos}
    with open(os.path.join(pm, "rescored.json"), "w") as f:
        json.dump({"model": "../search-picks/cal", "predicted_max_compute_ms": scored}, f, indent=1)
    pairs = sys.argv[3:] or [f"{a}:{b}" for b in ("cw32", "trplanner32") for a in algos if a != b]
    for pair in pairs:
        a, b = pair.split(":")
        tasks = [t for t in algos[a]["passes"] if t in algos[b]["passes"]]
        measured = [st.mean(math.log(ra["max_compute_ms"] / rb["max_compute_ms"])
                        for ra, rb in zip(algos[a]["passes"][t][:2], algos[b]["passes"][t][:2])) for t in tasks]
        predicted = [math.log(scored[a][t] / scored[b][t]) for t in tasks]
        print(f"{a} / {b}: predicted {math.exp(st.mean(predicted)):.3f}, measured {math.exp(st.mean(measured)):.3f}, "
              f"correlation {corr(predicted, measured):.2f} ({len(tasks)} tasks)")


main()
