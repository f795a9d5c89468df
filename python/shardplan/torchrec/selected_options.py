"""shard-plan's plan in TorchRec's own terms: the ShardingOptions it selected, with TorchRec's storage
estimate, so that TorchRec's validators and its memory accounting (which counts the fused kernel's input
and output buffers as well as weights and optimizer state) check the plan as they check their own.

A table the plan caches (fused_uvm_caching) gets the plan's load factor on its option's cache_params before
TorchRec estimates it: TorchRec then counts the whole table and its optimizer state in DDR and, in HBM, the
load factor's share of them plus the cache's bookkeeping (4 + 16 x load factor bytes a row) and the
buffers. That is not FBGEMM's HBM (docs/design/uvm-caching.md 3.2: FBGEMM keeps row-wise optimizer state
wholly in HBM and element-wise state in host memory, and rounds the cache to 32-way sets), so a refusal
says so. TorchRec offers the UVM kernels only on a cuda topology: on a CPU the cache never exists (TorchRec
keeps every table in host memory there and FBGEMM builds no cache), and such a plan is refused by name.
"""

import copy
import dataclasses

from fbgemm_gpu.split_table_batched_embeddings_ops_common import CacheAlgorithm
from torchrec.distributed.planner.shard_estimators import EmbeddingStorageEstimator
from torchrec.distributed.planner.types import PlannerError, PlannerErrorType, Shard
from torchrec.distributed.planner.utils import build_sharder_data_map, sharder_name
from torchrec.distributed.types import CacheParams

from shardplan.plan_file import CACHING_KERNELS, UVM_KERNELS, expected_kernel


def selected_options(options, tables, plan, topology, constraints, sharders, built=None):
    """For each planned table, TorchRec's enumerated option of the type it was built with (`built`:
    {(module path, name): sharding type}, else the planned one) and the planned kernel, holding the plan's
    shards (and, for a cached table, the plan's cache algorithm and load factor), with TorchRec's storage
    estimate per shard."""
    offered = {}
    for option in options:
        offered.setdefault((option.path, option.name, option.sharding_type, option.compute_kernel), option)
    planned = {t["name"]: t for t in plan["tables"]}
    selected = []
    for table in tables:
        entry = planned[table.plan_name]
        kind = (built or {}).get((table.path, table.name), entry["sharding_type"])
        kernel = entry.get("compute_kernel") or expected_kernel(entry["sharding_type"])
        option = offered.get((table.path, table.name, kind, kernel))
        if option is None:
            raise PlannerError(_not_offered(table, kind, kernel, topology, offered),
                               PlannerErrorType.STRICT_CONSTRAINTS)
        # A shallow copy: the option keeps its module and tensor, and gets the plan's shards.
        option = copy.copy(option)
        option.shards = [Shard(size=list(s["shard_sizes"]), offset=list(s["shard_offsets"]), rank=s["rank"])
                         for s in entry["shards"]]
        if kernel in CACHING_KERNELS:
            option.cache_params = _planned_cache(option.cache_params, entry["cache_params"])
        selected.append(option)
    sharder_map = {sharder_name(s.module_type): s for s in sharders}
    EmbeddingStorageEstimator(topology=topology, constraints=constraints).estimate(
        selected, build_sharder_data_map(sharder_map))
    return selected


def _planned_cache(given, cache):
    """A copy of the option's CacheParams (from the table's ParameterConstraints, if any: their precision,
    reserved memory and statistics stay) with the plan's algorithm and load factor."""
    algorithm = CacheAlgorithm[cache["algorithm"]]
    if given is None:
        return CacheParams(algorithm=algorithm, load_factor=cache["load_factor"])
    return dataclasses.replace(given, algorithm=algorithm, load_factor=cache["load_factor"])


def _not_offered(table, kind, kernel, topology, offered):
    device = topology.compute_device
    if kernel in UVM_KERNELS and device != "cuda":
        return (f"shard-plan: {table.where} was planned {kind} with kernel {kernel}, which TorchRec offers only on "
                f"a cuda topology (this one is {device}): off cuda TorchRec keeps every table in host memory and "
                "FBGEMM builds no cache, so the plan's host memory and cache cannot be run or estimated there. "
                "Plan it for cuda, or without host memory")
    kernels = sorted({k for (path, name, t, k) in offered if (path, name, t) == (table.path, table.name, kind)})
    return (f"shard-plan: {table.where} was planned {kind} with kernel {kernel}, which TorchRec's sharders and "
            f"constraints do not offer it (they offer {kind} with {kernels or 'no kernel'}; "
            "ParameterConstraints.compute_kernels narrows them)")


def check_storage(selected, reserved, kind):
    """PlannerError when TorchRec's estimate of a rank's shards exceeds what its reservation left there."""
    used, cached = {}, set()
    for option in selected:
        for shard in option.shards:
            used[shard.rank] = used.get(shard.rank, 0) + getattr(shard.storage, kind)
            if getattr(option, "compute_kernel", None) in UVM_KERNELS:
                cached.add(shard.rank)
    for rank, need in sorted(used.items()):
        have = getattr(reserved.devices[rank].storage, kind)
        if need > have:
            note = ""
            if rank in cached and kind == "hbm":
                note = (" Its UVM-cached tables are counted TorchRec's way, the load factor's share of weights "
                        "and optimizer state, which is not what FBGEMM allocates (it keeps row-wise optimizer "
                        "state wholly in HBM and element-wise state in host memory: under Adam or Adagrad "
                        "TorchRec over-counts; docs/design/uvm-caching.md 3.2).")
            elif rank in cached:
                note = (" TorchRec checks host memory per rank (ddr_cap); shard-plan checks it per host and counts "
                        "element-wise optimizer state there, row-wise state in HBM.")
            raise PlannerError(
                f"shard-plan: rank {rank}'s shards need {need} bytes of {kind.upper()} by TorchRec's storage estimate "
                f"(weights, optimizer state and the kernel's input and output buffers), over the {have} bytes its "
                "storage reservation leaves; shard-plan counted weights and optimizer state only." + note +
                " Leave more room with a larger storage reservation", PlannerErrorType.INSUFFICIENT_STORAGE)
