"""tools/torchrec-cost-data: per-rank timings on TorchRec as compute cost data, which `shard-plan calibrate
--sets` fine-tunes on. Standard library only (no TorchRec needed): the paired-measure directory is written
here as paired-measure lays it out."""

import json
import math
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from support import BINARY, ROOT, needs_binary

TOOL = ROOT / "tools" / "torchrec-cost-data"
HIST = [0.0] * 16 + [1.0]
RANKS = 4


def table(name, rows, dim, pooling):
    return {"name": name, "rows": rows, "dim": dim, "pooling_factor": pooling, "reuse_hist": HIST}


def sharding(t, kind, ranks, cols=None):
    cols = cols or [t["dim"]] * len(ranks)
    shards = [{"rank": r, "shard_offsets": [0, sum(cols[:i])], "shard_sizes": [t["rows"], c]}
              for i, (r, c) in enumerate(zip(ranks, cols))]
    if kind == "data_parallel":
        shards = [{"rank": r, "shard_offsets": [0, 0], "shard_sizes": [t["rows"], t["dim"]]} for r in ranks]
    return {"name": t["name"], "sharding_type": kind, "shards": shards}


def write_measured(directory, tasks=4, labels=("a", "b"), row_wise=False):
    """tasks x labels plans on RANKS ranks, each rank timed in two passes at 1 + rank + task ms (x 1.1 in the
    second pass)."""
    directory.mkdir(parents=True, exist_ok=True)
    algorithms = {}
    for label in labels:
        passes = {}
        for task in range(tasks):
            tables = [table(f"t{k}", 1000 * (k + 1) + task, 8 * (k % 4 + 1), 1.0 + k) for k in range(6)]
            (directory / f"tables-{task}.json").write_text(json.dumps({"tables": tables}))
            plan_tables = [sharding(tables[k], "table_wise", [k % RANKS]) for k in range(4)]
            plan_tables.append(sharding(tables[4], "column_wise", [0, 1], [tables[4]["dim"] // 2] * 2))
            plan_tables.append(sharding(tables[5], "row_wise" if row_wise else "data_parallel", list(range(RANKS))))
            (directory / f"{label}-{task}.json").write_text(json.dumps({"num_devices": RANKS, "tables": plan_tables}))
            passes[str(task)] = [{"device_compute_ms": [[1.0, (1 + r + task) * scale] for r in range(RANKS)]}
                                 for scale in (1.0, 1.1)]
        algorithms[label] = {"passes": passes}
    (directory / "measured.json").write_text(json.dumps({"measured_with": "torchrec-per-rank",
                                                         "algorithms": algorithms}))


def run_tool(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=60)


class TorchRecCostDataTest(unittest.TestCase):
    def test_each_measured_rank_becomes_a_set(self):
        with tempfile.TemporaryDirectory() as tmp:
            measured, out = Path(tmp) / "pm4", Path(tmp) / "costs"
            write_measured(measured)
            done = run_tool("--measured", measured, "--out", out, "--tasks", "1-2", "--planners", "b")
            self.assertEqual(done.returncode, 0, done.stderr)
            meta = json.loads((out / "meta.json").read_text())
            self.assertEqual((meta["format"], meta["kind"], meta["kernel"]),
                             ("shard-plan-costs/1", "compute", "torchrec-per-rank"))
            samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
            self.assertEqual(len(samples), 2 * RANKS)  # tasks 1 and 2 of planner b
            first = samples[0]
            self.assertEqual(first["origin"], "torchrec per-rank: pm4 b-1 rank 0")
            self.assertAlmostEqual(first["latency_ms"], 2.0 * math.sqrt(1.1))
            self.assertEqual(first["iterations_ms"], [2.0, 2.2])
            # Rank 0 holds t0 whole, half of t4's columns and a replica of t5 at a quarter of its pooling.
            shards = {(s["rows"], s["dim"]): s["pooling_factor"] for s in first["shards"]}
            self.assertEqual(shards, {(1001, 8): 1.0, (5001, 4): 5.0, (6001, 16): 6.0 / RANKS})

    def test_refusals_name_what_is_wrong_and_write_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            measured, out = Path(tmp) / "pm4", Path(tmp) / "costs"
            write_measured(measured, row_wise=True)
            done = run_tool("--measured", measured, "--out", out)
            self.assertEqual(done.returncode, 2)
            self.assertIn("table 't5' is row_wise", done.stderr)
            self.assertFalse(out.exists())
            self.assertEqual(sorted(p.name for p in Path(tmp).iterdir()), ["pm4"])  # no staging left behind

            write_measured(measured)
            out.mkdir()
            (out / "keep.txt").write_text("a user's file")
            done = run_tool("--measured", measured, "--out", out)
            self.assertEqual(done.returncode, 2)
            self.assertIn("exists and is not an empty directory", done.stderr)
            self.assertEqual((out / "keep.txt").read_text(), "a user's file")

            done = run_tool("--measured", measured, "--out", Path(tmp) / "none", "--tasks", "9")
            self.assertEqual(done.returncode, 2)
            self.assertIn("no measured rank", done.stderr)


@needs_binary
class CalibrateOnTorchRecSetsTest(unittest.TestCase):
    def test_calibrate_fine_tunes_on_them(self):
        with tempfile.TemporaryDirectory() as tmp:
            measured, costs, model = Path(tmp) / "pm4", Path(tmp) / "costs", Path(tmp) / "model"
            write_measured(measured, tasks=5)
            self.assertEqual(run_tool("--measured", measured, "--out", costs).returncode, 0)
            done = subprocess.run([BINARY, "calibrate", "--base", str(ROOT / "models" / "cpu-2core"), "--sets",
                                   str(costs), "--out", str(model), "--epochs", "3", "-q"],
                                  capture_output=True, text=True, timeout=300)
            self.assertEqual(done.returncode, 0, done.stderr)
            meta = json.loads((model / "meta.json").read_text())
            self.assertEqual(meta["calibration"]["data"], str(costs))
            self.assertEqual(meta["calibration"]["samples"], 5 * 2 * RANKS)
            self.assertEqual(meta["hardware"]["compute"]["kernel"], "torchrec-per-rank")
            self.assertFalse((model / "calibration").exists())  # nothing measured here


if __name__ == "__main__":
    unittest.main()
