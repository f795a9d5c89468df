"""tools/paired-measure: planning with several planners, timing in rotated order, bench's per-task layout.

A fake shard-plan stands in for the real one: it writes the arguments it planned with as the plan, and
its evaluate answers with figures set by the plan's --algo, the task and how often that plan was timed
before, logging every call, so that the order and the averages can be checked exactly.
"""

import json
import math
import os
import stat
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "paired-measure"
COMPARE = ROOT / "tools" / "paired_compare.py"

FAKE = r'''#!PYTHON
import json, os, sys
args = sys.argv[1:]
log = os.environ["FAKE_LOG"]
def arg(name, default=None):
    return args[args.index(name) + 1] if name in args else default
if args[0] == "evaluate":
    plan = json.load(open(arg("--plan")))
    with open(log) as f:
        before = sum(1 for line in f if json.loads(line).get("plan") == arg("--plan"))
    with open(log, "a") as f:
        f.write(json.dumps({"plan": arg("--plan"), "algo": plan["algo"], "seed": arg("--seed"),
                            "model": arg("--model"), "comm": "--measure-comm" in args,
                            "device": arg("--measure-device", "cpu")}) + "\n")
    base = {"a": 10.0, "b": 20.0}[plan["algo"]] + int(arg("--seed"))
    factor = 2.0 ** before  # the second timing of a plan measures twice the first
    print(json.dumps({"predicted": {"max_total_ms": base + 1, "max_compute_ms": base},
                      "measured": {"max_compute_ms": base * factor, "max_total_ms": (base + 2) * factor}}))
    sys.exit(0)
tables = json.load(open(arg("--tables")))["tables"]
if arg("--algo") == "b" and any(t["name"] == "too-big" for t in tables):
    print("no plan fits", file=sys.stderr)
    sys.exit(3)
with open(arg("-o"), "w") as f:
    json.dump({"algo": arg("--algo"), "gpus": arg("--gpus"), "model": arg("--model")}, f)
'''


# Stands in for the Python of `--measurer torchrec-*`: `python -m shardplan.measure ... -o FILE`. Its first
# run of every plan aborts, as a Gloo rank did once in tens of runs.
FAKE_PYTHON = r'''#!PYTHON
import json, os, sys
args = sys.argv[1:]
arg = lambda name: args[args.index(name) + 1]
log = os.environ["FAKE_LOG"]
with open(log) as f:
    before = sum(1 for line in f if json.loads(line).get("plan") == arg("--plan"))
with open(log, "a") as f:
    f.write(json.dumps({"plan": arg("--plan"), "mode": arg("--mode"), "seed": arg("--seed")}) + "\n")
if before == 0:
    print("terminate called without an active exception", file=sys.stderr)
    sys.exit(134)
with open(arg("-o"), "w") as f:
    json.dump({"predicted": {"max_total_ms": 5.0, "max_compute_ms": 2.0},
               "measured": {"max_compute_ms": 3.0, "max_total_ms": 7.0}}, f)
'''


def task(*names):
    return {"tables": [{"name": n, "rows": 10, "dim": 4} for n in names]}


class PairedMeasureTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.fake = self.dir / "fake-shard-plan"
        self.fake.write_text(FAKE.replace("PYTHON", sys.executable))
        self.fake.chmod(self.fake.stat().st_mode | stat.S_IEXEC)
        self.log = self.dir / "calls.jsonl"
        self.log.write_text("")
        self.tasks = self.dir / "tasks.json"
        self.tasks.write_text(json.dumps({"name": "t", "num_devices": 4, "memory_per_device_bytes": 1 << 30,
                                          "tasks": [task("x"), task("y"), task("too-big")]}))

    def tearDown(self):
        self.tmp.cleanup()

    def run_tool(self, *extra):
        env = dict(os.environ, FAKE_LOG=str(self.log))
        return subprocess.run([sys.executable, str(SCRIPT), "--tasks", str(self.tasks), "--out", str(self.dir / "out"),
                               "--binary", str(self.fake), *extra], capture_output=True, text=True, env=env,
                              timeout=120)

    def calls(self):
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def test_rotated_order_geometric_means_and_infeasible_tasks(self):
        r = self.run_tool("--planner", "a=--algo a --model /m/a", "--planner", "b=--algo b")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("task 2: b found no plan", r.stderr)
        # Task 2 is left out: only tasks 0 and 1 are timed, each plan twice, the first planner rotating.
        order = [(c["seed"], c["algo"]) for c in self.calls()]
        self.assertEqual(order, [("0", "a"), ("0", "b"), ("1", "b"), ("1", "a"),
                                 ("0", "b"), ("0", "a"), ("1", "a"), ("1", "b")])
        # Each planner's plans are scored by the model it planned with, and its collectives timed.
        self.assertEqual({c["algo"]: c["model"] for c in self.calls()}, {"a": "/m/a", "b": None})
        self.assertTrue(all(c["comm"] for c in self.calls()))
        doc = json.loads((self.dir / "out" / "measured.json").read_text())
        self.assertEqual(doc["measured_tasks"], [0, 1])
        a = doc["algorithms"]["a"]
        # Timed at x1 and x2: the geometric mean is sqrt(2) times the first.
        self.assertAlmostEqual(a["measured"]["task_max_compute_ms"][1], 11.0 * math.sqrt(2.0))
        self.assertAlmostEqual(a["measured"]["task_max_step_ms"][0], 12.0 * math.sqrt(2.0))
        self.assertAlmostEqual(a["task_costs_ms"][0], 11.0)
        self.assertAlmostEqual(a["measured"]["task_predicted_max_compute_ms"][1], 11.0)
        self.assertIsNone(a["measured"]["task_max_compute_ms"][2])
        self.assertEqual(len(a["passes"]["0"]), 2)
        # The layout is bench's: paired_compare reads it.
        c = subprocess.run([sys.executable, str(COMPARE), str(self.dir / "out" / "measured.json"), "a", "b"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(c.returncode, 0, c.stderr)
        compare = json.loads(c.stdout)
        self.assertEqual(compare["max_compute"]["tasks"], 2)
        self.assertAlmostEqual(compare["max_compute"]["geomean_ratio"], math.sqrt(10.0 / 20.0 * 11.0 / 21.0))

    def test_a_task_left_out_is_neither_planned_nor_timed(self):
        r = self.run_tool("--planner", "a=--algo a", "--planner", "b=--algo a", "--passes", "1", "--leave-out", "0")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted({c["seed"] for c in self.calls()}), ["1", "2"])
        self.assertFalse((self.dir / "out" / "a-0.json").exists())
        doc = json.loads((self.dir / "out" / "measured.json").read_text())
        self.assertEqual(doc["measured_tasks"], [1, 2])
        self.assertEqual(doc["left_out"], [0])
        self.assertIsNone(doc["algorithms"]["a"]["measured"]["task_max_compute_ms"][0])

    def test_plans_are_reused_and_compute_alone_can_be_timed(self):
        self.assertEqual(self.run_tool("--planner", "a=--algo a", "--planner", "b=--algo a", "--passes", "1",
                                       "--first", "1").returncode, 0)
        plan = self.dir / "out" / "a-0.json"
        plan.write_text(json.dumps({"algo": "b"}))  # a plan already there is timed as it is, not planned again
        r = self.run_tool("--planner", "a=--algo a", "--planner", "b=--algo a", "--passes", "1", "--first", "1",
                          "--no-comm")
        self.assertEqual(r.returncode, 0, r.stderr)
        last = self.calls()[-2:]
        self.assertEqual(sorted(c["algo"] for c in last), ["a", "b"])
        self.assertFalse(any(c["comm"] for c in last))
        self.assertEqual({c["device"] for c in last}, {"cpu"})

    def test_resume_times_only_what_the_stopped_run_lacks(self):
        planners = ("--planner", "a=--algo a", "--planner", "b=--algo b")
        self.assertEqual(self.run_tool(*planners, "--passes", "1").returncode, 0)
        first = len(self.calls())
        r = self.run_tool(*planners, "--passes", "2", "--resume")
        self.assertEqual(r.returncode, 0, r.stderr)
        # Only the second pass ran: one more timing of each plan, so the means are of x1 and x2.
        self.assertEqual(len(self.calls()), 2 * first)
        doc = json.loads((self.dir / "out" / "measured.json").read_text())
        a = doc["algorithms"]["a"]
        self.assertEqual(len(a["passes"]["1"]), 2)
        self.assertAlmostEqual(a["measured"]["task_max_compute_ms"][1], 11.0 * math.sqrt(2.0))
        # Timings of other planners are not mixed in.
        r = self.run_tool("--planner", "a=--algo a", "--planner", "c=--algo b", "--resume")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--resume", r.stderr)
        self.assertIn("['a', 'b']", r.stderr)

    def test_a_failed_torchrec_measurement_is_run_again_and_kept(self):
        python = self.dir / "fake-python"
        python.write_text(FAKE_PYTHON.replace("PYTHON", sys.executable))
        python.chmod(python.stat().st_mode | stat.S_IEXEC)
        r = self.run_tool("--planner", "a=--algo a", "--planner", "b=--algo a", "--passes", "1", "--first", "1",
                          "--measurer", "torchrec-step", "--python", str(python))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("timed again after", r.stderr)
        self.assertEqual([c["mode"] for c in self.calls()], ["step"] * 4)
        doc = json.loads((self.dir / "out" / "measured.json").read_text())
        self.assertEqual(doc["measured_with"], "torchrec-step")
        self.assertEqual(sorted(x["plan"] for x in doc["retried"]), ["a-0.json", "b-0.json"])
        self.assertIn("terminate called", doc["retried"][0]["stderr_tail"])
        self.assertAlmostEqual(doc["algorithms"]["a"]["measured"]["task_max_step_ms"][0], 7.0)

    def test_measure_args_reach_every_timing(self):
        r = self.run_tool("--planner", "a=--algo a", "--planner", "b=--algo a", "--passes", "1", "--first", "1",
                          "--no-comm", "--measure-args", "--measure-device cuda --measure-batch-size 65536")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([c["device"] for c in self.calls()], ["cuda", "cuda"])

    def test_bad_usage_exits_2_and_names_the_flag(self):
        for args, message in ((["--planner", "a=--algo a"], "at least two planners"),
                              (["--planner", "a", "--planner", "b=x"], "--planner: expected LABEL=..."),
                              (["--planner", "a=", "--planner", "b=", "--binary-for", "c=/x"], "no planner labelled 'c'"),
                              (["--planner", "a=", "--planner", "b=", "--passes", "0"], "--passes: must be at least 1")):
            r = self.run_tool(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(message, r.stderr)
        self.tasks.write_text(json.dumps([task("x")]))
        r = self.run_tool("--planner", "a=", "--planner", "b=")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("not a task set (no tasks, num_devices, memory_per_device_bytes)", r.stderr)


if __name__ == "__main__":
    unittest.main()
