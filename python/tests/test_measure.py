"""python -m shardplan.measure on 2 Gloo CPU ranks: whole steps and the per-rank mode, the JSON layout of
`evaluate --measure --json`, and tools/paired-measure + paired_compare.py pairing TorchRec measurements of
shard-plan's plans against TorchRec's own planner's."""

import json
import math
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from support import (BINARY, HAVE_TORCHREC, ROOT, environment, failure_text, needs_binary, needs_torchrec,
                     torchrun)

TASKS = ROOT / "tests" / "fixtures" / "tasks-2gpu-tiny.json"
CPU_TYPES = "table_wise,column_wise,data_parallel"  # what TorchRec's sharders offer on a CPU


# The analytic model makes "tiny" a data-parallel replica and splits "big" in uneven column slices here.
REPLICA_TABLES = ROOT / "tests" / "fixtures" / "tables_with_replica.json"


def plan_of(tmp, tables, *args):
    plan = Path(tmp) / "plan.json"
    subprocess.run([BINARY, "--tables", str(tables), "--gpus", "2", "--sharding-types", CPU_TYPES, "--no-compare",
                    "-q", "-o", str(plan), *args], check=True, timeout=300)
    return plan


def first_task(tmp):
    tasks = json.loads(TASKS.read_text())
    tables = Path(tmp) / "tables.json"
    tables.write_text(json.dumps({"tables": tasks["tasks"][0]["tables"]}))
    return tables, plan_of(tmp, tables, "--mem-per-gpu", "1GiB")


@needs_torchrec
@needs_binary
class MeasureTest(unittest.TestCase):
    def measure(self, mode, replica=False, *extra):
        with tempfile.TemporaryDirectory() as tmp:
            tables, plan = first_task(tmp)
            if replica:
                tables, plan = REPLICA_TABLES, plan_of(tmp, REPLICA_TABLES, "--mem-per-gpu", "8MiB", "--model",
                                                       "analytic")
            out = Path(tmp) / "measured.json"
            done = torchrun("-m shardplan.measure", "--plan", plan, "--tables", tables, "--mode", mode,
                            "--batch-size", 256, "--warmup", 1, "--steps", 2, "-o", out, *extra)
            self.assertEqual(done.returncode, 0, failure_text(done.stderr))
            return json.loads(out.read_text()), json.loads(plan.read_text())

    def check_layout(self, doc, plan, mode):
        self.assertEqual(doc["algorithm"], plan["algorithm"])
        self.assertEqual(doc["measured_with"]["mode"], mode)
        self.assertEqual(doc["measured_with"]["versions"]["torchrec"], "1.9.2")
        self.assertEqual(len(doc["devices"]), 2)
        for d, p in zip(doc["devices"], plan["devices"]):
            for key in ("measured_compute_ms", "measured_fw_comm_ms", "measured_bw_comm_ms", "measured_total_ms"):
                self.assertTrue(math.isfinite(d[key]) and d[key] >= 0, (key, d))
            self.assertGreater(d["measured_compute_ms"], 0)
            self.assertGreaterEqual(d["measured_total_ms"], d["measured_compute_ms"] * 0.5)
            self.assertEqual(d["compute_ms"], p["compute_ms"])  # the plan's prediction beside it
        m = doc["measured"]
        self.assertEqual(m["max_compute_ms"], max(d["measured_compute_ms"] for d in doc["devices"]))
        self.assertEqual(m["max_total_ms"], max(d["measured_total_ms"] for d in doc["devices"]))
        self.assertEqual(doc["predicted"]["max_total_ms"], plan["summary"]["max_total_ms"])

    def test_whole_steps(self):
        doc, plan = self.measure("step")
        self.check_layout(doc, plan, "step")

    def test_per_rank(self):
        doc, plan = self.measure("per-rank", False, "--rounds", 3)
        self.check_layout(doc, plan, "per-rank")
        self.assertEqual(doc["measured_with"]["rounds"], 3)
        for d in doc["devices"]:  # each rank timed in three rounds; the reported compute is their medians'
            rounds = d["measured_compute_rounds_ms"]
            self.assertEqual(len(rounds), 3, d)
            self.assertTrue(all(math.isfinite(r) and r > 0 for r in rounds), d)
            self.assertLessEqual(d["measured_compute_ms"], sum(rounds), d)

    def test_rounds_must_be_positive(self):
        # Refused as the arguments are read: the files are never opened.
        done = subprocess.run([sys.executable, "-m", "shardplan.measure", "--plan", "plan.json", "--tables",
                               "tables.json", "--rounds", "0"], capture_output=True, text=True, timeout=120,
                              env={k: v for k, v in environment().items() if k != "RANK"})
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("--rounds: must be at least 1, got 0", done.stderr)
        self.assertNotIn("torch.distributed.run", done.stderr)

    def test_per_rank_with_a_replica_and_uneven_column_slices(self):
        doc, plan = self.measure("per-rank", True)
        types = {t["sharding_type"] for t in plan["tables"]}
        self.assertTrue({"data_parallel", "column_wise"} <= types, types)
        self.check_layout(doc, plan, "per-rank")
        self.assertEqual(doc["measured_with"]["sharding_groups"], "one")
        doc, plan = self.measure("per-rank", True, "--separate-groups")
        self.check_layout(doc, plan, "per-rank")
        self.assertEqual(doc["measured_with"]["sharding_groups"], "as planned")


class CachedPlanRefusedOnCpuTest(unittest.TestCase):
    """A plan with tables in host memory is refused on a CPU, before any rank starts: FBGEMM builds no cache
    there and TorchRec keeps every table in host memory, so the run would not be the plan's."""

    def write(self, tmp):
        from test_plan_file import cached_plan
        plan = cached_plan()
        tables = [{"name": t["name"], "rows": t["rows"], "dim": t["dim"], "pooling_factor": 2.0}
                  for t in plan["tables"]]
        plan_path, tables_path = Path(tmp) / "plan.json", Path(tmp) / "tables.json"
        plan_path.write_text(json.dumps(plan))
        tables_path.write_text(json.dumps({"tables": tables}))
        return plan, plan_path, tables_path

    def test_the_command_refuses_before_starting_ranks(self):
        # --device cpu: decided without importing torch, so this runs without the stack too.
        with tempfile.TemporaryDirectory() as tmp:
            _, plan, tables = self.write(tmp)
            done = subprocess.run([sys.executable, "-m", "shardplan.measure", "--plan", str(plan), "--tables",
                                   str(tables), "--device", "cpu"], capture_output=True, text=True, timeout=120,
                                  env={k: v for k, v in environment().items() if k != "RANK"})
        self.assertEqual(done.returncode, 2, done.stderr)
        for fragment in ('shardplan.measure: plan: tables "rw" (fused_uvm_caching), "tw" (fused_uvm_caching), '
                         '"uvm" (fused_uvm) in host memory cannot be measured on a cpu', "FBGEMM builds no cache",
                         "--device cuda"):
            self.assertIn(fragment, done.stderr)
        self.assertNotIn("torch.distributed.run", done.stderr)  # no rank was started
        self.assertEqual(done.stdout, "")

    def test_the_default_device_on_a_host_without_cuda(self):
        if not HAVE_TORCHREC:
            self.skipTest("--device auto asks torch for CUDA")
        import torch
        if torch.cuda.is_available():
            self.skipTest("auto picks CUDA here, which runs the plan")
        with tempfile.TemporaryDirectory() as tmp:
            _, plan, tables = self.write(tmp)
            done = subprocess.run([sys.executable, "-m", "shardplan.measure", "--plan", str(plan), "--tables",
                                   str(tables)], capture_output=True, text=True, timeout=120,
                                  env={k: v for k, v in environment().items() if k != "RANK"})
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertIn("cannot be measured on a cpu", done.stderr)

    def test_each_rank_refuses_too(self):
        # Under torchrun every rank checks its inputs first (check_plan): a ValueError, exit 2 at the rank.
        from types import SimpleNamespace as NS
        from shardplan.measure.checks import check_plan
        with tempfile.TemporaryDirectory() as tmp:
            plan, _, tables = self.write(tmp)
            with self.assertRaisesRegex(ValueError, r'"rw" \(fused_uvm_caching\).*cannot be measured on a cpu'):
                check_plan(plan, tables, NS(type="cpu"))
            check_plan(plan, tables, NS(type="cuda"))  # GPUs run the plan's kernels
            plan["tables"] = [t for t in plan["tables"] if t["name"] == "cw"]
            plan["tables"][0]["shards"][1]["rank"] = 1
            plan["tables"][0]["shards"][1]["placement"] = "rank:1/cuda:1"
            plan["tables"][0]["ranks"] = [0, 1]
            check_plan(plan, tables, NS(type="cpu"))  # the fused table alone: measured as before


@needs_torchrec
@needs_binary
class PairedOnTorchRecTest(unittest.TestCase):
    def test_paired_measure_and_compare_read_torchrec_measurements(self):
        with tempfile.TemporaryDirectory() as tmp:
            done = subprocess.run(
                [sys.executable, str(ROOT / "tools" / "paired-measure"), "--tasks", str(TASKS), "--out", tmp,
                 "--binary", BINARY, "--passes", "1", "--measurer", "torchrec-step", "--python", sys.executable,
                 "--planner", f"neuroshard=--sharding-types {CPU_TYPES}",
                 "--planner", f"torchrec_planner=--algo torchrec_planner_cpu --sharding-types {CPU_TYPES}"],
                capture_output=True, text=True, timeout=900, env=environment())
            self.assertEqual(done.returncode, 0, failure_text(done.stderr))
            measured = json.loads((Path(tmp) / "measured.json").read_text())
            for label in ("neuroshard", "torchrec_planner"):
                steps = measured["algorithms"][label]["measured"]["task_max_step_ms"]
                self.assertTrue(all(s is not None and s > 0 for s in steps), steps)
                plan = json.loads((Path(tmp) / f"{label}-0.json").read_text())
                self.assertEqual(plan["algorithm"], label if label == "neuroshard" else "torchrec_planner_cpu")
            compared = subprocess.run([sys.executable, str(ROOT / "tools" / "paired_compare.py"),
                                       str(Path(tmp) / "measured.json"), "neuroshard", "torchrec_planner"],
                                      capture_output=True, text=True, timeout=60)
            self.assertEqual(compared.returncode, 0, compared.stderr)
            self.assertIn("neuroshard", compared.stdout)


if __name__ == "__main__":
    unittest.main()
