"""tools/gen-synthetic-model: a seeded Zipf rank-size model, and the bundled one it made."""

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "gen-synthetic-model"


def run(args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


class GenSyntheticModelTest(unittest.TestCase):
    def test_rows_span_the_range_by_rank_and_the_seed_fixes_the_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            outs = []
            for name in ("a.json", "b.json"):
                out = Path(tmp) / name
                r = run(["--num-tables", "50", "--min-rows", "100", "--max-rows", "1e6", "--seed", "3", "-o", str(out)])
                self.assertEqual(r.returncode, 0, r.stderr)
                outs.append(out.read_text())
            self.assertEqual(outs[0], outs[1])
            tables = json.loads(outs[0])["tables"]
            rows = sorted((t["rows"] for t in tables), reverse=True)
            self.assertEqual((len(tables), rows[0], rows[-1]), (50, 1_000_000, 100))
            self.assertAlmostEqual(rows[1], 1e6 / 2 ** (4 / __import__("math").log10(50)), delta=1)
            for t in tables:
                self.assertIn(t["dim"], (16, 32, 64, 128, 256))
                self.assertTrue(1 <= t["pooling_factor"] <= 100)

    def test_the_bundled_model_is_what_its_source_command_writes(self):
        bundled = ROOT / "data" / "configs" / "synthetic-1200-tables.json"
        command = json.loads(bundled.read_text())["source"].split()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "m.json"
            r = run(command[1:] + ["-o", str(out)])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(out.read_text(), bundled.read_text())
            weights = sum(t["rows"] * t["dim"] * 4 for t in json.loads(out.read_text())["tables"])
            self.assertGreater(weights, 10e12)

    def test_refuses_an_empty_range(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run(["--min-rows", "10", "--max-rows", "5", "-o", str(Path(tmp) / "x.json")])
            self.assertEqual(r.returncode, 2)
            self.assertIn("--min-rows", r.stderr)


if __name__ == "__main__":
    unittest.main()
