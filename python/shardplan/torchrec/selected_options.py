"""shard-plan's plan in TorchRec's own terms: the ShardingOptions it selected, with TorchRec's storage
estimate, so that TorchRec's validators and its memory accounting (which counts the fused kernel's input
and output buffers as well as weights and optimizer state) check the plan as they check their own."""

import copy

from torchrec.distributed.planner.shard_estimators import EmbeddingStorageEstimator
from torchrec.distributed.planner.types import PlannerError, PlannerErrorType, Shard
from torchrec.distributed.planner.utils import build_sharder_data_map, sharder_name


def selected_options(options, tables, plan, topology, constraints, sharders, built=None):
    """For each planned table, TorchRec's enumerated option of the type it was built with (`built`:
    {(module path, name): sharding type}, else the planned one) and the planned kernel, holding the plan's
    shards, with TorchRec's storage estimate per shard."""
    offered = {}
    for option in options:
        offered.setdefault((option.path, option.name, option.sharding_type, option.compute_kernel), option)
    planned = {t["name"]: t for t in plan["tables"]}
    selected = []
    for table in tables:
        entry = planned[table.plan_name]
        kind = (built or {}).get((table.path, table.name), entry["sharding_type"])
        option = offered.get((table.path, table.name, kind, entry["compute_kernel"]))
        if option is None:
            raise PlannerError(f"shard-plan: {table.where} was planned {kind} with kernel "
                               f"{entry['compute_kernel']}, which TorchRec's sharders and constraints do not offer it",
                               PlannerErrorType.STRICT_CONSTRAINTS)
        # A shallow copy: the option keeps its module and tensor, and gets the plan's shards.
        option = copy.copy(option)
        option.shards = [Shard(size=list(s["shard_sizes"]), offset=list(s["shard_offsets"]), rank=s["rank"])
                         for s in entry["shards"]]
        selected.append(option)
    sharder_map = {sharder_name(s.module_type): s for s in sharders}
    EmbeddingStorageEstimator(topology=topology, constraints=constraints).estimate(
        selected, build_sharder_data_map(sharder_map))
    return selected


def check_storage(selected, reserved, kind):
    """PlannerError when TorchRec's estimate of a rank's shards exceeds what its reservation left there."""
    used = {}
    for option in selected:
        for shard in option.shards:
            used[shard.rank] = used.get(shard.rank, 0) + getattr(shard.storage, kind)
    for rank, need in sorted(used.items()):
        have = getattr(reserved.devices[rank].storage, kind)
        if need > have:
            raise PlannerError(
                f"shard-plan: rank {rank}'s shards need {need} bytes of {kind.upper()} by TorchRec's storage estimate "
                f"(weights, optimizer state and the kernel's input and output buffers), over the {have} bytes its "
                "storage reservation leaves; shard-plan counted weights and optimizer state only. Leave more room "
                "with a larger storage reservation", PlannerErrorType.INSUFFICIENT_STORAGE)
