"""Tests of shardplan.plan_file (a plan described in TorchRec's terms, standard library only) and of the
command line `python -m shardplan.torchrec PLAN` under its old name tools/plan_to_torchrec.py.

Run from the repository root: PYTHONPATH=python python3 -m unittest discover -s python/tests -v
(test_bridge.py checks the same plans against the real TorchRec.)
"""

import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "plan_to_torchrec.py"
sys.path.insert(0, str(ROOT / "python"))

import shardplan.plan_file as p2t  # noqa: E402


def shard(rank, offsets, sizes, local=8):
    return {"rank": rank, "shard_offsets": list(offsets), "shard_sizes": list(sizes),
            "placement": f"rank:{rank}/cuda:{rank % local}"}


def table(name, rows, dim, kind, shards):
    return {"name": name, "rows": rows, "dim": dim, "dtype": "fp32", "sharding_type": kind,
            "compute_kernel": "dense" if kind == "data_parallel" else "fused", "ranks": [s["rank"] for s in shards], "shards": shards}


def plan(*tables, gpus=4, per_host=8):
    return {"format": "shard-plan/1", "num_devices": gpus, "devices_per_host": per_host, "tables": list(tables)}


def sample_plan():
    return plan(
        table("tw", 100, 16, "table_wise", [shard(3, [0, 0], [100, 16])]),
        # Listed out of column order, uneven widths, rank 1 twice.
        table("cw", 50, 32, "column_wise", [shard(2, [0, 8], [50, 16]), shard(1, [0, 0], [50, 8]),
                                            shard(1, [0, 24], [50, 8])]),
        table("cw_even", 10, 16, "column_wise", [shard(0, [0, 0], [10, 8]), shard(3, [0, 8], [10, 8])]),
        # 9 rows over 4 ranks: TorchRec's row_wise() gives 3, 3, 3, 0.
        table("rw", 9, 4, "row_wise", [shard(0, [0, 0], [3, 4]), shard(1, [3, 0], [3, 4]),
                                       shard(2, [6, 0], [3, 4])]),
    )


def two_host_plan():
    """2 hosts of 4 GPUs: table_row_wise on each host, data_parallel, and a table_wise table."""
    return plan(
        # Host 1 (ranks 4-7), listed out of row order: ceil(10 / 4) = 3 rows per rank, 3, 3, 3, 1.
        table("twrw", 10, 8, "table_row_wise", [shard(5, [3, 0], [3, 8], 4), shard(4, [0, 0], [3, 8], 4),
                                                shard(6, [6, 0], [3, 8], 4), shard(7, [9, 0], [1, 8], 4)]),
        # Host 0: 5 rows in blocks of 2 are 2, 2, 1 and rank 3 holds none (TorchRec: 2, 2, 1, 0).
        table("twrw0", 5, 4, "table_row_wise", [shard(r, [2 * r, 0], [min(2, 5 - 2 * r), 4], 4) for r in range(3)]),
        table("dp", 6, 4, "data_parallel", [shard(r, [0, 0], [6, 4], 4) for r in range(8)]),
        table("tw", 7, 4, "table_wise", [shard(2, [0, 0], [7, 4], 4)]),
        gpus=8, per_host=4)


def cached(t, load_factor=0.05, kernel="fused_uvm_caching"):
    """A table of the plan kept in host memory: with an HBM cache (and its cache_params) or, as fused_uvm, none."""
    t = dict(t, compute_kernel=kernel)
    if kernel == "fused_uvm_caching":
        t["cache_params"] = {"algorithm": "LRU", "load_factor": load_factor}
    return t


def cached_plan():
    """What shard-plan writes when it caches tables: a row-wise and a table-wise cached table, a fused_uvm
    one, a fused one beside them, and the host-memory fields at the top, per device and in the summary."""
    p = plan(
        cached(table("rw", 9, 4, "row_wise", [shard(0, [0, 0], [3, 4]), shard(1, [3, 0], [3, 4]),
                                              shard(2, [6, 0], [3, 4])]), 0.05),
        cached(table("tw", 100, 16, "table_wise", [shard(3, [0, 0], [100, 16])]), 0.25),
        cached(table("uvm", 20, 8, "table_wise", [shard(1, [0, 0], [20, 8])]), kernel="fused_uvm"),
        table("cw", 10, 16, "column_wise", [shard(0, [0, 0], [10, 8]), shard(3, [0, 8], [10, 8])]))
    p.update(ddr_per_host_bytes=2 << 40, host_link_GBps=64.0)
    p["devices"] = [{"rank": r, "memory_bytes": 1000, "ddr_bytes": 640 * r, "compute_ms": None, "cache_ms": None}
                    for r in range(4)]
    p["summary"] = {"max_total_ms": None, "max_memory_bytes": 1000, "max_host_ddr_bytes": 3840}
    return p


class PureMappingTest(unittest.TestCase):
    def by_name(self, p):
        return {t["table"]: t for t in p2t.describe_plan(p)["tables"]}

    def assertPlanError(self, p, *fragments):
        with self.assertRaises(p2t.PlanError) as ctx:
            p2t.describe_plan(p)
        for fragment in fragments:
            self.assertIn(fragment, str(ctx.exception))
        return str(ctx.exception)

    def test_importing_does_not_need_torchrec(self):
        # In a fresh interpreter: other test modules of this run import TorchRec.
        check = ("import sys, shardplan.plan_file, shardplan.binary, shardplan.torchrec, shardplan.torchrec.__main__; "
                 "loaded = [m for m in ('torch', 'torchrec') if m in sys.modules]; print(loaded); sys.exit(1 if loaded else 0)")
        done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60,
                              cwd=ROOT / "python")
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertTrue(issubclass(p2t.PlanError, ValueError))

    def test_header(self):
        d = p2t.describe_plan(sample_plan())
        self.assertEqual((d["format"], d["world_size"], d["local_size"]), ("shard-plan/1", 4, 8))
        self.assertEqual([t["table"] for t in d["tables"]], ["tw", "cw", "cw_even", "rw"])

    def test_table_wise(self):
        t = self.by_name(sample_plan())["tw"]
        self.assertEqual(t["ranks"], [3])
        self.assertEqual(t["torchrec"], "table_wise(rank=3)")
        self.assertEqual(t["shards"], [shard(3, [0, 0], [100, 16])])
        self.assertEqual(t["compute_kernel"], "fused")

    def test_column_wise_uneven_widths_in_column_order(self):
        t = self.by_name(sample_plan())["cw"]
        self.assertEqual(t["ranks"], [1, 2, 1])
        self.assertEqual(t["widths"], [8, 16, 8])
        self.assertEqual([s["shard_offsets"] for s in t["shards"]], [[0, 0], [0, 8], [0, 24]])
        self.assertIn("explicit shards", t["torchrec"])

    def test_column_shards_side_by_side_on_one_rank_are_merged(self):
        # TorchRec views a rank's shards of a table at one width: 44 + 40 columns on rank 0 become one shard.
        t = self.by_name(plan(table("cw", 9, 84, "column_wise", [shard(0, [0, 0], [9, 44]), shard(0, [0, 44], [9, 40])])))["cw"]
        self.assertEqual((t["ranks"], t["widths"], t["shards_as_torchrec_runs_them"]), ([0], [84], 1))
        t = self.by_name(plan(table("cw", 9, 24, "column_wise", [shard(0, [0, 0], [9, 8]), shard(0, [0, 8], [9, 8]),
                                                                  shard(1, [0, 16], [9, 8])])))["cw"]
        self.assertEqual((t["ranks"], t["widths"]), ([0, 1], [16, 8]))

    def test_a_ranks_column_shards_of_two_widths_apart_are_cut_to_one(self):
        # Rank 0 holds 8 and 12 columns apart: both are cut into 4-wide pieces, rank 1's shard is kept.
        t = self.by_name(plan(table("cw", 9, 28, "column_wise", [shard(0, [0, 0], [9, 8]), shard(1, [0, 8], [9, 8]),
                                                                  shard(0, [0, 16], [9, 12])])))["cw"]
        self.assertEqual((t["ranks"], t["widths"]), ([0, 0, 1, 0, 0, 0], [4, 4, 8, 4, 4, 4]))
        self.assertEqual([s["shard_offsets"][1] for s in t["shards"]], [0, 4, 8, 16, 20, 24])

    def test_column_wise_even_widths_use_the_helper(self):
        t = self.by_name(sample_plan())["cw_even"]
        self.assertEqual((t["ranks"], t["widths"]), ([0, 3], [8, 8]))
        self.assertEqual(t["torchrec"], "column_wise(ranks=[0, 3])")

    def test_row_wise_even_split(self):
        t = self.by_name(sample_plan())["rw"]
        self.assertEqual((t["ranks"], t["rows_per_rank"], t["torchrec"]), ([0, 1, 2], [3, 3, 3], "row_wise()"))

    def test_row_wise_other_split_is_refused(self):
        p = plan(table("rw", 9, 4, "row_wise", [shard(0, [0, 0], [5, 4]), shard(1, [5, 0], [4, 4])]))
        self.assertPlanError(p, 'table "rw"', "row_wise()", "ceil(9 / 4) = 3")
        p = plan(table("rw", 8, 4, "row_wise", [shard(1, [0, 0], [2, 4]), shard(0, [2, 0], [2, 4]),
                                                shard(2, [4, 0], [2, 4]), shard(3, [6, 0], [2, 4])]))
        self.assertPlanError(p, "on ranks [1, 0, 2, 3]")
        p = plan(table("rw", 8, 4, "row_wise", [shard(0, [0, 0], [8, 2]), shard(1, [0, 2], [8, 2])]))
        self.assertPlanError(p, 'table "rw" shards[0]', "all 4 columns")

    def test_table_row_wise(self):
        tables = self.by_name(two_host_plan())
        t = tables["twrw"]
        self.assertEqual((t["ranks"], t["rows_per_rank"], t["host_index"], t["torchrec"]),
                         ([4, 5, 6, 7], [3, 3, 3, 1], 1, "table_row_wise(host_index=1)"))
        self.assertEqual([s["shard_offsets"] for s in t["shards"]], [[0, 0], [3, 0], [6, 0], [9, 0]])
        self.assertEqual([s["placement"] for s in t["shards"]], [f"rank:{r}/cuda:{r - 4}" for r in range(4, 8)])
        t = tables["twrw0"]
        self.assertEqual((t["ranks"], t["rows_per_rank"], t["torchrec"]),
                         ([0, 1, 2], [2, 2, 1], "table_row_wise(host_index=0)"))

    def test_table_row_wise_refusals(self):
        def twrw(*shards, rows=8, dim=4, gpus=8):
            return plan(table("twrw", rows, dim, "table_row_wise", [shard(*s, local=4) for s in shards]),
                        gpus=gpus, per_host=4)
        # Ranks 2-5 cross from host 0 to host 1.
        self.assertPlanError(twrw((2, [0, 0], [2, 4]), (3, [2, 0], [2, 4]), (4, [4, 0], [2, 4]), (5, [6, 0], [2, 4])),
                             'table "twrw"', "one host of 4 ranks", "hosts [0, 1]")
        # Uneven blocks: TorchRec's are ceil(8 / 4) = 2 rows.
        self.assertPlanError(twrw((4, [0, 0], [4, 4]), (5, [4, 0], [4, 4])),
                             'table "twrw"', "table_row_wise(host_index=1)", "ceil(8 / 4) = 2",
                             "rows [2, 2, 2, 2] on ranks [4, 5, 6, 7]", "rows [4, 4] on ranks [4, 5]")
        # Right blocks, wrong ranks: row order must be rank order from the host's first rank.
        self.assertPlanError(twrw((5, [0, 0], [2, 4]), (4, [2, 0], [2, 4]), (6, [4, 0], [2, 4]), (7, [6, 0], [2, 4])),
                             "on ranks [5, 4, 6, 7]")
        self.assertPlanError(twrw((5, [0, 0], [2, 4]), (6, [2, 0], [2, 4]), (7, [4, 0], [4, 4])),
                             "on ranks [5, 6, 7]")
        # Split by columns.
        self.assertPlanError(twrw((4, [0, 0], [8, 2]), (5, [0, 2], [8, 2])), 'table "twrw" shards[0]',
                             "a table_row_wise shard must hold all 4 columns")
        # Rows missing.
        self.assertPlanError(twrw((4, [0, 0], [2, 4]), (5, [2, 0], [2, 4])), "rows [4, 8) are in no shard")
        # 6 GPUs at 4 per host: host 1 is not whole; nor is host 0 with 4 GPUs at 8 per host.
        self.assertPlanError(twrw((0, [0, 0], [2, 4]), (1, [2, 0], [2, 4]), (2, [4, 0], [2, 4]), (3, [6, 0], [2, 4]),
                                  gpus=6), "num_devices 6 a multiple of devices_per_host 4")
        p = plan(table("twrw", 4, 4, "table_row_wise", [shard(r, [r, 0], [1, 4]) for r in range(4)]))
        self.assertPlanError(p, "num_devices 4 a multiple of devices_per_host 8")

    def test_data_parallel(self):
        t = self.by_name(two_host_plan())["dp"]
        self.assertEqual((t["ranks"], t["torchrec"]), (list(range(8)), "data_parallel()"))
        self.assertEqual(t["shards"], [shard(r, [0, 0], [6, 4], 4) for r in range(8)])

    def test_data_parallel_refusals(self):
        def dp(*ranks, sizes=(6, 4)):
            return plan(table("dp", 6, 4, "data_parallel", [shard(r, [0, 0], sizes) for r in ranks]))
        self.assertPlanError(dp(0, 1, 2), 'table "dp"', "one replica on each of ranks 0..3", "ranks [0, 1, 2]")
        self.assertPlanError(dp(1, 0, 2, 3), "in rank order", "ranks [1, 0, 2, 3]")
        self.assertPlanError(dp(0, 1, 2, 3, 3), "ranks [0, 1, 2, 3, 3]")
        self.assertPlanError(dp(0, 1, 2, 3, sizes=(3, 4)), 'table "dp" shards[0]', "whole table",
                             "sizes [6, 4]), got offsets [0, 0], sizes [3, 4]")
        p = dp(0, 1, 2, 3)
        p["tables"][0]["shards"][2]["shard_offsets"] = [0, 0]
        p["tables"][0]["shards"][2]["shard_sizes"] = [6, 2]
        self.assertPlanError(p, 'table "dp" shards[2]', "whole table")

    def test_format(self):
        p = sample_plan()
        p["format"] = "shard-plan/2"
        self.assertPlanError(p, "format", "shard-plan/2")
        del p["format"]
        self.assertPlanError(p, "format")
        self.assertRaises(p2t.PlanError, p2t.describe_plan, [])

    def test_column_gap(self):
        p = plan(table("cw", 10, 16, "column_wise", [shard(0, [0, 0], [10, 4]), shard(1, [0, 8], [10, 8])]))
        self.assertPlanError(p, 'table "cw"', "columns [4, 8) are in no shard", "shards[1]")
        p = plan(table("cw", 10, 16, "column_wise", [shard(0, [0, 0], [10, 8])]))
        self.assertPlanError(p, "columns [8, 16) are in no shard")

    def test_column_overlap(self):
        p = plan(table("cw", 10, 16, "column_wise", [shard(0, [0, 0], [10, 8]), shard(1, [0, 4], [10, 12])]))
        self.assertPlanError(p, 'table "cw" shards[1]', "overlap shards[0]")

    def test_column_shard_missing_rows(self):
        p = plan(table("cw", 10, 16, "column_wise", [shard(0, [0, 0], [5, 8]), shard(1, [5, 8], [5, 8])]))
        self.assertPlanError(p, 'table "cw" shards[0]', "all 10 rows")

    def test_column_width_multiple_of_four(self):
        p = plan(table("cw", 10, 12, "column_wise", [shard(0, [0, 0], [10, 6]), shard(1, [0, 6], [10, 6])]))
        self.assertPlanError(p, 'table "cw" shards[0]', "width 6", "multiple of 4")

    def test_table_wise_geometry(self):
        p = plan(table("tw", 10, 16, "table_wise", [shard(0, [0, 0], [10, 8])]))
        self.assertPlanError(p, 'table "tw" shards[0]', "whole table")
        p = plan(table("tw", 10, 16, "table_wise", [shard(0, [0, 0], [10, 8]), shard(1, [0, 8], [10, 8])]))
        self.assertPlanError(p, "exactly one shard, got 2")

    def test_shard_fields(self):
        bad = [
            (lambda s: s.update(rank=4), "rank: 4 is out of range [0, 4)"),
            (lambda s: s.update(rank=True), ".rank: must be an integer"),
            (lambda s: s.update(shard_sizes=[10]), "shard_sizes: must be a [row, col] pair"),
            (lambda s: s.update(shard_sizes=[0, 16]), "empty shard"),
            (lambda s: s.update(shard_sizes=[11, 16]), "outside the 10 x 16 table"),
            (lambda s: s.update(placement="rank:0/cuda:1"), 'placement: "rank:0/cuda:1" is not "rank:0/cuda:0"'),
        ]
        for change, message in bad:
            p = plan(table("tw", 10, 16, "table_wise", [shard(0, [0, 0], [10, 16])]))
            change(p["tables"][0]["shards"][0])
            self.assertPlanError(p, 'table "tw" shards[0]', message)

    def test_placement_uses_devices_per_host(self):
        p = plan(table("tw", 10, 16, "table_wise", [shard(5, [0, 0], [10, 16], local=4)]), gpus=8, per_host=4)
        self.assertEqual(self.by_name(p)["tw"]["shards"][0]["placement"], "rank:5/cuda:1")

    def test_table_fields(self):
        p = sample_plan()
        p["tables"][0]["ranks"] = [2]
        self.assertPlanError(p, 'table "tw"', "ranks [2] do not list")
        p = sample_plan()
        p["tables"][0]["sharding_type"] = "table_column_wise"
        self.assertPlanError(p, 'table "tw"', '"table_column_wise" has no TorchRec helper', "table_row_wise",
                             "data_parallel")
        p = sample_plan()
        p["tables"].append(copy.deepcopy(p["tables"][0]))
        self.assertPlanError(p, 'table "tw"', "more than once")
        p = sample_plan()
        p["tables"][0]["shards"] = []
        self.assertPlanError(p, 'table "tw"', "non-empty")

    def test_compute_kernel_is_the_planned_one(self):
        # A sharded table on TorchRec's "dense" kernel trains another way than planned: refused by name.
        p = sample_plan()
        p["tables"][0]["compute_kernel"] = "dense"
        self.assertPlanError(p, 'table "tw"', 'compute_kernel "dense" is not "fused"')
        p = two_host_plan()
        p["tables"][2]["compute_kernel"] = "fused"
        self.assertPlanError(p, 'table "dp"', 'compute_kernel "fused" is not "dense"')
        p = sample_plan()
        del p["tables"][0]["compute_kernel"]  # older plans: the kernel follows from the type
        self.assertEqual(self.by_name(p)["tw"]["compute_kernel"], "fused")


class CachedTablesTest(unittest.TestCase):
    """fused_uvm_caching (with cache_params) and fused_uvm on sharded tables; the host-memory fields."""

    def assertPlanError(self, p, *fragments):
        return PureMappingTest.assertPlanError(self, p, *fragments)

    def test_cached_tables_are_described_with_their_cache(self):
        d = p2t.describe_plan(cached_plan())
        tables = {t["table"]: t for t in d["tables"]}
        self.assertEqual((tables["rw"]["compute_kernel"], tables["rw"]["cache_params"]),
                         ("fused_uvm_caching", {"algorithm": "LRU", "load_factor": 0.05}))
        self.assertEqual((tables["rw"]["ranks"], tables["rw"]["torchrec"]), ([0, 1, 2], "row_wise()"))
        self.assertEqual((tables["tw"]["compute_kernel"], tables["tw"]["cache_params"]["load_factor"]),
                         ("fused_uvm_caching", 0.25))
        self.assertEqual((tables["uvm"]["compute_kernel"], tables["uvm"]["cache_params"]), ("fused_uvm", None))
        self.assertEqual((tables["cw"]["compute_kernel"], tables["cw"]["cache_params"]), ("fused", None))
        self.assertEqual((d["ddr_per_host_bytes"], d["host_link_GBps"]), (2 << 40, 64.0))
        # Plans made without host memory describe as before: no host fields, and no cache on any table.
        d = p2t.describe_plan(sample_plan())
        self.assertNotIn("ddr_per_host_bytes", d)
        self.assertTrue(all(t["cache_params"] is None for t in d["tables"]))

    def test_every_sharded_type_may_be_cached(self):
        p = two_host_plan()
        p["tables"] = [t if t["sharding_type"] == "data_parallel" else cached(t, 0.5) for t in p["tables"]]
        kernels = {t["table"]: t["compute_kernel"] for t in p2t.describe_plan(p)["tables"]}
        self.assertEqual(kernels, {"twrw": "fused_uvm_caching", "twrw0": "fused_uvm_caching", "dp": "dense",
                                   "tw": "fused_uvm_caching"})
        p = sample_plan()
        p["tables"] = [cached(t, kernel="fused_uvm") for t in p["tables"]]
        self.assertEqual({t["compute_kernel"] for t in p2t.describe_plan(p)["tables"]}, {"fused_uvm"})

    def test_no_uvm_kernel_on_data_parallel(self):
        for kernel in ("fused_uvm_caching", "fused_uvm"):
            p = two_host_plan()
            p["tables"][2] = cached(p["tables"][2], kernel=kernel)
            self.assertPlanError(p, 'table "dp"', f'compute_kernel "{kernel}" is not "dense"', "data_parallel")

    def test_cache_params_only_with_the_caching_kernel(self):
        p = cached_plan()
        del p["tables"][0]["cache_params"]
        self.assertPlanError(p, 'table "rw"', 'compute_kernel "fused_uvm_caching" needs cache_params')
        p = cached_plan()
        p["tables"][0]["cache_params"] = None
        self.assertPlanError(p, 'table "rw"', "needs cache_params")
        for name, kernel in (("cw", "fused"), ("uvm", "fused_uvm")):
            p = cached_plan()
            t = next(t for t in p["tables"] if t["name"] == name)
            t["cache_params"] = {"algorithm": "LRU", "load_factor": 0.1}
            self.assertPlanError(p, f'table "{name}"', 'cache_params {"algorithm": "LRU", "load_factor": 0.1}',
                                 f'with compute_kernel "{kernel}"', '"fused_uvm_caching" has a cache')

    def test_cache_params_fields(self):
        bad = [
            ({"algorithm": "LFU", "load_factor": 0.1}, ['cache_params.algorithm "LFU" is not "LRU"',
                                                        "LFU, which shard-plan does not plan"]),
            ({"load_factor": 0.1}, ["cache_params.algorithm null"]),
            ({"algorithm": "LRU", "load_factor": 0}, ["cache_params.load_factor 0 must be a number in (0, 1)",
                                                      "validate_compute_kernels"]),
            ({"algorithm": "LRU", "load_factor": 1}, ["cache_params.load_factor 1 must be"]),
            ({"algorithm": "LRU", "load_factor": 1.0}, ["cache_params.load_factor 1.0 must be"]),
            ({"algorithm": "LRU", "load_factor": -0.5}, ["cache_params.load_factor -0.5 must be"]),
            ({"algorithm": "LRU", "load_factor": "x"}, ['cache_params.load_factor "x" must be']),
            ({"algorithm": "LRU", "load_factor": True}, ["cache_params.load_factor true must be"]),
            ({"algorithm": "LRU", "load_factor": float("nan")}, ["cache_params.load_factor NaN must be"]),
            ({"algorithm": "LRU"}, ["cache_params.load_factor null must be"]),
            ({"algorithm": "LRU", "load_factor": 0.1, "reserved_memory": 1.0},
             ["cache_params has fields ['reserved_memory']"]),
            ([0.1], ["cache_params must be an object, got [0.1]"]),
        ]
        for given, fragments in bad:
            p = cached_plan()
            p["tables"][1]["cache_params"] = given
            self.assertPlanError(p, 'table "tw"', *fragments)

    def test_unknown_kernel(self):
        p = cached_plan()
        p["tables"][0]["compute_kernel"] = "key_value"
        self.assertPlanError(p, 'table "rw"', 'compute_kernel "key_value" is not "fused" or "fused_uvm_caching" or '
                                              '"fused_uvm"')

    def test_host_memory_fields(self):
        for field, value, fragment in (("ddr_per_host_bytes", -1, "must be an integer >= 0, got -1"),
                                       ("ddr_per_host_bytes", 1.5, "must be an integer >= 0, got 1.5"),
                                       ("host_link_GBps", 0, "must be a number > 0, got 0"),
                                       ("host_link_GBps", "64", 'must be a number > 0, got "64"')):
            p = cached_plan()
            p[field] = value
            self.assertPlanError(p, f"plan: {field}", fragment)
        p = cached_plan()
        p["host_link_GBps"] = 32  # an integer is a number
        self.assertEqual(p2t.describe_plan(p)["host_link_GBps"], 32)


class CliTest(unittest.TestCase):
    def run_cli(self, *args, plan_dict=None):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "plan.json"
            if plan_dict is not None:
                path.write_text(json.dumps(plan_dict))
            return subprocess.run([sys.executable, str(SCRIPT), str(path), *args], capture_output=True, text=True,
                                  timeout=120)

    def test_prints_mapping(self):
        for p in (sample_plan(), two_host_plan(), cached_plan()):
            r = self.run_cli(plan_dict=p)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout), p2t.describe_plan(p))

    def test_bad_plan_exits_2(self):
        p = sample_plan()
        p["tables"][1]["shards"][0]["shard_sizes"] = [49, 8]
        r = self.run_cli(plan_dict=p)
        self.assertEqual(r.returncode, 2)
        self.assertIn('plan_to_torchrec.py: table "cw" shards[0]', r.stderr)
        self.assertEqual(r.stdout, "")
        r = self.run_cli()  # no such file
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot read", r.stderr)

    def test_check_torchrec_without_torchrec(self):
        # A child in which TorchRec cannot be imported, installed or not.
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "plan.json"
            path.write_text(json.dumps(sample_plan()))
            code = ("import sys; sys.modules['torchrec'] = None; from shardplan.torchrec.__main__ import main; "
                    f"sys.exit(main([{str(path)!r}, '--check-torchrec']))")
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                               cwd=ROOT / "python")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("needs TorchRec", r.stderr)
        self.assertIn("scripts/setup-python.sh", r.stderr)