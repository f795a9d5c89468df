"""ShardPlanPlanner.replan: a replan from a running plan as TorchRec's ShardingPlan and the delta
DistributedModelParallel.reshard takes. In one process: what it returns, hands the binary and refuses, and
what TorchRec's reshard could not apply. On 2 Gloo CPU ranks (scripts/replan_and_reshard.py): a trained
model replanned after a drift, resharded live with the delta and trained on."""

import json
import math
import os
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from support import PLANNER_BINARY, TESTS_DIR, failure_text, needs_binary, needs_torchrec, torchrun

SCRIPT = TESTS_DIR / "scripts" / "replan_and_reshard.py"
TABLES = {"t0": (4000, 16), "t1": (3000, 16), "t2": (2000, 32), "t3": (1000, 16), "t4": (6000, 8), "t5": (5000, 16)}
POOLING = {name: 4.0 for name in TABLES}
DRIFTED = dict(POOLING, t0=400.0)


def six_tables(path="sparse", tables=TABLES):
    import torch
    from torchrec import EmbeddingBagCollection, EmbeddingBagConfig
    root = torch.nn.Module()
    root.add_module(path, EmbeddingBagCollection(device=torch.device("meta"), tables=[
        EmbeddingBagConfig(name=name, num_embeddings=rows, embedding_dim=dim, feature_names=["f_" + name])
        for name, (rows, dim) in tables.items()]))
    return root


def moved_in_record(plan):
    """{table: ranks it moved to} as the replan's own record has it."""
    return {t["name"]: t["to"] for t in plan["replan"]["tables"] if t["change"] == "moved"}


@needs_torchrec
@needs_binary
class ReplanTest(unittest.TestCase):
    def setUp(self):
        from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
        from torchrec.distributed.planner import ParameterConstraints, Topology
        from torchrec.distributed.planner.types import PlannerError, PlannerErrorType
        from shardplan.torchrec import ShardPlanPlanner, build_sharding_plan
        self.Planner, self.Topology, self.Constraints = ShardPlanPlanner, Topology, ParameterConstraints
        self.PlannerError, self.ErrorType, self.build = PlannerError, PlannerErrorType, build_sharding_plan
        self.sharders = [EmbeddingBagCollectionSharder()]

    def planner(self, pooling=POOLING, world=2, **kw):
        topology = self.Topology(world_size=world, local_world_size=world, compute_device="cpu", ddr_cap=64 << 20)
        constraints = {name: self.Constraints(sharding_types=["table_wise"], pooling_factors=[pooling[name]])
                       for name in TABLES}
        return self.Planner(topology=topology, batch_size=16, constraints=constraints, model="analytic",
                            binary=PLANNER_BINARY, **kw)

    def first_plan(self, **kw):
        first = self.planner(**kw)
        return first, first.plan(six_tables(), self.sharders)

    def test_the_plan_and_torchrecs_delta_of_the_tables_that_moved(self):
        from torchrec.distributed.sharding.dynamic_sharding import output_sharding_plans_delta
        first, old = self.first_plan()
        drifted = self.planner(DRIFTED)
        new, delta = drifted.replan(six_tables(), self.sharders, first.last_plan, move_budget="100%")
        self.assertEqual(drifted.last_plan["algorithm"], "neuroshard_replan")
        self.assertEqual(sorted(new.plan), ["sparse"])
        self.assertEqual(sorted(delta), ["sparse"])
        moved = moved_in_record(drifted.last_plan)
        self.assertTrue(moved, drifted.last_plan["replan"])
        volume, module_delta = delta["sparse"]
        # Exactly the tables shard-plan moved, where it moved them; TorchRec's own delta of the two plans.
        self.assertEqual({name: list(ps.ranks) for name, ps in module_delta.items()}, moved)
        self.assertEqual({name: list(ps.ranks) for name, ps in new.plan["sparse"].items() if name in moved}, moved)
        want = output_sharding_plans_delta(old.plan, new.plan, return_data_volume=True)
        self.assertEqual(delta, want)
        self.assertAlmostEqual(volume, sum(TABLES[n][0] * TABLES[n][1] * 4 for n in moved) / (1 << 20))
        self.assertEqual(drifted.last_tables["tables"][0]["pooling_factor"], 400.0)

    def test_a_zero_budget_keeps_the_placement(self):
        first, old = self.first_plan()
        new, delta = self.planner(DRIFTED).replan(six_tables(), self.sharders, first.last_plan, move_budget="0")
        self.assertEqual(len(delta["sparse"][1]), 0)
        self.assertEqual({n: ps.ranks for n, ps in new.plan["sparse"].items()},
                         {n: ps.ranks for n, ps in old.plan["sparse"].items()})

    def test_from_a_plan_file_keeping_the_new_plan_and_tables(self):
        from shardplan.binary import run_binary
        with tempfile.TemporaryDirectory() as tmp:
            old_path, new_path, tables_path = (os.path.join(tmp, n) for n in ("old.json", "new.json", "t.json"))
            self.first_plan(plan_path=old_path)
            drifted = self.planner(DRIFTED, plan_path=new_path, tables_path=tables_path)
            with mock.patch("shardplan.torchrec.planner.run_binary", wraps=run_binary) as run:
                drifted.replan(six_tables(), self.sharders, Path(old_path), move_budget="25%")
            args = [str(a) for a in run.call_args.args[0]]
            self.assertEqual(args[args.index("--from") + 1], old_path)
            self.assertEqual(args[args.index("--move-budget") + 1], "25%")
            with open(new_path, encoding="utf-8") as f:
                self.assertEqual(json.load(f), drifted.last_plan)
            with open(tables_path, encoding="utf-8") as f:
                self.assertEqual(json.load(f), drifted.last_tables)
            self.assertEqual(drifted.last_plan["replan"]["from"], old_path)
            self.assertGreater(drifted.last_plan["replan"]["move_budget_bytes"], 0)

    def test_refusals_are_planner_errors(self):
        first, _ = self.first_plan()
        drifted = self.planner(DRIFTED)
        other = dict(TABLES, t3=(1001, 16))
        cases = [
            ("an old plan of other tables", lambda: drifted.replan(six_tables(tables=other), self.sharders,
                                                                    first.last_plan), "the old plan"),
            ("a missing old plan file", lambda: drifted.replan(six_tables(), self.sharders, "/nonexistent/p.json"),
             "cannot read"),
            ("a budget the binary refuses", lambda: drifted.replan(six_tables(), self.sharders, first.last_plan,
                                                                    move_budget="lots"), "--move-budget"),
            ("an old plan of another world size", lambda: self.planner(DRIFTED, world=4).replan(
                six_tables(), self.sharders, first.last_plan), ""),
        ]
        with tempfile.TemporaryDirectory() as tmp:
            kept = os.path.join(tmp, "plan.json")
            self.first_plan(plan_path=kept)
            with open(kept, encoding="utf-8") as f:
                before = f.read()
            cases.append(("the old plan as this planner's own plan_path", lambda: self.planner(
                DRIFTED, plan_path=kept).replan(six_tables(), self.sharders, kept), "would overwrite"))
            for what, call, says in cases:
                with self.subTest(what), self.assertRaises(self.PlannerError) as caught:
                    call()
                self.assertEqual(caught.exception.error_type, self.ErrorType.INPUT_VALIDATION, str(caught.exception))
                self.assertIn(says, str(caught.exception))
            with open(kept, encoding="utf-8") as f:
                self.assertEqual(f.read(), before)

    def test_what_torchrecs_reshard_could_not_apply(self):
        from torchrec.distributed.sharding_plan import column_wise, construct_module_sharding_plan, row_wise, \
            table_wise
        from torchrec.distributed.types import ShardingPlan
        from shardplan.torchrec.reshard import reshard_problems, sharding_plan_delta
        model = six_tables()

        def plan(per_param):
            return ShardingPlan({"sparse": construct_module_sharding_plan(
                model.sparse, per_param, local_size=2, world_size=2, device_type="cpu")})
        base = {"t0": table_wise(rank=0), "t1": column_wise(ranks=[0, 1]), "t2": table_wise(rank=1),
                "t3": table_wise(rank=0), "t4": table_wise(rank=1), "t5": table_wise(rank=0)}
        old = plan(base)
        fine = plan(dict(base, t0=table_wise(rank=1), t1=column_wise(ranks=[1, 0])))
        self.assertEqual(reshard_problems(old, fine, sharding_plan_delta(old, fine)), [])
        bad = plan(dict(base, t1=column_wise(ranks=[1, 1]), t2=row_wise(),
                        t3=table_wise(rank=0, compute_kernel="fused_uvm_caching")))
        problems = reshard_problems(old, bad, sharding_plan_delta(old, bad))
        self.assertEqual(len(problems), 3, problems)
        self.assertIn('"t1"', problems[0] + problems[1] + problems[2])
        self.assertTrue(any("one shard of a table per rank" in p for p in problems), problems)
        self.assertTrue(any("table_wise to row_wise" in p for p in problems), problems)
        self.assertTrue(any('"t3"' in p and "same ranks" in p for p in problems), problems)

    def test_reshard_calls_one_module_at_a_time(self):
        from shardplan.torchrec.reshard import reshard
        dmp = mock.Mock(spec=["reshard"])  # a DMP wrapped in DDP: its own reshard
        dmp.reshard.side_effect = lambda delta, path: 1.5
        delta = {"": (1.5, {"a": object()}), "x.y": (1.5, {"b": object()}), "z": (0.0, {})}
        self.assertEqual(reshard(dmp, delta), 3.0)
        self.assertEqual([c.args for c in dmp.reshard.call_args_list], [(delta, None), (delta, "x.y")])


@needs_torchrec
@needs_binary
class ReshardOnGlooTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "result.json"
            # TorchRec tags the reshard's sends with hash() of table names: one hash seed on every rank.
            with mock.patch.dict(os.environ, {"PYTHONHASHSEED": "0"}):
                done = torchrun(str(SCRIPT), out, timeout=300)
            if done.returncode != 0:
                raise AssertionError(f"replan and reshard failed (exit {done.returncode}):\n"
                                     f"{failure_text(done.stderr)}")
            cls.result = json.loads(out.read_text())

    def test_the_drift_moves_tables_and_the_delta_is_those_moves(self):
        r = self.result
        self.assertEqual(r["algorithm"], "neuroshard_replan")
        moved = {t["name"]: t["to"] for t in r["replan"]["tables"] if t["change"] == "moved"}
        self.assertTrue(moved, r["replan"])
        self.assertEqual(r["delta"], {"sparse": moved})
        for name, ranks in moved.items():
            self.assertNotEqual(r["old"][name]["ranks"], ranks, name)
            self.assertEqual(r["new"][name]["ranks"], ranks, name)

    def test_both_ways_to_reshard_ran(self):
        # "dense": DMP wrapped its model in DDP, TorchRec's dmp.reshard; "sparse": nothing to wrap, reshard().
        jobs = self.result["jobs"]
        self.assertEqual({kind: job["wrapped_in_ddp"] for kind, job in jobs.items()},
                         {"dense": True, "sparse": False})
        for kind, job in jobs.items():
            self.assertGreater(job["volume_mb"], 0, kind)

    def test_the_dmp_itself_is_not_what_replan_plans(self):
        kind, message = self.result["replanning_the_dmp"]
        self.assertEqual(kind, "INPUT_VALIDATION")
        self.assertIn("unsharded model", message)

    def test_every_shard_sits_where_the_new_plan_says(self):
        want = sorted((name, tuple(off), tuple(size), rank) for name, t in self.result["new"].items()
                      for off, size, rank in t["shards"])
        for kind, job in self.result["jobs"].items():
            with self.subTest(kind):
                held = sorted((name, tuple(off), tuple(size), rank) for per_rank in job["held"]
                              for name, off, size, rank in per_rank)
                self.assertEqual(held, want)
                self.assertEqual(job["dmp_plan"], self.result["new"])

    def test_the_move_leaves_rows_and_lookups_unchanged(self):
        for kind, job in self.result["jobs"].items():
            with self.subTest(kind):
                self.assertTrue(job["rows_finite"])
                self.assertEqual(job["rows_equal"], {name: True for name in TABLES})
                self.assertEqual(job["outputs_equal"], [True, True])

    def test_training_goes_on_with_a_finite_loss(self):
        for kind, job in self.result["jobs"].items():
            with self.subTest(kind):
                self.assertEqual(len(job["losses"]), 5)
                self.assertTrue(all(math.isfinite(x) for x in job["losses"]), job["losses"])


if __name__ == "__main__":
    unittest.main()
