"""The drop-in planner end to end, on 2 Gloo CPU ranks: two EmbeddingBagCollections at different module
paths (shared feature and table names) planned by ShardPlanPlanner.collective_plan with table-wise,
uneven column-wise and data-parallel tables, trained 3 steps under DistributedModelParallel."""

import json
import math
import tempfile
import unittest
from pathlib import Path

from support import TESTS_DIR, failure_text, needs_binary, needs_torchrec, torchrun

SCRIPT = TESTS_DIR / "scripts" / "train_two_collections.py"
# The script's tables (rows, dim), as its model configures them.
SHAPES = {"sparse.user": {"big": (60000, 52), "hot": (40, 16), "tiny": (4, 128), "a": (5000, 16)},
          "sparse.item": {"a": (3000, 32), "c": (8000, 24)}}


@needs_torchrec
@needs_binary
class TrainTwoCollectionsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "result.json"
            done = torchrun(str(SCRIPT), out)
            if done.returncode != 0:
                raise AssertionError(f"training failed (exit {done.returncode}):\n{failure_text(done.stderr)}")
            cls.result = json.loads(out.read_text())

    def test_every_rank_got_the_same_plan(self):
        self.assertTrue(self.result["plans_identical"])

    def test_plan_keys_modules_and_names_colliding_tables_by_path(self):
        planned = self.result["planned"]
        self.assertEqual(sorted(planned), ["sparse.item", "sparse.user"])
        self.assertEqual(sorted(planned["sparse.user"]), ["a", "big", "hot", "tiny"])
        self.assertEqual(sorted(planned["sparse.item"]), ["a", "c"])
        self.assertIn("sparse.user/a", self.result["shard_plan_tables"])
        self.assertIn("sparse.item/a", self.result["shard_plan_tables"])

    def test_the_plan_has_table_wise_uneven_column_wise_and_data_parallel_tables(self):
        tables = [t for m in self.result["planned"].values() for t in m.values()]
        types = {t["sharding_type"] for t in tables}
        self.assertTrue({"table_wise", "column_wise", "data_parallel"} <= types, types)
        widths = [[s[1][1] for s in t["shards"]] for t in tables if t["sharding_type"] == "column_wise"]
        self.assertTrue(any(len(set(w)) > 1 for w in widths), widths)

    def test_kernels_are_explicit_and_fused_for_sharded_tables(self):
        for module_plan in self.result["planned"].values():
            for name, t in module_plan.items():
                want = "dense" if t["sharding_type"] == "data_parallel" else "fused"
                self.assertEqual(t["compute_kernel"], want, name)
        # What the sharded lookups run: FBGEMM's fused TBE for sharded tables; the dense kernel only for
        # replicas (one per rank here: both data-parallel tables share it).
        for per_rank in self.result["kernels"]:
            self.assertEqual(set(per_rank), {"BatchedFusedEmbeddingBag", "BatchedDenseEmbeddingBag"})
            self.assertEqual(per_rank["BatchedDenseEmbeddingBag"], 1)

    def test_the_loss_is_finite_and_training_moves_it(self):
        losses = self.result["losses"]
        self.assertEqual(len(losses), 3)
        self.assertTrue(all(math.isfinite(x) for x in losses), losses)
        self.assertNotEqual(losses[0], losses[-1])

    def test_every_shard_sits_where_the_plan_says(self):
        held = sorted((h[0], h[1], tuple(h[2]), tuple(h[3]), h[4]) for per_rank in self.result["held"]
                      for h in per_rank)
        want = []
        for path, module_plan in self.result["planned"].items():
            for name, t in module_plan.items():
                if t["shards"] is None:  # data-parallel: a whole replica on every rank
                    want += [(path, name, (0, 0), SHAPES[path][name], r) for r in t["ranks"]]
                else:
                    want += [(path, name, tuple(off), tuple(size), r) for off, size, r in t["shards"]]
        self.assertEqual(held, sorted(want))


if __name__ == "__main__":
    unittest.main()
