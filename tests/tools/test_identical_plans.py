"""tools/identical-plans: the tasks where two planners wrote the same placement, and how far apart they measured."""

import json
import math
import unittest
from pathlib import Path

from measured_run_case import MeasuredRunCase

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "identical-plans"


def plan(ranks, sharding_type="table_wise"):
    return {"tables": [{"name": f"t{i}", "sharding_type": sharding_type,
                        "shards": [{"rank": r, "shard_offsets": [0, 0], "shard_sizes": [10, 8]}]}
                       for i, r in enumerate(ranks)]}


class IdenticalPlans(MeasuredRunCase):
    SCRIPT = SCRIPT

    def setUp(self):
        super().setUp()
        # Tasks 0 and 1: the same placement from both planners; task 2: b puts t1 elsewhere. Two passes each.
        plans = {"a": [plan([0, 1]), plan([1, 0]), plan([0, 1])], "b": [plan([0, 1]), plan([1, 0]), plan([0, 0])]}
        steps = {"a": [[10.0, 40.0], [20.0, 20.0], [5.0, 5.0]], "b": [[20.0, 20.0], [10.0, 10.0], [50.0, 50.0]]}
        algorithms = {}
        for label in plans:
            algorithms[label] = {"passes": {}}
            for task in range(3):
                (self.root / f"{label}-{task}.json").write_text(json.dumps(plans[label][task]))
                algorithms[label]["passes"][str(task)] = [{"max_step_ms": s, "max_compute_ms": s / 2}
                                                           for s in steps[label][task]]
        self.write_measured(algorithms)

    def test_twins_spread_is_the_sd_of_their_log_ratios(self):
        out = self.root / "twins.json"
        r = self.run_tool("a", "b", "--json", str(out))
        self.assertEqual(r.returncode, 0, r.stderr)
        summary = json.loads(out.read_text())
        self.assertEqual(summary["tasks"], [0, 1])  # task 2's plans differ
        self.assertEqual(summary["paired_tasks"], 3)
        # Task 0: gmean(10, 40) = 20 against 20, ratio 1; task 1: 20 against 10, ratio 2.
        logs = [0.0, math.log(2.0)]
        sd = math.sqrt(sum((x - math.log(2.0) / 2) ** 2 for x in logs))  # n - 1 = 1
        for figure in ("step", "compute"):
            self.assertAlmostEqual(summary[figure]["mean_ratio"], math.sqrt(2.0))
            self.assertAlmostEqual(summary[figure]["sd_log_ratio"], sd)
            self.assertAlmostEqual(summary[figure]["sd_of_a_mean_over_paired_tasks"], sd / math.sqrt(3))

    def test_fewer_than_two_twins_is_refused(self):
        (self.root / "b-1.json").write_text(json.dumps(plan([1, 0], "column_wise")))  # another type: no twin
        r = self.run_tool("a", "b")
        self.assertEqual(r.returncode, 2)
        self.assertIn("1 task(s)", r.stderr)

    def test_an_unknown_planner_is_named(self):
        r = self.run_tool("a", "c")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no planner 'c'", r.stderr)


if __name__ == "__main__":
    unittest.main()
