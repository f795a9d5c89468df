"""tools/row-block-pool: the row blocks of a pool, as collect-costs reads tables files."""

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "row-block-pool"


def run(args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


class RowBlockPoolTest(unittest.TestCase):
    def test_blocks_hold_their_share_of_rows_and_lookups(self):
        with tempfile.TemporaryDirectory() as tmp:
            pool = Path(tmp) / "pool.json"
            pool.write_text(json.dumps({"tables": [{"name": "a", "rows": 10, "dim": 16, "pooling_factor": 8.0},
                                                   {"name": "b", "rows": 3, "dim": 4}]}))
            out = Path(tmp) / "blocks.json"
            r = run([str(pool), "-o", str(out), "--blocks", "2,4"])
            self.assertEqual(r.returncode, 0, r.stderr)
            tables = {t["name"]: t for t in json.loads(out.read_text())["tables"]}
            self.assertEqual(sorted(tables), ["a/rows2", "a/rows4", "b/rows2"])  # 3 rows make no 4 blocks
            self.assertEqual((tables["a/rows4"]["rows"], tables["a/rows4"]["pooling_factor"]), (3, 2.0))
            self.assertEqual((tables["b/rows2"]["rows"], tables["b/rows2"]["pooling_factor"]), (2, 0.5))
            self.assertEqual(tables["a/rows2"]["dim"], 16)

    def test_bad_block_counts_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run([str(ROOT / "data" / "pool.json"), "-o", str(Path(tmp) / "x.json"), "--blocks", "1"])
            self.assertEqual(r.returncode, 2)
            self.assertIn("--blocks: every block count must be at least 2", r.stderr)
            self.assertFalse((Path(tmp) / "x.json").exists())


if __name__ == "__main__":
    unittest.main()
