#!/usr/bin/env python3
"""Scores every timed plan with one model (TorchRec's planner's plans were scored by the binary's default
model when planned, the others by ../search-picks/cal), then prints, per pair of planners, the predicted
ratio of the slowest rank's compute and its correlation with the measured per-task log ratio.
  rescore.py [pm4|pm8 [BINARY [PAIR ...]]]   (from the repository root; writes PM/rescored.json; BINARY
                  default build/shard-plan; PAIR as A:B, default every planner against cw32 and trplanner32)"""
import json, math, os, statistics as st, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "loop-and-all-types"), os.path.join(HERE, "..", "loop-budget")]
from analyse import corr  # noqa: E402
from pooled import task_log_ratios  # noqa: E402

MODEL = os.path.join(HERE, "..", "search-picks", "cal")
PROFILE = os.path.join(HERE, "..", "..", "..", "hardware", "cpu-2core-torchrec.json")


def predicted(binary, plan_path, tables_path):
    """The plan's slowest rank's compute and its step, as `shard-plan evaluate` predicts them with MODEL."""
    cmd = [binary, "evaluate", "--plan", plan_path, "--tables", tables_path, "--model", MODEL, "--hardware", PROFILE,
           "--json", "-q"]
    doc = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["predicted"]
    return doc["max_compute_ms"], doc["max_total_ms"]


def main():
    pm = os.path.join(HERE, sys.argv[1] if len(sys.argv) > 1 else "pm4")
    binary = sys.argv[2] if len(sys.argv) > 2 else "build/shard-plan"
    measured_path = os.path.join(pm, "measured.json")
    algos = json.load(open(measured_path))["algorithms"]
    scored = {p: {t: predicted(binary, os.path.join(pm, f"{p}-{t}.json"), os.path.join(pm, f"tables-{t}.json"))[0]
                  for t in algos[p]["passes"]} for p in algos}
    with open(os.path.join(pm, "rescored.json"), "w") as f:
        json.dump({"model": "../search-picks/cal", "predicted_max_compute_ms": scored}, f, indent=1)
    pairs = sys.argv[3:] or [f"{a}:{b}" for b in ("cw32", "trplanner32") for a in algos if a != b]
    for pair in pairs:
        a, b = pair.split(":")
        measured = task_log_ratios(measured_path, a, b, "max_compute_ms")
        predicted_logs = [math.log(scored[a][t] / scored[b][t]) for t in measured]
        print(f"{a} / {b}: predicted {math.exp(st.mean(predicted_logs)):.3f}, measured "
              f"{math.exp(st.mean(measured.values())):.3f}, correlation "
              f"{corr(predicted_logs, list(measured.values())):.2f} ({len(measured)} tasks)")


if __name__ == "__main__":
    main()
