"""tools/rowwise-workloads: pairs of row-wise workloads for collect-costs comm --workloads."""

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "rowwise-workloads"


def run(args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


class RowwiseWorkloadsTest(unittest.TestCase):
    def test_pairs_carry_the_same_width_two_ways_and_repeat_for_a_seed(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = [Path(tmp) / "a.json", Path(tmp) / "b.json", Path(tmp) / "c.json"]
            for path, seed in zip(out, ["3", "3", "4"]):
                r = run(["--world-size", "4", "--pairs", "30", "--seed", seed, "--min-dim", "8", "--max-dim", "64",
                         "-o", str(path)])
                self.assertEqual(r.returncode, 0, r.stderr)
            doc = json.loads(out[0].read_text())
            self.assertEqual(doc["format"], "shard-plan-comm-workloads/1")
            self.assertEqual(doc["world_size"], 4)
            workloads = doc["workloads"]
            self.assertEqual(len(workloads), 60)
            for i in range(0, 60, 2):
                pair = workloads[i:i + 2]
                rowwise = [w for w in pair if w.get("rw_dim")]
                plain = [w for w in pair if not w.get("rw_dim")]
                self.assertEqual((len(rowwise), len(plain)), (1, 1), pair)
                rw = rowwise[0]["rw_dim"]
                self.assertTrue(8 <= rw <= 64 and rw % 4 == 0, rw)
                self.assertEqual(plain[0]["dim_sums"], [d + rw for d in rowwise[0]["dim_sums"]])
                for w in pair:
                    self.assertEqual(w["delays_ms"], [0.0] * 4)
                    self.assertTrue(all(d > 0 and d % 4 == 0 for d in w["dim_sums"]))
            # Both orders occur, so that drift during a run falls on both sides alike.
            self.assertEqual({bool(workloads[i].get("rw_dim")) for i in range(0, 60, 2)}, {True, False})
            self.assertEqual(out[0].read_text(), out[1].read_text())
            self.assertNotEqual(out[0].read_text(), out[2].read_text())

    def test_bad_options_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run(["--world-size", "1", "--pairs", "0", "-o", str(Path(tmp) / "x.json")])
            self.assertEqual(r.returncode, 2)
            self.assertIn("--world-size: must be at least 2, got 1", r.stderr)
            self.assertIn("--pairs: must be at least 1, got 0", r.stderr)
            self.assertFalse((Path(tmp) / "x.json").exists())


if __name__ == "__main__":
    unittest.main()
