"""tools/step-headroom: a paired-measure run's steps, had A's compute been perfectly balanced."""

import json
import math
import unittest
from pathlib import Path

from measured_run_case import MeasuredRunCase

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "step-headroom"


def run_pass(step, ranks):
    """One pass of one plan: per rank [predicted, measured] compute; the slowest rank is max compute."""
    return {"max_step_ms": step, "max_compute_ms": max(ranks), "device_compute_ms": [[1.0, c] for c in ranks]}


class StepHeadroom(MeasuredRunCase):
    SCRIPT = SCRIPT

    def setUp(self):
        super().setUp()
        # Task 0: a's ranks 6 and 2 (mean 4), step 40; b's 5 and 5, step 50. Task 1 has b only.
        algorithms = {
            "a": {"passes": {"0": [run_pass(40.0, [6.0, 2.0]), run_pass(40.0, [6.0, 2.0])]}},
            "b": {"passes": {"0": [run_pass(50.0, [5.0, 5.0])], "1": [run_pass(30.0, [9.0, 1.0])]}},
        }
        self.write_measured(algorithms)

    def test_balanced_step_replaces_the_slowest_rank_by_the_mean(self):
        out = self.root / "headroom.json"
        r = self.run_tool("a", "b", "--json", str(out))
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(out.read_text())
        self.assertEqual(doc["tasks"], ["0:0"])  # run 0's task 1: a was not measured
        s = doc["summary"]
        self.assertAlmostEqual(s["step_ratio"], 40.0 / 50.0)
        self.assertAlmostEqual(s["balanced_step_ratio"], (40.0 - 6.0 + 4.0) / 50.0)
        self.assertAlmostEqual(s["b_balanced_step_ratio"], 1.0)  # b is balanced already
        self.assertAlmostEqual(s["compute_ratio"], 6.0 / 5.0)
        self.assertAlmostEqual(s["compute_bound"], 4.0 / 5.0)
        self.assertAlmostEqual(s["compute_share_of_b_step"], 0.1)
        self.assertIn("perfectly balanced 0.760", r.stdout)

    def test_passes_pool_as_geometric_means(self):
        doc = json.loads(self.measured.read_text())
        doc["algorithms"]["a"]["passes"]["0"][1] = run_pass(90.0, [6.0, 2.0])
        self.measured.write_text(json.dumps(doc))
        out = self.root / "headroom.json"
        self.assertEqual(self.run_tool("a", "b", "--json", str(out)).returncode, 0)
        step = math.sqrt(40.0 * 90.0)
        self.assertAlmostEqual(json.loads(out.read_text())["summary"]["step_ratio"], step / 50.0)

    def test_pool_pairs_each_run_s_tasks_within_that_run(self):
        other = self.root / "other.json"
        other.write_text(json.dumps({"algorithms": {"a": {"passes": {"0": [run_pass(20.0, [3.0, 3.0])]}},
                                                    "b": {"passes": {"0": [run_pass(80.0, [4.0, 4.0])]}}}}))
        out = self.root / "headroom.json"
        r = self.run_tool("a", "b", "--pool", str(other), "--json", str(out))
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(out.read_text())
        self.assertEqual(doc["tasks"], ["0:0", "1:0"])
        self.assertAlmostEqual(doc["summary"]["step_ratio"], math.sqrt(40.0 / 50.0 * 20.0 / 80.0))
        self.assertIn("2 tasks of 2 run(s)", r.stdout)

    def test_an_unknown_planner_or_no_common_task_is_refused(self):
        r = self.run_tool("a", "c")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no planner 'c'", r.stderr)
        r = self.run_tool("a", "b", "--pool", str(self.root / "missing.json"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("missing.json: not a paired-measure measured.json", r.stderr)
        doc = json.loads(self.measured.read_text())
        del doc["algorithms"]["b"]["passes"]["0"]
        self.measured.write_text(json.dumps(doc))
        r = self.run_tool("a", "b")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no task where both", r.stderr)


if __name__ == "__main__":
    unittest.main()
