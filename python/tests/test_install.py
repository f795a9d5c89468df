"""Where the package finds its binary and what it checks of the environment (standard library only), and,
with SHARDPLAN_TEST_INSTALLED=1, the pip-installed package as a user has it (scripts/test-pip-install.sh)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
import warnings
from pathlib import Path
from unittest import mock

import support  # noqa: F401  puts the package on the path
from shardplan import binary, versions


class SupportedTorchRecTest(unittest.TestCase):
    def test_no_torchrec_is_no_problem(self):
        self.assertIsNone(versions.torchrec_problem({}))

    def test_the_tested_minor_with_its_fbgemm(self):
        self.assertIsNone(versions.torchrec_problem({"torchrec": "1.9.2", "fbgemm-gpu-cpu": "1.9.0"}))
        self.assertIsNone(versions.torchrec_problem({"torchrec": "1.9.0+cu130", "fbgemm-gpu": "1.9.1"}))

    def test_another_torchrec_names_the_supported_versions(self):
        problem = versions.torchrec_problem({"torchrec": "1.7.0", "fbgemm-gpu": "1.7.0"})
        self.assertIn("supports TorchRec 1.9.x", problem)
        self.assertIn("torchrec 1.7.0", problem)

    def test_a_mismatched_fbgemm(self):
        problem = versions.torchrec_problem({"torchrec": "1.9.2", "fbgemm-gpu-cpu": "1.8.0"})
        self.assertIn("fbgemm-gpu-cpu 1.8.0", problem)

    def test_the_error_and_the_override(self):
        old = {"torchrec": "2.0.0"}
        with mock.patch.dict(os.environ, {versions.ALLOW_UNTESTED_ENV: ""}):
            with self.assertRaises(versions.UnsupportedTorchRec) as ctx:
                versions.require_supported_torchrec(old)
        self.assertIn(versions.ALLOW_UNTESTED_ENV, str(ctx.exception))
        self.assertIsInstance(ctx.exception, ImportError)
        with mock.patch.dict(os.environ, {versions.ALLOW_UNTESTED_ENV: "1"}), warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            versions.require_supported_torchrec(old)
        self.assertIn("torchrec 2.0.0", str(w[0].message))


class PackagedBuildTest(unittest.TestCase):
    INFO = {"torch_version": "2.14.1", "torch_cuda": "13.0"}

    def test_the_torch_it_was_built_against(self):
        binary.check_packaged_build(self.INFO, "2.14.1")
        binary.check_packaged_build(self.INFO, "2.14.1+cu130")

    def test_another_torch_says_how_to_rebuild(self):
        with self.assertRaises(binary.PackagedBuildMismatch) as ctx:
            binary.check_packaged_build(self.INFO, "2.15.0")
        self.assertIn("built against torch 2.14.1", str(ctx.exception))
        self.assertIn("torch 2.15.0", str(ctx.exception))
        self.assertIn("--no-build-isolation --force-reinstall", str(ctx.exception))

    def test_the_source_tree_fallback_only_in_a_checkout(self):
        with mock.patch.object(binary, "_SOURCE_TREE", Path(tempfile.gettempdir()) / "no-such-checkout"), \
                mock.patch.dict(os.environ, {binary.ENV_BINARY: ""}), mock.patch("shutil.which", return_value=None):
            places = [where for where, _ in binary._candidates(None)]
        self.assertNotIn("the source tree", places)
        self.assertEqual(places[0], "this package")

    def test_not_found_says_how_to_install(self):
        with mock.patch.object(binary, "_candidates", return_value=iter([("PATH", Path("/nonexistent/shard-plan"))])):
            with self.assertRaises(binary.BinaryNotFound) as ctx:
                binary.find_binary()
        self.assertIn("pip install --no-build-isolation", str(ctx.exception))

    def test_the_packaged_binary_runs_with_this_python(self):
        env = binary.binary_environment(binary.PACKAGED_BINARY, base={})
        self.assertEqual(env[binary.ENV_PYTHON], sys.executable)
        self.assertNotIn(binary.ENV_PYTHON, binary.binary_environment("/elsewhere/shard-plan", base={}))


@unittest.skipUnless(support.INSTALLED, "tests the pip-installed package (scripts/test-pip-install.sh)")
class InstalledPackageTest(unittest.TestCase):
    def test_nothing_comes_from_the_checkout(self):
        self.assertNotIn("SHARDPLAN_BINARY", os.environ)
        self.assertNotIn("LD_LIBRARY_PATH", os.environ)
        self.assertIn("site-packages", binary.__file__)

    def test_the_package_finds_its_own_binary(self):
        self.assertEqual(binary.find_binary(), str(binary.PACKAGED_BINARY))
        info = binary.build_info()
        self.assertEqual(info["torch_version"], versions.installed_versions(("torch",))["torch"].split("+")[0])

    def test_shard_plan_on_path_is_the_package(self):
        done = subprocess.run(["shard-plan", "--version"], capture_output=True, text=True, timeout=120, check=True)
        self.assertIn(json.loads(binary.BUILD_INFO.read_text())["shard_plan_version"], done.stdout)

    def test_nccl_without_a_gpu_says_so(self):
        import torch
        if "nccl" not in binary.build_info()["comm_backends"] or torch.cuda.is_available():
            self.skipTest("needs a build with the NCCL collector on a machine without a GPU")
        with tempfile.TemporaryDirectory() as tmp:
            done = subprocess.run(["shard-plan", "collect-costs", "comm", "--world-size", "2", "--spawn", "--samples",
                                   "1", "--backend", "nccl", "--out", os.path.join(tmp, "comm")],
                                  capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("--backend: nccl requested but no CUDA device is visible", done.stderr)

    def test_models_and_profiles_inside_the_package(self):
        package = binary.PACKAGE_DIR
        self.assertTrue((package / "models" / "h100" / "meta.json").is_file())
        self.assertTrue((package / "data" / "hardware" / "h100-sxm-ib400.json").is_file())


if __name__ == "__main__":
    unittest.main()
