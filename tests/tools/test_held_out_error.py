"""tools/held-out-error: every measured plan priced by each model, against each rank's measured compute.

A fake shard-plan answers evaluate with per-rank compute set by the model and the plan's planner, and
logs its arguments, so that the errors, the scale and the correlations can be checked exactly.
"""

import json
import math
import os
import stat
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "held-out-error"

# evaluate: model "half" predicts half of what was measured on every rank; model "exact" predicts it. The
# plan file holds the measured compute and step it stands for.
FAKE = r'''#!PYTHON
import json, os, sys
args = sys.argv[1:]
arg = lambda name: args[args.index(name) + 1] if name in args else None
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps({"model": arg("--model"), "hardware": arg("--hardware")}) + "\n")
plan = json.load(open(arg("--plan")))
factor = {"half": 0.5, "exact": 1.0}[arg("--model")]
print(json.dumps({"devices": [{"compute_ms": c * factor, "total_ms": plan["step"] * factor}
                              for c in plan["compute"]]}))
'''


class HeldOutError(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        root = Path(self.dir.name)
        self.binary = root / "shard-plan"
        self.binary.write_text(FAKE.replace("PYTHON", sys.executable))
        self.binary.chmod(self.binary.stat().st_mode | stat.S_IEXEC)
        self.log = root / "log.jsonl"
        self.log.touch()
        # Two planners, two tasks, 2 ranks, 2 passes: per task, rank 0's two passes, then rank 1's (task 0
        # of a: rank 0 measures 2 then 6, mean 4; rank 1 4 then 8, mean 6).
        measured = {"a": {"0": [[2.0, 6.0], [4.0, 8.0]], "1": [[1.0, 1.0], [3.0, 3.0]]},
                    "b": {"0": [[4.0, 4.0], [4.0, 4.0]], "1": [[4.0, 2.0], [4.0, 2.0]]}}
        algorithms = {}
        for label, tasks in measured.items():
            algorithms[label] = {"passes": {}}
            for task, (first, second) in tasks.items():
                passes = [{"device_compute_ms": [[0.0, first[r]], [0.0, second[r]]], "max_step_ms": 10.0 * (r + 1)}
                          for r in range(2)]
                algorithms[label]["passes"][task] = passes
                mean = [(first[0] + first[1]) / 2, (second[0] + second[1]) / 2]
                step = math.sqrt(10.0 * 20.0)
                (root / f"{label}-{task}.json").write_text(json.dumps({"compute": mean, "step": step}))
                (root / f"tables-{task}.json").write_text("{}")
        self.measured = root / "measured.json"
        self.measured.write_text(json.dumps({"algorithms": algorithms}))

    def tearDown(self):
        self.dir.cleanup()

    def run_tool(self, *extra):
        out = Path(self.dir.name) / "report.json"
        done = subprocess.run([sys.executable, str(SCRIPT), "--measured", str(self.measured), "--model", "half",
                               "--model", "exact", "--pair", "a:b", "--binary", str(self.binary), "--json",
                               str(out), *extra],
                              capture_output=True, text=True, env=dict(os.environ, FAKE_LOG=str(self.log)))
        self.assertEqual(done.returncode, 0, done.stderr)
        return json.loads(out.read_text()), done.stdout

    def test_errors_scale_and_ranking(self):
        report, printed = self.run_tool("--hardware", "cpu-2core")
        half, exact = report["models"]
        self.assertEqual(half["all"]["ranks"], 8)
        self.assertAlmostEqual(half["all"]["mape_percent"], 50.0)
        self.assertAlmostEqual(half["all"]["mean_log_ratio"], math.log(0.5))
        self.assertAlmostEqual(half["all"]["scale"], 2.0)
        self.assertAlmostEqual(half["all"]["scaled_mape_percent"], 0.0, places=9)
        self.assertAlmostEqual(exact["by_planner"]["b"]["mape_percent"], 0.0)
        # Per task, a/b of the slowest rank: 6/4 and 3/3, predicted as measured by either model.
        pair = exact["pairs"]["a:b"]
        self.assertEqual(pair["tasks"], 2)
        self.assertAlmostEqual(pair["compute"]["measured_ratio"], math.sqrt(6 / 4 * 3 / 3))
        self.assertAlmostEqual(pair["compute"]["predicted_ratio"], pair["compute"]["measured_ratio"])
        self.assertIsNone(pair["compute"]["correlation"])  # two tasks give no correlation
        self.assertIn("MAPE   50.0%", printed)
        calls = [json.loads(line) for line in self.log.read_text().splitlines()]
        self.assertEqual(len(calls), 8)  # 4 plans, 2 models
        self.assertTrue(all(c["hardware"] == "cpu-2core" for c in calls))

    def test_the_passes_noise_and_the_model_s_own_error(self):
        report, printed = self.run_tool()
        # Each rank's two passes: a's task 0 (2, 6) and (4, 8), task 1 equal; b's task 1 (4, 2) twice.
        squares = [math.log(3) ** 2 / 2, math.log(2) ** 2 / 2, math.log(2) ** 2 / 2, math.log(2) ** 2 / 2]
        per_pass = math.sqrt(sum(squares) / 8)  # 8 ranks, one degree of freedom each
        noise = report["noise"]
        self.assertEqual(noise["ranks"], 8)
        self.assertAlmostEqual(noise["sd_log_per_pass"], per_pass)
        self.assertAlmostEqual(noise["sd_log_of_mean"], per_pass / math.sqrt(2))
        # E|exp(X) - 1| for X ~ N(0, s^2), integrated numerically.
        s = noise["sd_log_of_mean"]
        step = s / 2000
        numeric = sum(abs(math.exp(x) - 1) * math.exp(-x * x / (2 * s * s)) / (s * math.sqrt(2 * math.pi)) * step
                      for x in (step * (i + 0.5) for i in range(-20000, 20000)))
        self.assertAlmostEqual(noise["perfect_model_mape_percent"], 100 * numeric, places=4)
        for entry in report["models"]:
            e = entry["all"]
            self.assertAlmostEqual(e["sd_log_ratio_model_alone"] ** 2, max(0.0, e["sd_log_ratio"] ** 2 - s * s))
        self.assertIn("measurement noise: a rank's compute differs between passes", printed)

    def test_without_hardware_each_plan_keeps_its_own(self):
        self.run_tool()
        calls = [json.loads(line) for line in self.log.read_text().splitlines()]
        self.assertTrue(all(c["hardware"] is None for c in calls))


if __name__ == "__main__":
    unittest.main()
