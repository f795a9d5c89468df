"""tools/paired_compare.py: paired statistics of two planners' measured plans, and the model's beside them."""

import json
import math
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "paired_compare.py"


def run(doc, a="x", b="y"):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.json"
        path.write_text(json.dumps(doc))
        return subprocess.run([sys.executable, str(SCRIPT), str(path), a, b], capture_output=True, text=True,
                              timeout=60)


def algorithm(costs, predicted_compute, measured_compute, measured_step=None):
    measured = {"task_max_compute_ms": measured_compute, "task_predicted_max_compute_ms": predicted_compute}
    if measured_step is not None:
        measured["task_max_step_ms"] = measured_step
    return {"task_costs_ms": costs, "measured": measured}


class PairedCompareTest(unittest.TestCase):
    def test_measured_and_predicted_ratios_on_the_same_tasks(self):
        # Task 2 was not measured for y, task 3 not planned by x: both drop out of every statistic.
        doc = {"algorithms": {
            "x": algorithm([9.0, 8.0, 7.0, None], [4.0, 2.0, 3.0, None], [4.0, 3.0, 5.0, None], [8.0, 9.0, 1.0, None]),
            "y": algorithm([10.0, 10.0, 7.0, 5.0], [4.0, 4.0, 3.0, 1.0], [5.0, 3.0, None, 1.0], [10.0, 9.0, None, 1.0]),
        }}
        r = run(doc)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        compute = out["max_compute"]
        self.assertEqual((compute["tasks"], compute["a_faster"]), (2, 1))
        self.assertAlmostEqual(compute["geomean_ratio"], math.sqrt(0.8 * 1.0))
        self.assertAlmostEqual(compute["predicted"]["geomean_ratio"], math.sqrt(1.0 * 0.5))
        # two tasks: the log ratios (0, log 0.5) and (log 0.8, 0) run opposite ways
        self.assertAlmostEqual(compute["predicted"]["correlation_with_measured"], -1.0)
        step = out["max_step"]
        self.assertAlmostEqual(step["geomean_ratio"], math.sqrt(0.8))
        self.assertAlmostEqual(step["predicted"]["geomean_ratio"], math.sqrt(0.9 * 0.8))
        self.assertEqual(step["predicted"]["a_faster"], 2)

    def test_files_without_predictions_still_compare(self):
        doc = {"algorithms": {"x": {"measured": {"task_max_compute_ms": [1.0, 2.0]}},
                              "y": {"measured": {"task_max_compute_ms": [2.0, 2.0]}}}}
        r = run(doc)
        self.assertEqual(r.returncode, 0, r.stderr)
        compute = json.loads(r.stdout)["max_compute"]
        self.assertAlmostEqual(compute["geomean_ratio"], math.sqrt(0.5))
        self.assertNotIn("predicted", compute)
        self.assertNotIn("max_step", json.loads(r.stdout))

    def test_sets_pool_into_one_comparison_whatever_their_labels(self):
        first = {"algorithms": {"x": algorithm([9.0, 8.0], [4.0, 2.0], [4.0, 3.0], [8.0, 9.0]),
                                "y": algorithm([10.0, 10.0], [4.0, 4.0], [5.0, 3.0], [10.0, 9.0])}}
        # The second set calls the same planners p and q, and q found no plan for its second task.
        second = {"algorithms": {"p": algorithm([6.0, 5.0], [2.0, 2.0], [2.0, 2.0], [6.0, 5.0]),
                                 "q": algorithm([5.0, None], [3.0, None], [4.0, None], [5.0, None])}}
        with tempfile.TemporaryDirectory() as tmp:
            a, b = Path(tmp) / "a.json", Path(tmp) / "b.json"
            a.write_text(json.dumps(first))
            b.write_text(json.dumps(second))
            r = subprocess.run([sys.executable, str(SCRIPT), "--pool", f"{a}:x:y", "--pool", f"{b}:p:q"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            out = json.loads(r.stdout)
            self.assertEqual([s["a"] for s in out["sets"]], ["x", "p"])
            self.assertEqual(out["sets"][1]["max_compute"]["tasks"], 1)
            compute = out["pooled"]["max_compute"]
            self.assertEqual((compute["tasks"], compute["a_faster"]), (3, 2))
            self.assertAlmostEqual(compute["geomean_ratio"], (0.8 * 1.0 * 0.5) ** (1 / 3))
            self.assertAlmostEqual(compute["predicted"]["geomean_ratio"], (1.0 * 0.5 * (2 / 3)) ** (1 / 3))
            step = out["pooled"]["max_step"]
            self.assertAlmostEqual(step["geomean_ratio"], (0.8 * 1.0 * 1.2) ** (1 / 3))
            for bad in ([f"--pool", f"{a}:x"], ["--pool", f"{a}:x:z"], ["--pool", f"{a}:x:y", "extra"]):
                r = subprocess.run([sys.executable, str(SCRIPT)] + bad, capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 2, bad)

    def test_an_unmeasured_algorithm_is_bad_input(self):
        r = run({"algorithms": {"x": {"measured": {"task_max_compute_ms": [1.0]}}, "y": {}}})
        self.assertEqual(r.returncode, 2)
        self.assertIn("no measured per-task results for y", r.stderr)


if __name__ == "__main__":
    unittest.main()
