"""tools/check-layers: no include runs up a layer beyond the known ones, and the known list only shrinks."""

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "check-layers"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def tree(tmp, files):
    for path, text in files.items():
        (Path(tmp) / path).parent.mkdir(parents=True, exist_ok=True)
        (Path(tmp) / path).write_text(text)


class CheckLayersTest(unittest.TestCase):
    def test_this_tree_has_no_new_violation(self):
        r = run()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_an_include_up_a_layer_fails_until_listed_and_a_listed_one_gone_fails(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree(tmp, {"src/core/plan.cpp": '#include "shardplan/core/plan.hpp"\n'
                                            '#include "shardplan/cost_model/cost_model.hpp"\n',
                       "src/cost_model/cost_model.cpp": '#include "shardplan/core/plan.hpp"\n',
                       "include/shardplan/core/plan.hpp": "#pragma once\n",
                       "include/shardplan/cost_model/cost_model.hpp": '#include "shardplan/core/plan.hpp"\n'})
            allow = Path(tmp) / "allow"
            allow.write_text("")
            r = run("--root", tmp, "--allow", str(allow))
            self.assertEqual(r.returncode, 1)
            self.assertIn("src/core/plan.cpp (core) includes include/shardplan/cost_model/cost_model.hpp (cost_model)",
                          r.stderr)
            allow.write_text("src/core/plan.cpp -> include/shardplan/cost_model/cost_model.hpp  # known\n")
            self.assertEqual(run("--root", tmp, "--allow", str(allow)).returncode, 0)
            (Path(tmp) / "src/core/plan.cpp").write_text('#include "shardplan/core/plan.hpp"\n')
            r = run("--root", tmp, "--allow", str(allow))
            self.assertEqual(r.returncode, 1)
            self.assertIn("no longer runs up a layer", r.stderr)

    def test_a_private_header_is_its_folders_and_a_local_include_resolves_to_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree(tmp, {"src/search/grid.hpp": '#include "shardplan/torch/training.hpp"\n',
                       "src/search/grid.cpp": '#include "grid.hpp"\n',
                       "include/shardplan/torch/training.hpp": "#pragma once\n"})
            r = run("--root", tmp, "--allow", str(Path(tmp) / "none"))
            self.assertEqual(r.returncode, 1)
            self.assertIn("src/search/grid.hpp (search) includes include/shardplan/torch/training.hpp (torch)", r.stderr)
            self.assertNotIn("src/search/grid.cpp", r.stderr)

    def test_a_header_outside_a_layer_folder_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree(tmp, {"include/shardplan/orphan.hpp": "#pragma once\n"})
            r = run("--root", tmp, "--allow", str(Path(tmp) / "none"))
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("orphan.hpp: outside a layer's folder", r.stderr)

    def test_a_folder_that_is_no_layer_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            tree(tmp, {"include/shardplan/misc/util.hpp": "#pragma once\n"})
            r = run("--root", tmp, "--allow", str(Path(tmp) / "none"))
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("folder 'misc' is no layer", r.stderr)


if __name__ == "__main__":
    unittest.main()
