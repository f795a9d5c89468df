"""Run under torchrun with 2 ranks (Gloo, CPU): a model of two EmbeddingBagCollections at different module
paths, sharing feature names and a table name, planned by ShardPlanPlanner.collective_plan, trained 3 steps
under DistributedModelParallel, with the cost model argv[2] names (default: analytic). Rank 0 writes what it
found to the JSON file named by argv[1]:
the plan every rank got, the types and widths planned, the losses, the shards read back from every rank's
sharded modules and the kernels the sharded lookups run."""

import json
import sys
import warnings

import torch
import torch.distributed as dist
from torch.distributed.optim import _apply_optimizer_in_backward
from torchrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
from torchrec.distributed import DistributedModelParallel
from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder, ShardedEmbeddingBagCollection
from torchrec.distributed.planner import ParameterConstraints, Topology

from shardplan.torchrec import ShardPlanPlanner
from shardplan.worker_exit import exit_worker

warnings.filterwarnings("ignore")
BATCH = 16  # per rank


class Sparse(torch.nn.Module):
    def __init__(self):
        super().__init__()
        meta = torch.device("meta")
        # "a" is a table name in both collections; feature "f_a" is read by both.
        self.user = EmbeddingBagCollection(device=meta, tables=[
            EmbeddingBagConfig(name="big", num_embeddings=60000, embedding_dim=52, feature_names=["f_big"]),
            EmbeddingBagConfig(name="hot", num_embeddings=40, embedding_dim=16, feature_names=["f_hot"]),
            EmbeddingBagConfig(name="tiny", num_embeddings=4, embedding_dim=128, feature_names=["f_tiny"]),
            EmbeddingBagConfig(name="a", num_embeddings=5000, embedding_dim=16, feature_names=["f_a"])])
        self.item = EmbeddingBagCollection(device=meta, tables=[
            EmbeddingBagConfig(name="a", num_embeddings=3000, embedding_dim=32, feature_names=["f_a"]),
            EmbeddingBagConfig(name="c", num_embeddings=8000, embedding_dim=24, feature_names=["f_c"])])


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sparse = Sparse()

    def forward(self, features):
        return torch.cat([self.sparse.user(features).values(), self.sparse.item(features).values()], dim=1)


POOLING = {"f_big": 4, "f_hot": 60, "f_tiny": 80, "f_a": 3, "f_c": 5}
ROWS = {"f_big": 60000, "f_hot": 40, "f_tiny": 4, "f_a": 3000, "f_c": 8000}


def batch(rank):
    g = torch.Generator().manual_seed(rank)
    keys = list(POOLING)
    lengths = torch.cat([torch.full((BATCH,), POOLING[k]) for k in keys])
    values = torch.cat([torch.randint(0, ROWS[k], (BATCH * POOLING[k],), generator=g) for k in keys])
    return KeyedJaggedTensor.from_lengths_sync(keys=keys, values=values, lengths=lengths)


def shards_held(model):
    """[(module path, table, offsets, sizes, rank)] this rank holds, read from the sharded modules."""
    held = []
    for path, module in model.named_modules():
        if not isinstance(module, ShardedEmbeddingBagCollection):
            continue
        path = path.removeprefix("_dmp_wrapped_module.")
        for key, tensor in module.state_dict().items():
            table = key.split(".")[-2]  # embedding_bags.<table>.weight
            if hasattr(tensor, "local_shards"):
                held += [(path, table, list(s.metadata.shard_offsets), list(s.metadata.shard_sizes),
                          s.metadata.placement.rank()) for s in tensor.local_shards()]
            else:  # a data-parallel replica
                held.append((path, table, [0, 0], list(tensor.shape), dist.get_rank()))
    return held


def lookup_kernels(model):
    """{kernel class: count} of the sharded lookups' embedding modules on this rank."""
    kernels = {}
    for module in model.modules():
        if isinstance(module, ShardedEmbeddingBagCollection):
            for lookup in module._lookups:
                inner = getattr(lookup, "module", lookup)  # data-parallel lookups sit in DDP
                for emb in getattr(inner, "_emb_modules", []):
                    kernels[type(emb).__name__] = kernels.get(type(emb).__name__, 0) + 1
    return kernels


def main(out_path, cost_model="analytic"):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    model = Model()
    _apply_optimizer_in_backward(torch.optim.SGD, model.parameters(), {"lr": 0.01})
    sharders = [EmbeddingBagCollectionSharder()]
    topology = Topology(world_size=world, local_world_size=world, compute_device="cpu", ddr_cap=10 << 20)
    constraints = {name: ParameterConstraints(pooling_factors=[float(POOLING["f_" + name])])
                   for name in ("big", "hot", "tiny", "c")}
    planner = ShardPlanPlanner(topology=topology, batch_size=BATCH, constraints=constraints, model=cost_model)
    plan = planner.collective_plan(model, sharders, dist.GroupMember.WORLD)
    plans = [None] * world
    dist.all_gather_object(plans, str(plan))
    dmp = DistributedModelParallel(model, device=torch.device("cpu"), plan=plan, sharders=sharders)
    losses = []
    for _ in range(3):
        loss = dmp(batch(rank)).sum()
        loss.backward()
        losses.append(loss.item())
    held, kernels = [None] * world, [None] * world
    dist.all_gather_object(held, shards_held(dmp))
    dist.all_gather_object(kernels, lookup_kernels(dmp))
    if rank == 0:
        planned = {path: {name: {"sharding_type": ps.sharding_type, "compute_kernel": ps.compute_kernel,
                                 "ranks": ps.ranks,
                                 "shards": [[list(m.shard_offsets), list(m.shard_sizes), m.placement.rank()]
                                            for m in ps.sharding_spec.shards] if ps.sharding_spec else None}
                          for name, ps in module_plan.items()}
                   for path, module_plan in plan.plan.items()}
        with open(out_path, "w", encoding="utf-8") as f:
            json.dump({"plans_identical": len(set(plans)) == 1, "planned": planned, "losses": losses,
                       "held": held, "kernels": kernels, "shard_plan_tables": [
                           t["name"] for t in planner.last_plan["tables"]]}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:3])
    exit_worker(0)  # without the interpreter's teardown: shardplan/worker_exit.py says why
