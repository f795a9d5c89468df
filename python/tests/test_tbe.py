"""FBGEMM's table-batched embedding as a shard-set timer: shardplan.measure.tbe and the worker the
binary drives (--kernel fbgemm-tbe)."""

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from support import BINARY, ROOT, environment, needs_binary, needs_torchrec

TABLES = ROOT / "tests" / "fixtures" / "tables_with_replica.json"


def traces_file(tmp, batch=64):
    path = Path(tmp) / "set.traces"
    subprocess.run([BINARY, "gen-traces", "--tables", str(TABLES), "--batch-size", str(batch), "-o", str(path), "-q"],
                   check=True, timeout=120)
    return path


@needs_torchrec
@needs_binary
class TbeTimerTest(unittest.TestCase):
    def test_a_set_runs_as_one_operator_and_trains(self):
        import torch
        from shardplan.measure.tbe import TbeGroup, time_set
        from shardplan.measure.traces import read_pieces
        with tempfile.TemporaryDirectory() as tmp:
            batch, pieces = read_pieces(traces_file(tmp))
        self.assertEqual(batch, 64)
        self.assertEqual([(p.name, p.rows, p.dim) for p in pieces][:2], [("big", 60000, 52), ("hot", 40, 16)])
        group = TbeGroup(pieces, "fp32", "sgd", torch.device("cpu"))
        before = group.op.split_embedding_weights()[1].clone()
        out = group.op(group.indices, group.offsets)
        self.assertEqual(tuple(out.shape), (64, sum(p.dim for p in pieces)))  # every piece pooled side by side
        group.step()
        self.assertFalse(torch.equal(before, group.op.split_embedding_weights()[1]))  # the fused update ran
        samples = time_set(pieces, iterations=2)
        self.assertEqual(len(samples), 2)
        self.assertTrue(all(s > 0 for s in samples))

    def test_the_worker_answers_line_by_line_and_survives_a_bad_request(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = traces_file(tmp)
            requests = [{"traces": str(path), "iterations": 2}, {"traces": str(Path(tmp) / "missing")},
                        {"traces": str(path), "iterations": 1, "warmup": 0}]
            done = subprocess.run([sys.executable, "-m", "shardplan.measure.tbe_worker"],
                                  input="".join(json.dumps(r) + "\n" for r in requests), capture_output=True,
                                  text=True, timeout=300, env=environment())
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        answers = [json.loads(line) for line in done.stdout.splitlines()]
        self.assertTrue(answers[0]["ready"])
        self.assertIn("fbgemm-gpu-cpu", answers[0]["versions"])
        self.assertEqual(len(answers[1]["samples_ms"]), 2)
        self.assertIn("FileNotFoundError", answers[2]["error"])
        self.assertEqual(len(answers[3]["samples_ms"]), 1)



@needs_torchrec
@needs_binary
class KernelFlagTest(unittest.TestCase):
    """The binary's --kernel fbgemm-tbe: collect-costs and evaluate --measure time sets through the worker."""

    def run_binary(self, *args, **env):
        return subprocess.run([BINARY, *map(str, args)], capture_output=True, text=True, timeout=600,
                              env=environment(**env))

    def test_collected_samples_name_the_kernel(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "costs"
            done = self.run_binary("collect-costs", "compute", "--tables", TABLES, "--samples", 3, "--max-tables", 4,
                                   "--batch-size", 64, "--iterations", 1, "--kernel", "fbgemm-tbe", "--out", out)
            self.assertEqual(done.returncode, 0, done.stderr[-3000:])
            meta = json.loads((out / "meta.json").read_text())
            samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
        self.assertEqual(meta["kernel"], "fbgemm-tbe")
        self.assertIn("SplitTableBatchedEmbeddingBagsCodegen", meta["kernel_detail"])
        self.assertIn("fbgemm-gpu-cpu 1.9.0", meta["kernel_detail"])
        self.assertEqual(len(samples), 3)
        self.assertTrue(all(s["latency_ms"] > 0 for s in samples), samples)

    def test_evaluate_measures_with_the_kernel_and_warns_of_the_models(self):
        with tempfile.TemporaryDirectory() as tmp:
            plan = Path(tmp) / "plan.json"
            self.assertEqual(self.run_binary("--tables", TABLES, "--gpus", 2, "--mem-per-gpu", "8MiB", "-q", "-o",
                                             plan).returncode, 0)
            done = self.run_binary("evaluate", "--plan", plan, "--tables", TABLES, "--measure", "--kernel",
                                   "fbgemm-tbe", "--measure-batch-size", 64, "--json")
        self.assertEqual(done.returncode, 0, done.stderr[-3000:])
        measured = json.loads(done.stdout)["measured"]
        self.assertGreater(measured["max_compute_ms"], 0)
        self.assertIn("timed with the embedding_bag kernel, and this measures with fbgemm-tbe", done.stderr)

    def test_without_the_python_stack_it_says_how_to_install_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            done = self.run_binary("collect-costs", "compute", "--tables", TABLES, "--samples", 1, "--kernel",
                                   "fbgemm-tbe", "--out", Path(tmp) / "costs", SHARDPLAN_PYTHON="/nonexistent/python3")
            self.assertEqual(done.returncode, 2, done.stderr)
            self.assertIn("scripts/setup-python.sh", done.stderr)
            self.assertFalse((Path(tmp) / "costs").exists())
        done = self.run_binary("collect-costs", "compute", "--tables", TABLES, "--samples", 1, "--kernel", "magic",
                               "--out", "/tmp/never")
        self.assertEqual(done.returncode, 2)
        self.assertIn("--kernel: must be embedding_bag or fbgemm-tbe, got 'magic'", done.stderr)


if __name__ == "__main__":
    unittest.main()
