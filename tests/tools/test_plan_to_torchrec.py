"""Tests of tools/plan_to_torchrec.py: the pure mapping without TorchRec, and the TorchRec helper calls
against a fake `torchrec` package injected into sys.modules.

Run from the repository root: python3 -m unittest discover -s tests/tools -v
Set SHARD_PLAN_BINARY to the built shard-plan to also test plans it writes.
"""

import copy
import dataclasses
import json
import math
import os
import subprocess
import sys
import tempfile
import types
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "plan_to_torchrec.py"
sys.path.insert(0, str(ROOT / "tools"))

import plan_to_torchrec as p2t  # noqa: E402


def shard(rank, offsets, sizes, local=8):
    return {"rank": rank, "shard_offsets": list(offsets), "shard_sizes": list(sizes),
            "placement": f"rank:{rank}/cuda:{rank % local}"}


def table(name, rows, dim, kind, shards):
    return {"name": name, "rows": rows, "dim": dim, "dtype": "fp32", "sharding_type": kind,
            "compute_kernel": "fused", "ranks": [s["rank"] for s in shards], "shards": shards}


def plan(*tables, gpus=4, per_host=8):
    return {"format": "shard-plan/1", "num_devices": gpus, "devices_per_host": per_host, "tables": list(tables)}


def sample_plan():
    return plan(
        table("tw", 100, 16, "table_wise", [shard(3, [0, 0], [100, 16])]),
        # Listed out of column order, uneven widths, rank 1 twice.
        table("cw", 50, 32, "column_wise", [shard(2, [0, 8], [50, 8]), shard(1, [0, 0], [50, 8]),
                                            shard(1, [0, 16], [50, 16])]),
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
        self.assertNotIn("torchrec", sys.modules)
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
        self.assertEqual(t["widths"], [8, 8, 16])
        self.assertEqual([s["shard_offsets"] for s in t["shards"]], [[0, 0], [0, 8], [0, 16]])
        self.assertIn("explicit shards", t["torchrec"])

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


class CliTest(unittest.TestCase):
    def run_cli(self, *args, plan_dict=None):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "plan.json"
            if plan_dict is not None:
                path.write_text(json.dumps(plan_dict))
            return subprocess.run([sys.executable, str(SCRIPT), str(path), *args], capture_output=True, text=True,
                                  timeout=120)

    def test_prints_mapping(self):
        for p in (sample_plan(), two_host_plan()):
            r = self.run_cli(plan_dict=p)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout), p2t.describe_plan(p))

    def test_bad_plan_exits_2(self):
        p = sample_plan()
        p["tables"][1]["shards"][0]["shard_sizes"] = [49, 8]
        r = self.run_cli(plan_dict=p)
        self.assertEqual(r.returncode, 2)
        self.assertIn('plan_to_torchrec: table "cw" shards[0]', r.stderr)
        self.assertEqual(r.stdout, "")
        r = self.run_cli()  # no such file
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot read", r.stderr)

    def test_check_torchrec_without_torchrec(self):
        try:
            import torchrec  # noqa: F401
            self.skipTest("torchrec is installed")
        except ImportError:
            pass
        r = self.run_cli("--check-torchrec", plan_dict=sample_plan())
        self.assertEqual(r.returncode, 3)
        self.assertIn("needs TorchRec", r.stderr)


@unittest.skipUnless(os.environ.get("SHARD_PLAN_BINARY"), "SHARD_PLAN_BINARY is not set")
class RealPlanTest(unittest.TestCase):
    """Plans written by shard-plan itself (4 GPUs of 1 GiB make it split tables column-wise)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.plan_path = Path(cls.tmp.name) / "plan.json"
        subprocess.run([os.environ["SHARD_PLAN_BINARY"], "--tables", str(ROOT / "tests/fixtures/tables_small.json"),
                        "--gpus", "4", "--mem-per-gpu", "1GiB", "-q", "-o", str(cls.plan_path)],
                       check=True, timeout=300)
        cls.plan = json.loads(cls.plan_path.read_text())

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_cli_maps_every_table(self):
        r = subprocess.run([sys.executable, str(SCRIPT), str(self.plan_path)], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual([t["table"] for t in out["tables"]], [t["name"] for t in self.plan["tables"]])
        for t in out["tables"]:
            self.assertEqual(sum(s["shard_sizes"][0] * s["shard_sizes"][1] for s in t["shards"]), t["rows"] * t["dim"])

    def test_torchrec_plan_matches(self):
        with fake_torchrec() as calls:
            result = p2t.load_sharding_plan(str(self.plan_path), FakeEbc(self.plan))
        self.assertEqual(sorted(result), sorted(t["name"] for t in self.plan["tables"]))
        self.assertEqual(calls[-1][0], "construct_module_sharding_plan")


@unittest.skipUnless(os.environ.get("SHARD_PLAN_BINARY"), "SHARD_PLAN_BINARY is not set")
class RealTypedPlanTest(unittest.TestCase):
    """MLPerf DLRMv2's tables planned by shard-plan on H100 profiles (on 64 GPUs the bundled model makes
    its hottest tables table-row-wise): every type it writes maps to TorchRec."""

    def plan(self, gpus):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "plan.json"
            subprocess.run([os.environ["SHARD_PLAN_BINARY"], "--tables", str(ROOT / "data/configs/mlperf-dlrmv2.json"),
                            "--gpus", str(gpus), "--hardware", "h100-sxm-ib400", "--optimizer", "rowwise_adagrad",
                            "--no-compare", "-q", "-o", str(path)], check=True, timeout=300)
            return json.loads(path.read_text())

    def test_every_type_maps(self):
        for gpus in (8, 64):
            plan = self.plan(gpus)
            described = {t["table"]: t for t in p2t.describe_plan(plan)["tables"]}
            for table in plan["tables"]:
                self.assertEqual(described[table["name"]]["sharding_type"], table["sharding_type"])
            with fake_torchrec():
                result = p2t.load_sharding_plan(plan, FakeEbc(plan))
            self.assertEqual(sorted(result), sorted(t["name"] for t in plan["tables"]))
            types = {t["sharding_type"] for t in plan["tables"]}
            # Only the pre-trained model (not the analytic one of builds without LibTorch) is known to convert.
            if gpus == 64 and plan.get("cost_model", "").startswith("neural"):
                self.assertIn("table_row_wise", types)


@unittest.skipUnless(os.environ.get("TORCHREC_SOURCE"),
                     "TORCHREC_SOURCE is not set: no TorchRec tree to check against (docs/torchrec.md)")
class RealTorchRecTest(unittest.TestCase):
    """--check-torchrec with TorchRec's own helpers: TORCHREC_SOURCE is a TorchRec source tree (v0.3.2 works
    with Debian's torch 1.13 through tools/torchrec_shim), TORCHREC_PYTHON the interpreter that has torch."""

    def check(self, plan_dict):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "plan.json"
            path.write_text(json.dumps(plan_dict))
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [str(ROOT / "tools" / "torchrec_shim"), os.environ["TORCHREC_SOURCE"]]))
            r = subprocess.run([os.environ.get("TORCHREC_PYTHON", sys.executable), str(SCRIPT), str(path),
                                "--check-torchrec"], capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)["torchrec_plan"]

    def test_every_type_is_built_as_planned(self):
        for p in (sample_plan(), two_host_plan()):
            built = self.check(p)
            self.assertEqual({n: v["sharding_type"] for n, v in built.items()},
                             {t["name"]: t["sharding_type"] for t in p["tables"]})
            for t in p["tables"]:
                if t["sharding_type"] == "data_parallel":
                    self.assertEqual(built[t["name"]]["ranks"], t["ranks"])


# ---- A fake `torchrec` that builds shards the way TorchRec's helpers do (see plan_to_torchrec.py). ----

@dataclasses.dataclass
class FakeParameterSharding:
    sharding_type: str
    compute_kernel: str
    ranks: list = None
    sharding_spec: object = None


class FakeShardMetadata:
    def __init__(self, shard_sizes, shard_offsets, placement):
        self.shard_sizes, self.shard_offsets, self.placement = shard_sizes, shard_offsets, placement


class FakeEnumerableShardingSpec:
    def __init__(self, shards):
        self.shards = shards


class FakeEbc:
    """Stands for an EmbeddingBagCollection: configs plus one (rows, dim) parameter per table."""

    def __init__(self, plan_dict, drop=None):
        tables = [t for t in plan_dict["tables"] if t["name"] != drop]
        self._configs = [types.SimpleNamespace(name=t["name"], num_embeddings=t["rows"], embedding_dim=t["dim"])
                         for t in tables]
        self.params = {t["name"]: types.SimpleNamespace(shape=(t["rows"], t["dim"])) for t in tables}

    def embedding_bag_configs(self):
        return self._configs


class fake_torchrec:
    """Context manager: puts the fake modules in sys.modules and yields the list of recorded calls."""

    def __enter__(self):
        calls = []

        def placement(device_type, rank, local_size):
            return f"rank:{rank}/{device_type}:{rank % local_size}"

        def generator(kind, layout):
            def g(param, local_size, world_size, device_type, sharder):
                shards = layout(param.shape, world_size, local_size)
                return FakeParameterSharding(kind, "fused", [r for _, _, r in shards], FakeEnumerableShardingSpec(
                    [FakeShardMetadata(s, o, placement(device_type, r, local_size)) for s, o, r in shards]))
            return g

        def table_wise(rank, **kw):
            calls.append(("table_wise", dict(rank=rank, **kw)))
            return generator("table_wise", lambda shape, world, local: [([shape[0], shape[1]], [0, 0], rank)])

        def column_wise(ranks, **kw):
            calls.append(("column_wise", dict(ranks=ranks, **kw)))
            def layout(shape, world, local):
                w = shape[1] // len(ranks)
                return [([shape[0], w], [0, i * w], r) for i, r in enumerate(ranks)]
            return generator("column_wise", layout)

        def row_blocks(shape, parts, first):
            block = math.ceil(shape[0] / parts)
            return [([max(0, min(block, shape[0] - i * block)), shape[1]], [min(i * block, shape[0]), 0], first + i)
                    for i in range(parts)]

        def row_wise(**kw):
            calls.append(("row_wise", kw))
            return generator("row_wise", lambda shape, world, local: row_blocks(shape, world, 0))

        def table_row_wise(host_index):  # TorchRec's takes nothing else
            calls.append(("table_row_wise", dict(host_index=host_index)))
            return generator("table_row_wise", lambda shape, world, local: row_blocks(shape, local, host_index * local))

        def data_parallel():
            calls.append(("data_parallel", {}))
            # As TorchRec: every rank, no sharding_spec, TorchRec's kernel for replicas.
            return lambda param, local_size, world_size, device_type, sharder: FakeParameterSharding(
                "data_parallel", "dense", list(range(world_size)), None)

        def construct_module_sharding_plan(module, per_param_sharding, sharder=None, local_size=None,
                                           world_size=None, device_type=None):
            calls.append(("construct_module_sharding_plan", dict(module=module, keys=sorted(per_param_sharding),
                                                                 local_size=local_size, world_size=world_size,
                                                                 device_type=device_type)))
            assert sorted(per_param_sharding) == sorted(module.params)
            return {name: gen(module.params[name], local_size, world_size, device_type, "sharder")
                    for name, gen in per_param_sharding.items()}

        sp = types.ModuleType("torchrec.distributed.sharding_plan")
        sp.__dict__.update(placement=placement, table_wise=table_wise, column_wise=column_wise, row_wise=row_wise,
                           table_row_wise=table_row_wise, data_parallel=data_parallel,
                           construct_module_sharding_plan=construct_module_sharding_plan)
        tt = types.ModuleType("torchrec.distributed.types")
        tt.__dict__.update(ParameterSharding=FakeParameterSharding, ShardMetadata=FakeShardMetadata,
                           EnumerableShardingSpec=FakeEnumerableShardingSpec)
        modules = {"torchrec": types.ModuleType("torchrec"),
                   "torchrec.distributed": types.ModuleType("torchrec.distributed"),
                   "torchrec.distributed.sharding_plan": sp, "torchrec.distributed.types": tt}
        self.patch = mock.patch.dict(sys.modules, modules)
        self.patch.start()
        return calls

    def __exit__(self, *exc):
        self.patch.stop()
        return False


class TorchRecHelperCallsTest(unittest.TestCase):
    def test_helper_calls_and_result(self):
        p = sample_plan()
        module = FakeEbc(p)
        with fake_torchrec() as calls:
            result = p2t.load_sharding_plan(p, module)
        self.assertEqual(calls, [
            ("table_wise", {"rank": 3}),
            ("column_wise", {"ranks": [1]}),  # uneven: TorchRec's base sharding, shards then set explicitly
            ("column_wise", {"ranks": [0, 3]}),
            ("row_wise", {}),
            ("construct_module_sharding_plan", {"module": module, "keys": ["cw", "cw_even", "rw", "tw"],
                                                "local_size": 8, "world_size": 4, "device_type": "cuda"}),
        ])
        cw = result["cw"]
        self.assertEqual((cw.sharding_type, cw.compute_kernel, cw.ranks), ("column_wise", "fused", [1, 2, 1]))
        self.assertEqual([(s.shard_offsets, s.shard_sizes, s.placement) for s in cw.sharding_spec.shards],
                         [([0, 0], [50, 8], "rank:1/cuda:1"), ([0, 8], [50, 8], "rank:2/cuda:2"),
                          ([0, 16], [50, 16], "rank:1/cuda:1")])
        self.assertEqual(result["tw"].ranks, [3])
        self.assertEqual(result["rw"].ranks, [0, 1, 2, 3])  # rank 3's shard is empty, as in TorchRec

    def test_table_row_wise_and_data_parallel_calls(self):
        p = two_host_plan()
        module = FakeEbc(p)
        with fake_torchrec() as calls:
            result = p2t.load_sharding_plan(p, module)
        self.assertEqual(calls, [
            ("table_row_wise", {"host_index": 1}),
            ("table_row_wise", {"host_index": 0}),
            ("data_parallel", {}),
            ("table_wise", {"rank": 2}),
            ("construct_module_sharding_plan", {"module": module, "keys": ["dp", "tw", "twrw", "twrw0"],
                                                "local_size": 4, "world_size": 8, "device_type": "cuda"}),
        ])
        twrw = result["twrw"]
        self.assertEqual((twrw.sharding_type, twrw.ranks), ("table_row_wise", [4, 5, 6, 7]))
        self.assertEqual([(s.shard_offsets, s.shard_sizes, s.placement) for s in twrw.sharding_spec.shards],
                         [([0, 0], [3, 8], "rank:4/cuda:0"), ([3, 0], [3, 8], "rank:5/cuda:1"),
                          ([6, 0], [3, 8], "rank:6/cuda:2"), ([9, 0], [1, 8], "rank:7/cuda:3")])
        self.assertEqual(result["twrw0"].ranks, [0, 1, 2, 3])  # rank 3's block is empty, as in TorchRec
        dp = result["dp"]
        self.assertEqual((dp.sharding_type, dp.ranks, dp.sharding_spec), ("data_parallel", list(range(8)), None))

    def test_compute_kernel_is_not_given_to_table_row_wise_or_data_parallel(self):
        with fake_torchrec() as calls:  # the fake helpers, like TorchRec's, raise TypeError on compute_kernel
            p2t.load_sharding_plan(two_host_plan(), FakeEbc(two_host_plan()), compute_kernel="fused")
        self.assertEqual(calls[:4], [("table_row_wise", {"host_index": 1}), ("table_row_wise", {"host_index": 0}),
                                     ("data_parallel", {}), ("table_wise", {"rank": 2, "compute_kernel": "fused"})])

    def test_torchrec_building_other_twrw_or_dp_is_caught(self):
        with fake_torchrec():
            sp = sys.modules["torchrec.distributed.sharding_plan"]
            real = sp.table_row_wise
            # A TorchRec that splits over the whole world instead of the host: ceil(10 / 8) = 2 rows from rank 8.
            sp.table_row_wise = lambda host_index: (
                lambda param, local, world, device, sharder: real(host_index)(param, world, world, device, sharder))
            with self.assertRaisesRegex(p2t.PlanError, 'table "twrw": TorchRec built table_row_wise shards'):
                p2t.load_sharding_plan(two_host_plan(), FakeEbc(two_host_plan()))
        with fake_torchrec():
            sp = sys.modules["torchrec.distributed.sharding_plan"]
            sp.data_parallel = lambda: (lambda param, local, world, device, sharder: FakeParameterSharding(
                "data_parallel", "dense", list(range(world - 1)), None))
            with self.assertRaisesRegex(p2t.PlanError, r'table "dp": TorchRec built data_parallel on ranks '
                                                       r'\[0, 1, 2, 3, 4, 5, 6\], the plan has data_parallel on ranks'):
                p2t.load_sharding_plan(two_host_plan(), FakeEbc(two_host_plan()))
        with fake_torchrec():
            # A replica listed with shard metadata like a sharded table still has to match the plan's shards.
            sp = sys.modules["torchrec.distributed.sharding_plan"]
            sp.data_parallel = lambda: sp.table_wise(rank=0)
            with self.assertRaisesRegex(p2t.PlanError, 'table "dp": TorchRec built table_wise shards'):
                p2t.load_sharding_plan(two_host_plan(), FakeEbc(two_host_plan()))

    def test_compute_kernel_is_passed_through(self):
        with fake_torchrec() as calls:
            p2t.load_sharding_plan(sample_plan(), FakeEbc(sample_plan()), compute_kernel="fused")
        self.assertEqual(calls[0], ("table_wise", {"rank": 3, "compute_kernel": "fused"}))
        self.assertEqual(calls[3], ("row_wise", {"compute_kernel": "fused"}))

    def test_plan_from_path(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "plan.json"
            path.write_text(json.dumps(sample_plan()))
            with fake_torchrec():
                self.assertEqual(sorted(p2t.load_sharding_plan(str(path), FakeEbc(sample_plan()))),
                                 ["cw", "cw_even", "rw", "tw"])

    def test_refusals(self):
        with fake_torchrec():
            with self.assertRaisesRegex(p2t.PlanError, "world_size 8 differs from the plan's 4"):
                p2t.load_sharding_plan(sample_plan(), FakeEbc(sample_plan()), world_size=8)
            with self.assertRaisesRegex(p2t.PlanError, '"rw" is in the plan, not the module'):
                p2t.load_sharding_plan(sample_plan(), FakeEbc(sample_plan(), drop="rw"))
            with mock.patch.dict(os.environ, {"LOCAL_WORLD_SIZE": "4"}):
                with self.assertRaisesRegex(p2t.PlanError, "LOCAL_WORLD_SIZE 4 differs from the plan's"):
                    p2t.load_sharding_plan(sample_plan(), FakeEbc(sample_plan()))
            other = sample_plan()
            other["tables"][0]["rows"] = 99
            other["tables"][0]["shards"][0]["shard_sizes"] = [99, 16]
            with self.assertRaisesRegex(p2t.PlanError, '"tw" is 100 x 16 in the plan, 99 x 16 in the module'):
                p2t.load_sharding_plan(sample_plan(), FakeEbc(other))

    def test_torchrec_building_other_shards_is_caught(self):
        with fake_torchrec():
            sys.modules["torchrec.distributed.sharding_plan"].table_wise = lambda rank, **kw: (
                lambda param, local, world, device, sharder: FakeParameterSharding(
                    "table_wise", "fused", [rank + 1], FakeEnumerableShardingSpec(
                        [FakeShardMetadata(list(param.shape), [0, 0], f"rank:{rank + 1}/cuda:{rank + 1}")])))
            with self.assertRaisesRegex(p2t.PlanError, 'table "tw": TorchRec built table_wise shards'):
                p2t.load_sharding_plan(sample_plan(), FakeEbc(sample_plan()))


if __name__ == "__main__":
    unittest.main()
