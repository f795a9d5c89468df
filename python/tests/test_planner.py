"""ShardPlanPlanner.plan in one process: what it reads from TorchRec, what it hands the binary, and how
the binary's refusals reach a TorchRec user (PlannerError)."""

import json
import os
import subprocess
import tempfile
import unittest
from unittest import mock

from support import BINARY, PLANNER_BINARY, needs_binary, needs_torchrec

# What the binary says when the tables cannot fit (src/core/capacity.cpp).
BINARY_SAYS_INFEASIBLE = "the tables need"


def two_collections(meta=True):
    import torch
    from torchrec import EmbeddingBagCollection, EmbeddingBagConfig
    device = torch.device("meta")
    root = torch.nn.Module()
    root.sparse = torch.nn.Module()
    # "t0" is in both collections; feature "shared" is read by both.
    root.sparse.first = EmbeddingBagCollection(device=device, tables=[
        EmbeddingBagConfig(name="t0", num_embeddings=1000, embedding_dim=16, feature_names=["shared"]),
        EmbeddingBagConfig(name="t1", num_embeddings=2000, embedding_dim=32, feature_names=["f1", "f1b"])])
    root.second = EmbeddingBagCollection(device=device, tables=[
        EmbeddingBagConfig(name="t0", num_embeddings=500, embedding_dim=8, feature_names=["shared"]),
        EmbeddingBagConfig(name="t2", num_embeddings=300, embedding_dim=64, feature_names=["f2"])])
    return root


@needs_torchrec
@needs_binary
class PlannerTest(unittest.TestCase):
    def setUp(self):
        from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
        from torchrec.distributed.planner import ParameterConstraints, Topology
        from torchrec.distributed.planner.types import PlannerError, PlannerErrorType
        from shardplan.torchrec import ShardPlanPlanner
        self.Planner, self.Topology, self.Constraints = ShardPlanPlanner, Topology, ParameterConstraints
        self.PlannerError, self.ErrorType = PlannerError, PlannerErrorType
        self.sharders = [EmbeddingBagCollectionSharder()]

    def planner(self, world=4, device="cuda", **kw):
        topology = self.Topology(world_size=world, local_world_size=min(world, 8), compute_device=device,
                                 hbm_cap=kw.pop("hbm", 1 << 30), ddr_cap=kw.pop("ddr", 1 << 30))
        return self.Planner(topology=topology, binary=PLANNER_BINARY, **kw)

    def test_several_collections_by_module_path(self):
        planner = self.planner(constraints={"t1": self.Constraints(pooling_factors=[3.0, 5.0])})
        plan = planner.plan(two_collections(), self.sharders)
        self.assertEqual(sorted(plan.plan), ["second", "sparse.first"])
        self.assertEqual(sorted(plan.plan["sparse.first"]), ["t0", "t1"])
        self.assertEqual(sorted(plan.plan["second"]), ["t0", "t2"])
        for module_plan in plan.plan.values():
            for ps in module_plan.values():
                self.assertEqual(ps.compute_kernel, "dense" if ps.sharding_type == "data_parallel" else "fused")
        tables = {t["name"]: t for t in planner.last_plan["tables"]}
        self.assertEqual(sorted(tables), ["second/t0", "sparse.first/t0", "t1", "t2"])
        self.assertEqual(planner.last_plan["num_devices"], 4)

    def test_what_the_binary_is_told(self):
        planner = self.planner(constraints={"t1": self.Constraints(pooling_factors=[3.0, 5.0])},
                               model="analytic", seed=7)
        with mock.patch("shardplan.torchrec.planner.run_binary", wraps=__import__(
                "shardplan.binary", fromlist=["run_binary"]).run_binary) as run:
            planner.plan(two_collections(), self.sharders)
        args = [str(a) for a in run.call_args.args[0]]
        value = lambda flag: args[args.index(flag) + 1]  # noqa: E731
        self.assertEqual((value("--gpus"), value("--gpus-per-host"), value("--optimizer"), value("--model"),
                          value("--seed")), ("4", "4", "sgd", "analytic", "7"))
        # HBM after TorchRec's reservation (15% and more), not the topology's whole 1 GiB.
        self.assertLess(int(value("--mem-per-gpu")), int(0.85 * (1 << 30)) + 1)
        self.assertEqual(value("--sharding-types"), "table_wise,column_wise,row_wise,table_row_wise,data_parallel")
        # The topology's DDR per rank, shared by a host's 4 ranks; its host link in GB/s (TorchRec's default,
        # 32 GiB/s in bytes per ms).
        self.assertEqual(value("--ddr-per-host"), str(4 << 30))
        self.assertAlmostEqual(float(value("--host-link-GBps")), 32 * 1.073741824)

    def test_the_users_host_memory_flags_win_and_cpu_topologies_have_none(self):
        planner = self.planner(extra_args=["--ddr-per-host", "1TB"], hardware="h100-sxm-ib400")
        args = [str(a) for a in planner._host_memory_args(planner._topology)]
        self.assertEqual(args, [])
        planner = self.planner(device="cpu")
        self.assertEqual(planner._host_memory_args(planner._topology), [])

    def test_the_gpu_it_runs_on_is_named_so_that_another_devices_model_is_warned_of(self):
        planner = self.planner()
        with mock.patch("torch.cuda.is_available", return_value=True), \
                mock.patch("torch.cuda.get_device_name", return_value="NVIDIA A100-SXM4-80GB"):
            self.assertEqual(planner._device_args(planner._topology), ["--device-model", "NVIDIA A100-SXM4-80GB"])
            self.assertEqual(self.planner(extra_args=["--device-model", "X"])._device_args(planner._topology), [])
            self.assertEqual(self.planner(device="cpu")._device_args(self.planner(device="cpu")._topology), [])
        with mock.patch("torch.cuda.is_available", return_value=False):
            self.assertEqual(planner._device_args(planner._topology), [])

    def test_pooling_factors_add_over_a_tables_features(self):
        import json
        seen = {}

        def capture(args, binary=None):
            args = [str(a) for a in args]
            with open(args[args.index("--tables") + 1]) as f:
                seen.update({t["name"]: t for t in json.load(f)["tables"]})
            from shardplan.binary import run_binary
            return run_binary(args, binary)
        planner = self.planner(constraints={"t1": self.Constraints(pooling_factors=[3.0, 5.0])})
        with mock.patch("shardplan.torchrec.planner.run_binary", side_effect=capture):
            planner.plan(two_collections(), self.sharders)
        self.assertEqual(seen["t1"]["pooling_factor"], 8.0)
        self.assertEqual((seen["t2"]["rows"], seen["t2"]["dim"], seen["t2"]["dtype"]), (300, 64, "fp32"))

    def test_the_plan_and_the_tables_it_came_from_are_kept_where_asked(self):
        with tempfile.TemporaryDirectory() as tmp:
            plan_path, tables_path = os.path.join(tmp, "plan.json"), os.path.join(tmp, "tables.json")
            planner = self.planner(plan_path=plan_path, tables_path=tables_path)
            planner.plan(two_collections(), self.sharders)
            with open(tables_path, encoding="utf-8") as f:
                self.assertEqual(json.load(f), planner.last_tables)
            # What shardplan.measure --plan --tables is given: the same plan, valid for those tables.
            done = subprocess.run([BINARY, "validate", "--plan", plan_path, "--tables", tables_path],
                                  capture_output=True, text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
        with self.assertRaises(ValueError):
            self.planner(plan_path="same.json", tables_path="./same.json")

    def test_validators_run(self):
        planner = self.planner()
        with mock.patch("shardplan.torchrec.planner.validate_rank_assignment") as ranks, \
                mock.patch("shardplan.torchrec.planner.validate_modules_inclusion_in_sharding_plan") as modules, \
                mock.patch("shardplan.torchrec.planner.validate_compute_kernels") as kernels:
            planner.plan(two_collections(), self.sharders)
        self.assertEqual((ranks.call_count, modules.call_count, kernels.call_count), (1, 1, 1))

    def test_selected_options_are_the_plans_shards_with_torchrecs_storage_estimate(self):
        planner = self.planner()
        plan = planner.plan(two_collections(), self.sharders)
        selected = {(o.path, o.name): o for o in planner.get_selected_options()}
        self.assertEqual(sorted(selected), [("second", "t0"), ("second", "t2"), ("sparse.first", "t0"),
                                            ("sparse.first", "t1")])
        for (path, name), option in selected.items():
            ps = plan.plan[path][name]
            self.assertEqual((option.sharding_type, option.compute_kernel), (ps.sharding_type, ps.compute_kernel))
            self.assertEqual([s.rank for s in option.shards], list(ps.ranks))
            self.assertTrue(all(s.storage is not None and s.storage.hbm > 0 for s in option.shards))

    def test_storage_beyond_the_reservation_is_refused(self):
        from types import SimpleNamespace as NS
        from shardplan.torchrec.selected_options import check_storage
        shard = NS(rank=1, storage=NS(hbm=900))
        reserved = NS(devices=[NS(storage=NS(hbm=1000)), NS(storage=NS(hbm=800))])
        with self.assertRaises(self.PlannerError) as ctx:
            check_storage([NS(shards=[shard])], reserved, "hbm")
        self.assertEqual(ctx.exception.error_type, self.ErrorType.INSUFFICIENT_STORAGE)
        self.assertIn("rank 1's shards need 900 bytes of HBM", str(ctx.exception))
        check_storage([NS(shards=[NS(rank=0, storage=NS(hbm=900))])], reserved, "hbm")

    def test_each_tables_sharding_types_are_its_own(self):
        # ParameterConstraints per table reach the binary's tables file: t2 only data-parallel, t1 only
        # column-wise, the others anything TorchRec's sharders offer.
        planner = self.planner(constraints={"t2": self.Constraints(sharding_types=["data_parallel"]),
                                            "t1": self.Constraints(sharding_types=["column_wise"])})
        plan = planner.plan(two_collections(), self.sharders)
        self.assertEqual(plan.plan["second"]["t2"].sharding_type, "data_parallel")
        self.assertEqual(plan.plan["sparse.first"]["t1"].sharding_type, "column_wise")

    def test_collections_other_than_embedding_bag_ones_are_refused(self):
        import torch
        from torchrec import EmbeddingCollection, EmbeddingConfig
        from torchrec.distributed.embedding import EmbeddingCollectionSharder
        model = torch.nn.Module()
        model.seq = EmbeddingCollection(device=torch.device("meta"), tables=[
            EmbeddingConfig(name="s", num_embeddings=100, embedding_dim=16, feature_names=["f"])])
        with self.assertRaises(self.PlannerError) as ctx:
            self.planner().plan(model, [EmbeddingCollectionSharder()])
        self.assertIn('module "seq" is a EmbeddingCollection', str(ctx.exception))

    def test_embedding_sharding_planners_arguments_are_taken(self):
        planner = self.Planner(self.Topology(world_size=2, local_world_size=2, compute_device="cuda"), 64, None,
                               None, object(), None, None, None, None, True, None, 30, binary=PLANNER_BINARY)
        self.assertEqual(planner._timeout_seconds, 30)  # shard-plan's --time-limit
        plan = planner.plan(two_collections(), self.sharders)
        self.assertEqual(sorted(plan.plan), ["second", "sparse.first"])

    def test_optimizer_from_the_optimizer_applied_in_backward(self):
        from torch.distributed.optim import _apply_optimizer_in_backward
        from torchrec.optim import RowWiseAdagrad
        model = two_collections()
        _apply_optimizer_in_backward(RowWiseAdagrad, model.parameters(), {"lr": 0.01})
        planner = self.planner()
        planner.plan(model, self.sharders)
        self.assertEqual(planner.last_plan["optimizer"], "rowwise_adagrad")

    def test_a_table_the_cpu_sharders_refuse(self):
        planner = self.planner(world=2, device="cpu", constraints={"t2": self.Constraints(sharding_types=["row_wise"])})
        with self.assertRaises(self.PlannerError) as ctx:
            planner.plan(two_collections(), self.sharders)
        self.assertEqual(ctx.exception.error_type, self.ErrorType.STRICT_CONSTRAINTS)
        self.assertIn("for t2", str(ctx.exception))
        self.assertIn("on cpu", str(ctx.exception))

    def test_cpu_topologies_plan_the_types_cpu_sharders_offer(self):
        planner = self.planner(world=2, device="cpu")
        plan = planner.plan(two_collections(), self.sharders)
        types = {ps.sharding_type for m in plan.plan.values() for ps in m.values()}
        self.assertTrue(types <= {"table_wise", "column_wise", "data_parallel"}, types)
        placements = {str(s.placement) for m in plan.plan.values() for ps in m.values() if ps.sharding_spec
                      for s in ps.sharding_spec.shards}
        self.assertTrue(all(p.endswith("/cpu") for p in placements), placements)

    def test_a_model_that_does_not_fit_carries_the_binarys_message(self):
        planner = self.planner(hbm=400 << 10)  # 400 KiB a GPU, 20 KiB of it left after TorchRec's reservation
        with self.assertRaises(self.PlannerError) as ctx:
            planner.plan(two_collections(), self.sharders)
        self.assertEqual(ctx.exception.error_type, self.ErrorType.INSUFFICIENT_STORAGE)
        self.assertIn(BINARY_SAYS_INFEASIBLE, str(ctx.exception))  # the binary's own words

    def test_no_binary(self):
        planner = self.planner()
        planner.binary = "/nonexistent/shard-plan"
        with self.assertRaisesRegex(self.PlannerError, "no shard-plan executable found"):
            planner.plan(two_collections(), self.sharders)


def cached_two_collections_plan(kernel="fused_uvm_caching", load_factor=0.05):
    """A hand-written plan of two_collections() on 4 GPUs of one host: "t1" row-wise in host memory with
    an HBM cache (or another kernel), the others table-wise and fused."""
    from test_plan_file import cached, shard, table

    def whole(name, rows, dim, rank):
        return table(name, rows, dim, "table_wise", [shard(rank, [0, 0], [rows, dim], 4)])
    t1 = table("t1", 2000, 32, "row_wise", [shard(r, [500 * r, 0], [500, 32], 4) for r in range(4)])
    return {"format": "shard-plan/1", "num_devices": 4, "devices_per_host": 4, "optimizer": "sgd",
            "ddr_per_host_bytes": 1 << 30, "host_link_GBps": 64.0,
            "tables": [whole("sparse.first/t0", 1000, 16, 0),
                       t1 if kernel == "fused" else cached(t1, load_factor, kernel),
                       whole("second/t0", 500, 8, 1), whole("t2", 300, 64, 2)]}


@needs_torchrec
class CachedPlanInTorchRecTest(unittest.TestCase):
    """A plan with a UVM-cached table through ShardPlanPlanner (the binary's answer stood in for: shard-plan
    does not yet write such plans from TorchRec's topology), TorchRec's validators and storage estimate."""

    def setUp(self):
        from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
        from torchrec.distributed.planner import ParameterConstraints, Topology
        from torchrec.distributed.planner.types import PlannerError, PlannerErrorType
        from shardplan.torchrec import ShardPlanPlanner
        self.Planner, self.Topology, self.Constraints = ShardPlanPlanner, Topology, ParameterConstraints
        self.PlannerError, self.ErrorType = PlannerError, PlannerErrorType
        self.sharders = [EmbeddingBagCollectionSharder()]

    def plan(self, answer, device="cuda", ddr=1 << 30, **kw):
        topology = self.Topology(world_size=4, local_world_size=4, compute_device=device, hbm_cap=1 << 30,
                                 ddr_cap=ddr)
        planner = self.Planner(topology=topology, **kw)
        with mock.patch.object(self.Planner, "_run_binary", return_value=answer):
            built = planner.plan(two_collections(), self.sharders)
        return built, {(o.path, o.name): o for o in planner.get_selected_options()}

    def test_the_cached_table_is_built_and_estimated_with_its_load_factor(self):
        from torchrec.distributed.types import CacheAlgorithm
        built, selected = self.plan(cached_two_collections_plan(load_factor=0.05))
        ps = built.plan["sparse.first"]["t1"]
        self.assertEqual((ps.sharding_type, ps.compute_kernel), ("row_wise", "fused_uvm_caching"))
        self.assertEqual((ps.cache_params.algorithm, ps.cache_params.load_factor), (CacheAlgorithm.LRU, 0.05))
        option = selected[("sparse.first", "t1")]
        self.assertEqual((option.compute_kernel, option.cache_load_factor), ("fused_uvm_caching", 0.05))
        # TorchRec's estimate: the whole shard in DDR (500 x 32 fp32, SGD), a load-factor share of it in HBM.
        self.assertEqual([s.storage.ddr for s in option.shards], [500 * 32 * 4] * 4)
        cached_hbm = [s.storage.hbm for s in option.shards]
        _, fused = self.plan(cached_two_collections_plan(kernel="fused"))
        _, larger = self.plan(cached_two_collections_plan(load_factor=0.5))
        fused_hbm = [s.storage.hbm for s in fused[("sparse.first", "t1")].shards]
        larger_hbm = [s.storage.hbm for s in larger[("sparse.first", "t1")].shards]
        self.assertEqual([f - c for f, c in zip(fused_hbm, cached_hbm)],
                         [64000 - (3200 + 500 * (4 + 16 * 0.05))] * 4)  # shard_estimators.py's formulas
        self.assertTrue(all(c < l < f for c, l, f in zip(cached_hbm, larger_hbm, fused_hbm)))
        self.assertEqual(fused[("sparse.first", "t1")].cache_params, None)
        # fused_uvm: host memory, no cache.
        built, selected = self.plan(cached_two_collections_plan(kernel="fused_uvm"))
        ps = built.plan["sparse.first"]["t1"]
        self.assertEqual((ps.compute_kernel, ps.cache_params), ("fused_uvm", None))
        self.assertEqual([s.storage.ddr for s in selected[("sparse.first", "t1")].shards], [64000] * 4)

    def test_the_constraints_cache_params_keep_their_other_fields(self):
        from torchrec.distributed.types import CacheAlgorithm, CacheParams
        given = CacheParams(algorithm=CacheAlgorithm.LFU, load_factor=0.3, reserved_memory=2.0)
        _, selected = self.plan(cached_two_collections_plan(),
                                constraints={"t1": self.Constraints(cache_params=given)})
        got = selected[("sparse.first", "t1")].cache_params
        self.assertEqual((got.algorithm, got.load_factor, got.reserved_memory), (CacheAlgorithm.LRU, 0.05, 2.0))
        self.assertEqual((given.algorithm, given.load_factor), (CacheAlgorithm.LFU, 0.3))  # a copy was changed

    def test_a_cpu_topology_refuses_the_cached_table_by_name(self):
        with self.assertRaises(self.PlannerError) as ctx:
            self.plan(cached_two_collections_plan(), device="cpu")
        self.assertEqual(ctx.exception.error_type, self.ErrorType.STRICT_CONSTRAINTS)
        for fragment in ('table "t1" of module "sparse.first"', "kernel fused_uvm_caching", "only on a cuda topology "
                         "(this one is cpu)", "FBGEMM builds no cache"):
            self.assertIn(fragment, str(ctx.exception))

    def test_constraints_without_the_caching_kernel(self):
        with self.assertRaises(self.PlannerError) as ctx:
            self.plan(cached_two_collections_plan(), constraints={"t1": self.Constraints(compute_kernels=["fused"])})
        self.assertIn("do not offer it (they offer row_wise with ['fused']", str(ctx.exception))

    def test_host_memory_is_checked_per_rank(self):
        with self.assertRaises(self.PlannerError) as ctx:
            self.plan(cached_two_collections_plan(), ddr=32 << 10)
        self.assertEqual(ctx.exception.error_type, self.ErrorType.INSUFFICIENT_STORAGE)
        self.assertIn("rank 0's shards need 64000 bytes of DDR", str(ctx.exception))
        self.assertIn("per rank (ddr_cap)", str(ctx.exception))

    def test_a_refusal_over_hbm_says_torchrecs_cache_estimate_is_not_fbgemms(self):
        from types import SimpleNamespace as NS
        from shardplan.torchrec.selected_options import check_storage
        reserved = NS(devices=[NS(storage=NS(hbm=800))])
        for kernel, said in (("fused_uvm_caching", True), ("fused", False)):
            with self.assertRaises(self.PlannerError) as ctx:
                check_storage([NS(compute_kernel=kernel, shards=[NS(rank=0, storage=NS(hbm=900))])], reserved, "hbm")
            self.assertIn("rank 0's shards need 900 bytes of HBM", str(ctx.exception))
            self.assertEqual("not what FBGEMM allocates" in str(ctx.exception), said)
            self.assertEqual("uvm-caching.md 3.2" in str(ctx.exception), said)


if __name__ == "__main__":
    unittest.main()
