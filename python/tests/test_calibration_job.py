"""`shard-plan calibrate` as a torchrun job on 2 Gloo CPU ranks: every rank times compute sets with FBGEMM's
TBE, the two time the all-to-alls, rank 0 writes one model directory within the budget, and the drop-in
planner plans a two-EBC model with it that trains 3 steps under DistributedModelParallel."""

import json
import math
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

from support import BINARY, TESTS_DIR, environment, failure_text, needs_binary, needs_torchrec, torchrun

TRAIN = TESTS_DIR / "scripts" / "train_two_collections.py"
BUDGET_MINUTES = 3


def calibrate_job(out, ranks=2):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}",
               "--no-python", BINARY, "calibrate", "--out", str(out), "--samples", "40", "--comm-plans", "8",
               "--minutes", str(BUDGET_MINUTES), "--epochs", "40"]
    return subprocess.run(command, capture_output=True, text=True, timeout=BUDGET_MINUTES * 60 + 120,
                          env=environment())


@needs_torchrec
@needs_binary
class CalibrationJobTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.model = Path(cls.tmp.name) / "cluster-model"
        started = time.monotonic()
        done = calibrate_job(cls.model)
        cls.seconds = time.monotonic() - started
        if done.returncode != 0:
            raise AssertionError(f"calibration job failed (exit {done.returncode}):\n{failure_text(done.stderr)}")
        cls.stdout = done.stdout
        cls.meta = json.loads((cls.model / "meta.json").read_text())
        result = Path(cls.tmp.name) / "training.json"
        trained = torchrun(str(TRAIN), result, cls.model)
        if trained.returncode != 0:
            raise AssertionError(f"training failed (exit {trained.returncode}):\n{failure_text(trained.stderr)}")
        cls.training = json.loads(result.read_text())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_job_ends_within_its_budget(self):
        self.assertLess(self.seconds, BUDGET_MINUTES * 60 + 60)  # plus torchrun's and the imports' start
        self.assertLessEqual(self.meta["calibration"]["seconds"], BUDGET_MINUTES * 60)

    def test_the_model_names_the_kernel_world_and_host_layout(self):
        self.assertEqual(self.meta["hardware"]["compute"]["kernel"], "fbgemm-tbe")
        job = self.meta["calibration"]["job"]
        self.assertEqual((job["world_size"], job["gpus_per_host"], job["hosts"], job["backend"]), (2, 2, 1, "gloo"))
        self.assertEqual([r["rank"] for r in job["ranks"]], [0, 1])
        self.assertEqual(self.meta["hardware"]["comm"]["timed_on"]["world_size"], 2)

    def test_both_ranks_timed_compute_sets(self):
        lines = (self.model / "calibration" / "samples.jsonl").read_text().splitlines()
        where = {json.loads(line)["timed_on"].split(" of ")[0] for line in lines if line.strip()}
        self.assertEqual(where, {"rank 0", "rank 1"})

    def test_the_all_to_alls_were_timed_on_the_job(self):
        fit = self.meta["calibration"]["comm_fit"]
        self.assertEqual((fit["world_size"], fit["gpus_per_host"]), (2, 2))
        self.assertGreaterEqual(fit["tuning_plans"] + fit["held_out_plans"], 8)

    def test_a_model_planned_with_it_trains(self):
        self.assertTrue(self.training["plans_identical"])
        self.assertEqual(len(self.training["losses"]), 3)
        self.assertTrue(all(math.isfinite(loss) for loss in self.training["losses"]))


if __name__ == "__main__":
    unittest.main()
