"""Run under torchrun with 2 ranks (Gloo, CPU) and one PYTHONHASHSEED on every rank: a model of one
EmbeddingBagCollection of 6 table-wise tables, planned by ShardPlanPlanner.collective_plan and trained 3
steps under DistributedModelParallel; then one table's pooling factor drifts 100-fold, the planner replans
from the first plan (collective_replan, move budget 100%), the DMP is resharded with the delta and trained 2
steps more. Two DMPs of that plan: "dense", whose model has a dense layer (DMP wraps it in DDP), resharded
by TorchRec's own dmp.reshard(delta, path); "sparse", the collection alone (nothing for DDP), resharded by
shardplan.torchrec.reshard.reshard (TorchRec's dmp.reshard fails on it). The cost model is argv[2]
(default: analytic). Rank 0 writes what it found to the JSON file named by argv[1]: both plans, the delta,
the replan's record and, per DMP, the shards every rank holds after the reshard, the plan the DMP holds,
whether each table's rows (gathered from every rank) and the model's output on a fixed batch are the same
before and after the reshard, and the losses."""

import copy
import json
import os
import sys
import warnings

import torch
import torch.distributed as dist
from torch.distributed.optim import _apply_optimizer_in_backward
from torch.nn.parallel import DistributedDataParallel
from torchrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
from torchrec.distributed import DistributedModelParallel
from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder, ShardedEmbeddingBagCollection
from torchrec.distributed.planner import ParameterConstraints, Topology
from torchrec.distributed.planner.types import PlannerError
from torchrec.optim.optimizers import in_backward_optimizer_filter

from shardplan.torchrec import ShardPlanPlanner
from shardplan.torchrec.reshard import reshard
from shardplan.worker_exit import exit_worker

warnings.filterwarnings("ignore")
BATCH = 16  # per rank
PATH = "sparse"  # the collection's module path
TABLES = {"t0": (4000, 16), "t1": (3000, 16), "t2": (2000, 32), "t3": (1000, 16), "t4": (6000, 8), "t5": (5000, 16)}
POOLING = {name: 4 for name in TABLES}
DRIFTED = dict(POOLING, t0=400)


class Model(torch.nn.Module):
    def __init__(self, dense):
        super().__init__()
        self.sparse = EmbeddingBagCollection(device=torch.device("meta"), tables=[
            EmbeddingBagConfig(name=name, num_embeddings=rows, embedding_dim=dim, feature_names=["f_" + name])
            for name, (rows, dim) in TABLES.items()])
        self.dense = torch.nn.Linear(sum(dim for _, dim in TABLES.values()), 1) if dense else None

    def forward(self, features):
        # By key, as TorchRec's DLRM reads it: a sharded collection orders its output keys by its sharding
        # (here: by rank), so a reshard reorders them.
        by_key = self.sparse(features).to_dict()
        pooled = torch.cat([by_key["f_" + name] for name in TABLES], dim=1)
        return pooled if self.dense is None else self.dense(pooled)


def new_model(dense=False):
    torch.manual_seed(0)
    model = Model(dense)
    _apply_optimizer_in_backward(torch.optim.SGD, model.sparse.parameters(), {"lr": 0.1})
    return model


def batch(seed):
    g = torch.Generator().manual_seed(seed)
    keys = ["f_" + name for name in TABLES]
    lengths = torch.cat([torch.full((BATCH,), POOLING[k[2:]]) for k in keys])
    values = torch.cat([torch.randint(0, TABLES[k[2:]][0], (BATCH * POOLING[k[2:]],), generator=g) for k in keys])
    return KeyedJaggedTensor.from_lengths_sync(keys=keys, values=values, lengths=lengths)


def planner_for(pooling, world):
    topology = Topology(world_size=world, local_world_size=world, compute_device="cpu", ddr_cap=64 << 20)
    constraints = {name: ParameterConstraints(sharding_types=["table_wise"], pooling_factors=[float(pooling[name])])
                   for name in TABLES}
    return ShardPlanPlanner(topology=topology, batch_size=BATCH, constraints=constraints,
                            model=sys.argv[2] if len(sys.argv) > 2 else "analytic")


def sharded_collection(dmp):
    return next(m for m in dmp.modules() if isinstance(m, ShardedEmbeddingBagCollection))


def shards_held(dmp):
    """[(table, offsets, sizes, rank)] this rank holds, read from the sharded collection's state."""
    held = []
    for key, tensor in sharded_collection(dmp).state_dict().items():
        held += [(key.split(".")[-2], list(s.metadata.shard_offsets), list(s.metadata.shard_sizes),
                  s.metadata.placement.rank()) for s in tensor.local_shards()]
    return held


def table_rows(dmp):
    """{table: its whole weight}, gathered from every rank's shards."""
    pieces = [(key.split(".")[-2], list(s.metadata.shard_offsets), s.tensor.detach().clone())
              for key, tensor in sharded_collection(dmp).state_dict().items() for s in tensor.local_shards()]
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, pieces)
    full = {name: torch.full(shape, float("nan")) for name, shape in TABLES.items()}
    for per_rank in gathered:
        for name, (row, col), tensor in per_rank:
            full[name][row:row + tensor.shape[0], col:col + tensor.shape[1]] = tensor
    return full


def describe(plan):
    return {name: {"sharding_type": ps.sharding_type, "ranks": list(ps.ranks),
                   "shards": [[list(m.shard_offsets), list(m.shard_sizes), m.placement.rank()]
                              for m in ps.sharding_spec.shards]}
            for name, ps in plan.plan[PATH].items()}


def train(dmp, dense_optimizer, rank, steps, first):
    losses = []
    for step in range(steps):
        loss = dmp(batch(1000 * rank + first + step)).sum()
        loss.backward()
        if dense_optimizer is not None:
            dense_optimizer.step()
            dense_optimizer.zero_grad()
        losses.append(loss.item())
    return losses


class Job:
    """One DMP of the plan: its model with or without a dense layer, its losses, and what its reshard did."""

    def __init__(self, dense, plan, sharders, rank):
        self.dmp = DistributedModelParallel(new_model(dense), device=torch.device("cpu"), plan=plan,
                                            sharders=sharders)
        self.dense = dense
        dense_params = [p for _, p in in_backward_optimizer_filter(self.dmp.named_parameters())]
        self.optimizer = torch.optim.SGD(dense_params, lr=0.01) if dense_params else None
        self.rank, self.losses = rank, train(self.dmp, self.optimizer, rank, 3, 0)

    def reshard(self, delta):
        probe = batch(7)
        with torch.no_grad():
            out_before = self.dmp(probe)
        rows_before = table_rows(self.dmp)
        if self.dense:  # TorchRec's own call, one per module path with moves
            self.volume = sum(self.dmp.reshard(delta, path) for path, (_, tables) in delta.items() if tables)
        else:
            self.volume = reshard(self.dmp, delta)
        rows_after = table_rows(self.dmp)
        with torch.no_grad():
            out_after = self.dmp(probe)
        self.losses += train(self.dmp, self.optimizer, self.rank, 2, 3)
        held, outputs_equal = [None] * dist.get_world_size(), [None] * dist.get_world_size()
        dist.all_gather_object(held, shards_held(self.dmp))
        dist.all_gather_object(outputs_equal, bool(torch.equal(out_before, out_after)))
        return {"wrapped_in_ddp": isinstance(self.dmp._dmp_wrapped_module, DistributedDataParallel),
                "dmp_plan": describe(self.dmp.plan), "volume_mb": self.volume, "held": held,
                "rows_equal": {name: bool(torch.equal(rows_before[name], rows_after[name])) for name in TABLES},
                "rows_finite": all(bool(torch.isfinite(t).all()) for t in rows_after.values()),
                "outputs_equal": outputs_equal, "losses": self.losses}


def main(out_path):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    sharders = [EmbeddingBagCollectionSharder()]
    first = planner_for(POOLING, dist.get_world_size())
    plan = first.collective_plan(new_model(), sharders, dist.GroupMember.WORLD)
    old = describe(plan)
    # Each DMP its own copy of the plan: DMP's reshard updates the plan it was given.
    jobs = {"dense": Job(True, copy.deepcopy(plan), sharders, rank),
            "sparse": Job(False, copy.deepcopy(plan), sharders, rank)}

    # The drift: t0 is looked up 100 times as often. Replan from the running plan (rank 0 holds it).
    drifted = planner_for(DRIFTED, dist.get_world_size())
    new_plan, delta = drifted.collective_replan(new_model(), sharders, first.last_plan, move_budget="100%")
    found = {kind: job.reshard(delta) for kind, job in jobs.items()}
    try:  # the DMP is not the model to replan: it holds sharded modules
        drifted.replan(jobs["dense"].dmp, sharders, first.last_plan)
        refused = None
    except PlannerError as e:
        refused = [e.error_type.name, str(e)]
    if rank == 0:
        result = {"replanning_the_dmp": refused,
            "old": old, "new": describe(new_plan), "jobs": found,
            "delta": {path: {name: list(ps.ranks) for name, ps in module_delta.items()}
                      for path, (_, module_delta) in delta.items()},
            "algorithm": drifted.last_plan["algorithm"], "replan": drifted.last_plan["replan"],
            "hash_seed": os.environ.get("PYTHONHASHSEED")}
        with open(out_path, "w", encoding="utf-8") as f:
            json.dump(result, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
    exit_worker(0)  # without the interpreter's teardown: shardplan/worker_exit.py says why
