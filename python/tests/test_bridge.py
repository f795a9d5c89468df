"""shardplan.torchrec.bridge against the real TorchRec 1.x: plans built with its helpers on the meta device
(no GPU, no process group), kernels explicit and checked, shard for shard."""

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from support import BINARY, ROOT, environment, needs_binary, needs_torchrec
from test_plan_file import cached, cached_plan, sample_plan, two_host_plan


@needs_torchrec
class BridgeTest(unittest.TestCase):
    def setUp(self):
        import torch  # noqa: F401
        from shardplan.plan_file import PlanError, describe_plan
        from shardplan.torchrec import bridge, plan_model
        self.bridge, self.plan_model, self.describe, self.PlanError = bridge, plan_model, describe_plan, PlanError

    def build(self, plan, device_type="cuda", one_group=True):
        model = self.plan_model.model_of_plan(self.describe(plan))
        return self.bridge.build_sharding_plan(plan, model, device_type=device_type, one_group=one_group).plan["ebc"]

    def test_every_type_is_built_as_planned_with_its_kernel(self):
        for plan in (sample_plan(), two_host_plan()):
            built = self.build(plan, one_group=False)
            for t in plan["tables"]:
                ps = built[t["name"]]
                self.assertEqual(ps.sharding_type, t["sharding_type"])
                self.assertEqual(ps.compute_kernel, "dense" if t["sharding_type"] == "data_parallel" else "fused")
                if t["sharding_type"] == "data_parallel":
                    self.assertEqual(ps.ranks, t["ranks"])

    def test_table_wise_beside_column_wise_is_one_group(self):
        # sample_plan's "tw" sits beside column-wise tables: one column-wise shard, on its rank, whole.
        built = self.build(sample_plan())
        ps = built["tw"]
        self.assertEqual((ps.sharding_type, ps.compute_kernel, ps.ranks), ("column_wise", "fused", [3]))
        self.assertEqual([(list(m.shard_offsets), list(m.shard_sizes), str(m.placement))
                          for m in ps.sharding_spec.shards], [([0, 0], [100, 16], "rank:3/cuda:3")])
        self.assertEqual(built["rw"].sharding_type, "row_wise")
        # Without column-wise tables, and where the width is no multiple of 4, table-wise stays.
        self.assertEqual(self.build(two_host_plan())["tw"].sharding_type, "table_wise")
        tables = [{"table": "a", "sharding_type": "table_wise", "compute_kernel": "fused", "dim": 6},
                  {"table": "b", "sharding_type": "column_wise", "compute_kernel": "fused", "dim": 8},
                  {"table": "c", "sharding_type": "table_wise", "compute_kernel": "fused", "dim": 8}]
        self.assertEqual(self.bridge.built_types(tables),
                         {"a": "table_wise", "b": "column_wise", "c": "column_wise"})
        self.assertEqual(self.bridge.built_types(tables, one_group=False),
                         {"a": "table_wise", "b": "column_wise", "c": "table_wise"})

    def test_uneven_column_shards_and_two_shards_on_one_rank(self):
        ps = self.build(sample_plan())["cw"]
        self.assertEqual(ps.ranks, [1, 2, 1])
        self.assertEqual([(list(m.shard_offsets), list(m.shard_sizes), str(m.placement))
                          for m in ps.sharding_spec.shards],
                         [([0, 0], [50, 8], "rank:1/cuda:1"), ([0, 8], [50, 16], "rank:2/cuda:2"),
                          ([0, 24], [50, 8], "rank:1/cuda:1")])

    def test_placements_follow_the_device_type(self):
        ps = self.build(sample_plan(), device_type="cpu")["tw"]
        self.assertEqual(str(ps.sharding_spec.shards[0].placement), "rank:3/cpu")

    def test_the_dense_kernel_trap_is_caught(self):
        # Without an optimizer applied in backward, TorchRec's helpers pick "dense" for a sharded table
        # when no kernel is named: what the bridge never lets through.
        import torch
        from torchrec import EmbeddingBagCollection, EmbeddingBagConfig
        from torchrec.distributed import sharding_plan as helpers
        ebc = EmbeddingBagCollection(device=torch.device("meta"), tables=[
            EmbeddingBagConfig(name="tw", num_embeddings=100, embedding_dim=16, feature_names=["f"])])
        silent = helpers.construct_module_sharding_plan(ebc, {"tw": helpers.table_wise(rank=0)}, local_size=8,
                                                        world_size=4, device_type="cuda")
        self.assertEqual(silent["tw"].compute_kernel, "dense")
        tables = [dict(t, name_in_module=t["table"]) for t in self.describe(sample_plan())["tables"][:1]]
        tables[0]["ranks"], tables[0]["shards"][0]["rank"] = [0], 0
        tables[0]["shards"][0]["placement"] = "rank:0/cuda:0"
        with self.assertRaisesRegex(self.PlanError, "TorchRec built compute kernel 'dense', the plan has 'fused'"):
            self.bridge.check_module_plan(tables, silent, "cuda", 8)
        explicit = helpers.construct_module_sharding_plan(ebc, self.bridge.per_param_sharding(tables), local_size=8,
                                                          world_size=4, device_type="cuda")
        self.assertEqual(explicit["tw"].compute_kernel, "fused")
        self.bridge.check_module_plan(tables, explicit, "cuda", 8)

    def test_plan_and_model_must_agree(self):
        plan = sample_plan()
        model = self.plan_model.model_of_plan(self.describe(plan))
        plan["tables"] = plan["tables"][:2]
        plan["tables"][0]["rows"] = 99
        plan["tables"][0]["shards"][0]["shard_sizes"] = [99, 16]
        with self.assertRaises(self.PlanError) as ctx:
            self.bridge.build_sharding_plan(plan, model, device_type="cuda")
        for fragment in ('"tw" is 99 x 16 in the plan, 100 x 16 in the model', '"rw" is in the model, not the plan'):
            self.assertIn(fragment, str(ctx.exception))

    def test_module_paths_and_colliding_names(self):
        plan = sample_plan()
        plan["tables"][0]["name"] = "a.b/tw"
        plan["tables"][1]["name"] = "a.c/tw"
        plan["tables"][1]["rows"] = 50
        described = self.describe(plan)
        model = self.plan_model.model_of_plan(described)
        built = self.bridge.build_sharding_plan(plan, model, device_type="cuda").plan
        self.assertEqual(sorted(built), ["a.b", "a.c", "ebc"])
        self.assertEqual(built["a.b"]["tw"].sharding_type, "table_wise")
        self.assertEqual(built["a.c"]["tw"].sharding_type, "column_wise")

    def test_cached_tables_carry_their_cache_params(self):
        # Metadata only: the ParameterShardings on device type "cuda", built here without a GPU. TorchRec's
        # helpers take no cache parameters; the bridge sets CacheParams(LRU, load factor) on what they build.
        from torchrec.distributed.types import CacheAlgorithm, CacheParams
        built = self.build(cached_plan())
        rw, tw = built["rw"], built["tw"]
        self.assertEqual((rw.sharding_type, rw.compute_kernel), ("row_wise", "fused_uvm_caching"))
        self.assertIsInstance(rw.cache_params, CacheParams)
        self.assertEqual((rw.cache_params.algorithm, rw.cache_params.load_factor), (CacheAlgorithm.LRU, 0.05))
        self.assertEqual((rw.cache_params.reserved_memory, rw.cache_params.precision, rw.cache_params.stats),
                         (None, None, None))
        self.assertEqual([(r, list(m.shard_sizes), str(m.placement))
                          for r, m in zip(rw.ranks, rw.sharding_spec.shards)][:3],
                         [(0, [3, 4], "rank:0/cuda:0"), (1, [3, 4], "rank:1/cuda:1"), (2, [3, 4], "rank:2/cuda:2")])
        # Beside a fused column-wise table, a cached table-wise one stays table-wise (another kernel, another group).
        self.assertEqual((tw.sharding_type, tw.compute_kernel, tw.ranks), ("table_wise", "fused_uvm_caching", [3]))
        self.assertEqual((tw.cache_params.algorithm, tw.cache_params.load_factor), (CacheAlgorithm.LRU, 0.25))
        self.assertEqual((built["uvm"].compute_kernel, built["uvm"].cache_params), ("fused_uvm", None))
        self.assertEqual((built["cw"].compute_kernel, built["cw"].cache_params), ("fused", None))
        self.assertIsNot(rw.cache_params, tw.cache_params)

    def test_every_sharded_type_carries_the_cache(self):
        for plan in (sample_plan(), two_host_plan()):
            plan["tables"] = [t if t["sharding_type"] == "data_parallel" else cached(t, 0.125 * (i + 1))
                              for i, t in enumerate(plan["tables"])]
            for one_group in (True, False):
                built = self.build(plan, one_group=one_group)
                for i, t in enumerate(plan["tables"]):
                    ps = built[t["name"]]
                    if t["sharding_type"] == "data_parallel":
                        self.assertEqual((ps.compute_kernel, ps.cache_params), ("dense", None))
                    else:
                        self.assertEqual((ps.compute_kernel, ps.cache_params.load_factor),
                                         ("fused_uvm_caching", 0.125 * (i + 1)), t["name"])
        # One group: sample_plan's cached table-wise table beside cached column-wise ones is built column-wise.
        plan = sample_plan()
        plan["tables"] = [cached(t) for t in plan["tables"]]
        self.assertEqual(self.build(plan)["tw"].sharding_type, "column_wise")

    def test_the_check_compares_the_cache(self):
        import dataclasses
        from torchrec.distributed.types import CacheAlgorithm
        plan = cached_plan()
        tables = [dict(t, name_in_module=t["table"]) for t in self.describe(plan)["tables"]]
        built = self.build(plan)
        self.bridge.check_module_plan(tables, built, "cuda", 8)
        for name, change, fragment in (
                ("rw", dict(cache_params=None),
                 "built cache algorithm and load factor None, the plan has ('LRU', 0.05)"),
                ("rw", "load_factor", "('LRU', 0.2), the plan has ('LRU', 0.05)"),
                ("tw", "algorithm", "('LFU', 0.25), the plan has ('LRU', 0.25)"),
                ("cw", "cache", 'table "cw": TorchRec built cache_params'),
                ("rw", dict(compute_kernel="fused"), "TorchRec built compute kernel 'fused', the plan has "
                                                     "'fused_uvm_caching'")):
            wrong = dict(built)
            ps = built[name]
            if change == "load_factor":
                change = dict(cache_params=dataclasses.replace(ps.cache_params, load_factor=0.2))
            elif change == "algorithm":
                change = dict(cache_params=dataclasses.replace(ps.cache_params, algorithm=CacheAlgorithm.LFU))
            elif change == "cache":
                change = dict(cache_params=built["rw"].cache_params)
            wrong[name] = dataclasses.replace(ps, **change)
            with self.assertRaises(self.PlanError) as ctx:
                self.bridge.check_module_plan(tables, wrong, "cuda", 8)
            self.assertIn(fragment, str(ctx.exception))
            self.assertIn(f'table "{name}"', str(ctx.exception))

    def test_cli_check_torchrec_shows_the_cache(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "plan.json"
            path.write_text(json.dumps(cached_plan()))
            done = subprocess.run([sys.executable, "-m", "shardplan.torchrec", str(path), "--check-torchrec"],
                                  capture_output=True, text=True, timeout=300, cwd=ROOT / "python")
        self.assertEqual(done.returncode, 0, done.stderr)
        built = json.loads(done.stdout)["torchrec_plan"]
        self.assertEqual(built["rw"], {"sharding_type": "row_wise", "compute_kernel": "fused_uvm_caching",
                                       "ranks": [0, 1, 2, 3],
                                       "cache_params": {"algorithm": "LRU", "load_factor": 0.05}})
        self.assertEqual(built["tw"]["cache_params"], {"algorithm": "LRU", "load_factor": 0.25})
        self.assertNotIn("cache_params", built["uvm"])
        self.assertNotIn("cache_params", built["cw"])

    def test_cli_check_torchrec(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "plan.json"
            path.write_text(json.dumps(two_host_plan()))
            done = subprocess.run([sys.executable, "-m", "shardplan.torchrec", str(path), "--check-torchrec"],
                                  capture_output=True, text=True, timeout=300, cwd=ROOT / "python")
        self.assertEqual(done.returncode, 0, done.stderr)
        built = json.loads(done.stdout)["torchrec_plan"]
        self.assertEqual({n: v["compute_kernel"] for n, v in built.items()},
                         {"twrw": "fused", "twrw0": "fused", "dp": "dense", "tw": "fused"})


@needs_torchrec
@needs_binary
class BinaryPlansTest(unittest.TestCase):
    """Plans shard-plan itself writes, every type it writes among them, built with TorchRec."""

    def plan(self, *args):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "plan.json"
            subprocess.run([BINARY, *args, "--no-compare", "-q", "-o", str(path)], check=True, timeout=300,
                           env=environment())
            return json.loads(path.read_text())

    def check(self, plan):
        from shardplan.plan_file import describe_plan
        from shardplan.torchrec.bridge import build_sharding_plan
        from shardplan.torchrec.plan_model import model_of_plan
        from shardplan.torchrec.bridge import built_types
        built = build_sharding_plan(plan, model_of_plan(describe_plan(plan)), device_type="cuda").plan["ebc"]
        self.assertEqual(sorted(built), sorted(t["name"] for t in plan["tables"]))
        types = built_types(describe_plan(plan)["tables"])
        for t in plan["tables"]:
            self.assertEqual((built[t["name"]].sharding_type, built[t["name"]].compute_kernel),
                             (types[t["name"]], t["compute_kernel"]))
        return {t["sharding_type"] for t in plan["tables"]}

    def test_small_plans(self):
        self.check(self.plan("--tables", str(ROOT / "tests/fixtures/tables_small.json"), "--gpus", "4",
                             "--mem-per-gpu", "1GiB"))

    def test_torchrecs_own_planner_through_the_binary(self):
        # Its GPU plans carry row-wise tables here; they come back through the binary's program-plan reader.
        tables = ROOT / "data/examples/tables-4gpu.json"
        plan = self.plan("--tables", str(tables), "--gpus", "4", "--mem-per-gpu", "4GiB", "--algo", "torchrec_planner")
        self.assertEqual(plan["algorithm"], "torchrec_planner")
        self.assertIn("row_wise", self.check(plan))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "plan.json"
            path.write_text(json.dumps(plan))
            done = subprocess.run([BINARY, "validate", "--plan", str(path), "--tables", str(tables)],
                                  capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)

    def test_torchrecs_own_planner_honours_the_tables_constraints(self):
        doc = json.loads((ROOT / "data/examples/tables-4gpu.json").read_text())
        tables = doc["tables"] if isinstance(doc, dict) else doc
        tables[0]["sharding_types"] = ["column_wise"]
        tables[1]["sharding_types"] = ["data_parallel"]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "tables.json"
            path.write_text(json.dumps({"tables": tables}))
            plan = self.plan("--tables", str(path), "--gpus", "4", "--mem-per-gpu", "4GiB", "--algo", "torchrec_planner")
            self.assertEqual([t["sharding_type"] for t in plan["tables"][:2]], ["column_wise", "data_parallel"])
            tables[2]["ranks"] = [1]  # TorchRec's planner takes no ranks: refused by name
            path.write_text(json.dumps({"tables": tables}))
            done = subprocess.run([BINARY, "--tables", str(path), "--gpus", "4", "--mem-per-gpu", "4GiB", "--algo",
                                   "torchrec_planner", "-q", "-o", str(Path(tmp) / "p.json")], capture_output=True,
                                  text=True, timeout=300, env=environment())
        self.assertEqual(done.returncode, 3, done.stderr)
        self.assertIn(f'table "{tables[2]["name"]}" is pinned to ranks [1]', done.stderr)

    def test_torchrecs_own_planner_with_32_column_shards(self):
        # The _cw32 names give TorchRec ParameterConstraints(min_partition=32): a 128-column table forced
        # column-wise comes back in four 32-column shards, where TorchRec's default keeps it whole.
        doc = json.loads((ROOT / "data/examples/tables-4gpu.json").read_text())
        tables = doc["tables"] if isinstance(doc, dict) else doc
        wide = next(t for t in tables if t["dim"] == 128)
        wide["sharding_types"] = ["column_wise"]
        widths = {}
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "tables.json"
            path.write_text(json.dumps({"tables": tables}))
            for algo in ("torchrec_planner_cpu", "torchrec_planner_cpu_cw32"):
                plan = self.plan("--tables", str(path), "--gpus", "4", "--mem-per-gpu", "4GiB", "--algo", algo,
                                 "--sharding-types", "table_wise,column_wise,data_parallel")
                self.assertEqual(plan["algorithm"], algo)
                entry = next(t for t in plan["tables"] if t["name"] == wide["name"])
                self.assertEqual(entry["sharding_type"], "column_wise")
                widths[algo] = [s["shard_sizes"][1] for s in entry["shards"]]
        self.assertEqual(widths, {"torchrec_planner_cpu": [128], "torchrec_planner_cpu_cw32": [32, 32, 32, 32]})

    def test_torchrecs_own_planner_as_a_measure_loop_rival(self):
        # The loop plans with TorchRec's own planner too, and measures its plan's bounding sets.
        plan = self.plan("--tables", str(ROOT / "data/examples/tables-4gpu.json"), "--gpus", "4", "--mem-per-gpu",
                         "4GiB", "--sharding-types", "table_wise,column_wise,data_parallel", "--measure-loop", "6",
                         "--measure-loop-rivals", "torchrec_planner_cpu_cw32")
        loop = plan["measure_loop"]
        self.assertGreater(loop["rival_sets_measured"], 0, loop)
        self.assertIn(loop["chosen_from"], ("neuroshard", "torchrec_planner_cpu_cw32"))

    def test_plans_with_cached_tables(self):
        # A binary that plans UVM caching (--ddr-per-host): a table too large for HBM is cached, and the
        # bridge builds it with the plan's kernel and load factor.
        help_text = subprocess.run([BINARY, "plan", "--help"], capture_output=True, text=True, timeout=60).stdout
        if "--ddr-per-host" not in help_text:
            self.skipTest("this shard-plan binary plans no host memory (--ddr-per-host)")
        from shardplan.plan_file import describe_plan
        from shardplan.torchrec.bridge import build_sharding_plan
        from shardplan.torchrec.plan_model import model_of_plan
        with tempfile.TemporaryDirectory() as tmp:
            tables = Path(tmp) / "tables.json"
            tables.write_text(json.dumps({"tables": [
                {"name": "big", "rows": 2000000, "dim": 64, "pooling_factor": 4},
                {"name": "small", "rows": 10000, "dim": 32, "pooling_factor": 2}]}))
            plan = self.plan("--tables", str(tables), "--gpus", "4", "--mem-per-gpu", "64MiB", "--ddr-per-host",
                             "4GiB")
        cached = {t["name"]: t["cache_params"] for t in plan["tables"] if t["compute_kernel"] == "fused_uvm_caching"}
        self.assertIn("big", cached)
        self.assertIn("ddr_per_host_bytes", plan)
        self.check(plan)
        built = build_sharding_plan(plan, model_of_plan(describe_plan(plan)), device_type="cuda").plan["ebc"]
        for name, cache in cached.items():
            self.assertEqual((built[name].cache_params.algorithm.name, built[name].cache_params.load_factor),
                             (cache["algorithm"], cache["load_factor"]))

    def test_h100_plans_with_table_row_wise(self):
        for gpus in (8, 64):
            plan = self.plan("--tables", str(ROOT / "data/configs/mlperf-dlrmv2.json"), "--gpus", str(gpus),
                             "--hardware", "h100-sxm-ib400", "--optimizer", "rowwise_adagrad")
            types = self.check(plan)
            if gpus == 64 and plan.get("cost_model", "").startswith("neural"):
                self.assertIn("table_row_wise", types)


if __name__ == "__main__":
    unittest.main()
