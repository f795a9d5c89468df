"""tools/check-format: the tree is in the house style, and a file that is not is named and can be fixed."""

import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "check-format"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300)


# scripts/setup.sh installs clang-format, so CI always runs these; a machine without it fails them.
class CheckFormatTest(unittest.TestCase):
    def setUp(self):
        self.assertIsNotNone(shutil.which("clang-format"), "clang-format is missing (scripts/setup.sh installs it)")

    def test_this_tree_is_in_the_house_style(self):
        r = run()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_file_out_of_style_is_named_then_fixed(self):
        with tempfile.TemporaryDirectory(dir=ROOT) as tmp:  # inside the tree: .clang-format applies
            bad = Path(tmp) / "bad.cpp"
            bad.write_text("int  f( int x ){return x+1;}\n")
            r = run(str(bad))
            self.assertEqual(r.returncode, 1)
            self.assertIn("bad.cpp", r.stderr)
            self.assertEqual(run("--fix", str(bad)).returncode, 0)
            self.assertEqual(bad.read_text(), "int f(int x) { return x + 1; }\n")
            self.assertEqual(run(str(bad)).returncode, 0)


if __name__ == "__main__":
    unittest.main()
