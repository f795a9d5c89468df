"""tools/check-figures: every current figure links data that exists and states its date (#62)."""

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "check-figures"

BENCHMARK = """# Benchmark results

## Current figures

| claim | figure | date, machine | command / data |
| --- | --- | --- | --- |
| measured, against a rival | 0.9 | 2026-11-28, a VM | [run](../data/measured/run/README.md) |
| predicted | 0.8 | 2026-11-27 | `data/measured/run/plans.json` |

## Earlier figures
"""

README = """# x

## Headline figures

| claim | figure |
| --- | --- |
| measured (2026-11-28, [data](data/measured/run/README.md)) | 0.9 |

## Commands
"""


def run(root):
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True,
                          timeout=60)


class CheckFiguresTest(unittest.TestCase):
    def test_this_tree_links_every_figures_data(self):
        r = run(ROOT)
        self.assertEqual(r.returncode, 0, r.stderr)

    def make_tree(self, tmp, benchmark=BENCHMARK, readme=README):
        root = Path(tmp)
        (root / "docs").mkdir()
        (root / "data/measured/run").mkdir(parents=True)
        (root / "data/measured/run/README.md").write_text("log\n")
        (root / "data/measured/run/plans.json").write_text("{}\n")
        (root / "docs/benchmark.md").write_text(benchmark)
        (root / "README.md").write_text(readme)
        return root

    def test_a_tree_with_its_data_passes(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run(self.make_tree(tmp))
            self.assertEqual(r.returncode, 0, r.stderr)

    def test_a_row_whose_data_is_gone_fails_naming_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = self.make_tree(tmp)
            (root / "data/measured/run/plans.json").unlink()
            r = run(root)
            self.assertEqual(r.returncode, 1)
            self.assertIn("docs/benchmark.md:8: names data/measured/run/plans.json, which does not exist", r.stderr)

    def test_a_broken_link_and_a_missing_date_fail(self):
        with tempfile.TemporaryDirectory() as tmp:
            readme = README.replace("(2026-11-28, [data](data/measured/run/README.md))",
                                    "([data](data/measured/gone/README.md))")
            r = run(self.make_tree(tmp, readme=readme))
            self.assertEqual(r.returncode, 1)
            self.assertIn("README.md:7: links data/measured/gone/README.md, which does not exist", r.stderr)
            self.assertIn("README.md:7: states no date", r.stderr)


if __name__ == "__main__":
    unittest.main()
