"""tools/allreduce-workloads: all-reduce sizes for collect-costs comm --workloads."""

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "allreduce-workloads"


def run(args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


class AllreduceWorkloadsTest(unittest.TestCase):
    def test_sizes_stay_in_range_and_repeat_for_a_seed(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = [Path(tmp) / "a.json", Path(tmp) / "b.json", Path(tmp) / "c.json"]
            for path, seed in zip(out, ["3", "3", "4"]):
                r = run(["--world-size", "4", "--samples", "50", "--seed", seed, "--min-floats", "100",
                         "--max-floats", "100000", "-o", str(path)])
                self.assertEqual(r.returncode, 0, r.stderr)
            doc = json.loads(out[0].read_text())
            self.assertEqual(doc["format"], "shard-plan-comm-workloads/1")
            self.assertEqual(doc["world_size"], 4)
            self.assertEqual(len(doc["workloads"]), 50)
            sizes = [w["allreduce_floats"] for w in doc["workloads"]]
            self.assertTrue(all(100 <= s <= 100000 for s in sizes), sizes)
            self.assertLess(min(sizes), 1000)  # log-uniform: small sizes are drawn too
            for w in doc["workloads"]:
                self.assertEqual(w["dim_sums"], [4, 4, 4, 4])
                self.assertEqual(w["delays_ms"], [0.0] * 4)
            self.assertEqual(out[0].read_text(), out[1].read_text())
            self.assertNotEqual(out[0].read_text(), out[2].read_text())

    def test_bad_options_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run(["--world-size", "1", "--samples", "5", "-o", str(Path(tmp) / "x.json")])
            self.assertEqual(r.returncode, 2)
            self.assertIn("--world-size: must be at least 2, got 1", r.stderr)
            self.assertFalse((Path(tmp) / "x.json").exists())


if __name__ == "__main__":
    unittest.main()
