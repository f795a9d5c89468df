"""A replan as what TorchRec 1.x's DistributedModelParallel.reshard takes, and what that reshard can do.

TorchRec reshards a sharded EmbeddingBagCollection in place: `dmp.reshard(delta, path)` hands the
sharder's reshard (ShardedEmbeddingBagCollection.update_shards) `delta[path]`, a pair (megabytes moved,
EmbeddingModuleShardingPlan of the tables that move), sends those tables' weights and optimizer state
point to point and rebuilds the module's lookups. The delta is what its own output_sharding_plans_delta
computes from two ShardingPlans. What that reshard cannot do, reshard_problems names:

- only table-wise and column-wise tables move (prepare_comm_ops asserts it);
- a table keeps its sharding type (update_module_sharding_plan looks the table up under its new type);
- the delta lists the tables whose ranks changed: a table whose shards, kernel or cache change on the same
  ranks is left out, and would keep its old sharding;
- a rank receives a moved table into one local shard: a moved table may not have two shards on one rank;
- one module per call, and a module at the model's own root (path "") only found without a path;
- DistributedModelParallel.reshard ends by rebuilding its optimizer from `_dmp_wrapped_module.module`,
  which only a model wrapped in DDP or FSDP has: on a DMP that wrapped nothing (a model without dense
  parameters, or init_data_parallel=False) it raises AttributeError after the shards moved, its optimizer
  and plan left stale. reshard() below takes the same steps on such a DMP itself.

Its point-to-point sends carry tags hashed with Python's hash() of the table's name, which differs between
processes unless PYTHONHASHSEED is fixed. Gloo matches sends to receives by tag (NCCL ignores tags): on
Gloo every rank must run with one PYTHONHASHSEED, or the receives wait forever. reshard() checks it first
(check_hash_seed).
"""

_MOVABLE = ("table_wise", "column_wise")


def sharding_plan_delta(old, new):
    """{module path: (megabytes moved, EmbeddingModuleShardingPlan of the tables that move)} between two
    ShardingPlans of one model, by TorchRec's own output_sharding_plans_delta (its megabytes count fp32)."""
    from torchrec.distributed.sharding.dynamic_sharding import output_sharding_plans_delta
    return output_sharding_plans_delta(old.plan, new.plan, return_data_volume=True)


def moved_tables(delta):
    """{module path: [table names]} of the modules `delta` moves anything of."""
    return {path: list(module_delta) for path, (_, module_delta) in delta.items() if len(module_delta)}


def _shards(ps):
    if ps.sharding_spec is None:
        return None
    return [(list(m.shard_offsets), list(m.shard_sizes), str(m.placement)) for m in ps.sharding_spec.shards]


def reshard_problems(old, new, delta):
    """What DistributedModelParallel.reshard with `delta` would not turn `old` into `new`, as sentences
    (none: it would). old, new: ShardingPlans of one model; delta: sharding_plan_delta(old, new)."""
    problems = []
    for path, module_plan in new.plan.items():
        moved = delta[path][1] if path in delta else {}
        for name, ps in module_plan.items():
            before = old.plan[path][name]
            where = f'table "{name}"' + (f' of module "{path}"' if path else "")
            if before.sharding_type != ps.sharding_type:
                problems.append(f"{where} changes from {before.sharding_type} to {ps.sharding_type}: TorchRec's "
                                "reshard keeps a table's sharding type")
            elif name in moved:
                if ps.sharding_type not in _MOVABLE:
                    problems.append(f"{where} moves as {ps.sharding_type}: TorchRec's reshard moves "
                                    "table-wise and column-wise tables only")
                elif len(set(ps.ranks)) < len(ps.ranks):
                    problems.append(f"{where} moves to ranks {ps.ranks}: TorchRec's reshard receives one shard "
                                    "of a table per rank")
            elif (_shards(before), before.compute_kernel, before.cache_params) != \
                    (_shards(ps), ps.compute_kernel, ps.cache_params):
                problems.append(f"{where} changes its shards, kernel or cache on the same ranks {ps.ranks}: "
                                "TorchRec's delta lists tables whose ranks change, so it would keep the old ones")
    return problems


def reshard(dmp, delta):
    """Applies `delta` to a DistributedModelParallel, one dmp.reshard call per module that moves anything
    (every rank must call it); returns the megabytes TorchRec counts moved. Rebuild any optimizer that
    wraps dmp.fused_optimizer afterwards: reshard makes a new one."""
    volume = 0.0
    if moved_tables(delta):
        check_hash_seed(getattr(getattr(dmp, "_env", None), "process_group", None))
    for path in moved_tables(delta):
        if hasattr(dmp, "_dmp_wrapped_module") and not _data_parallel_wrapped(dmp):
            volume += _reshard_unwrapped(dmp, delta, path)
        else:
            volume += dmp.reshard(delta, path or None)  # it walks a path from the root: "" is the root itself
    return volume


def check_hash_seed(pg=None):
    """Raises RuntimeError where the ranks of `pg` (default: the world) hash strings differently, as ranks
    started without one PYTHONHASHSEED do: TorchRec's reshard would wait for its sends forever."""
    import torch.distributed as dist
    if not dist.is_initialized():
        return
    hashes = [None] * dist.get_world_size(pg)
    dist.all_gather_object(hashes, hash("shardplan reshard"), group=pg)
    if len(set(hashes)) > 1:
        raise RuntimeError("the ranks hash strings differently (PYTHONHASHSEED unset or not the same on every "
                           "rank): TorchRec's reshard tags its sends with hashes of table names, and its "
                           "receives would wait forever; start every rank with one PYTHONHASHSEED")


def _data_parallel_wrapped(dmp):
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.nn.parallel import DistributedDataParallel
    return isinstance(dmp._dmp_wrapped_module, (DistributedDataParallel, FullyShardedDataParallel))


def _reshard_unwrapped(dmp, delta, path):
    # DistributedModelParallel.reshard's steps (TorchRec 1.9), its optimizer rebuilt from the model itself.
    module = dmp.module
    for step in filter(None, path.split(".")):
        module = getattr(module, step)
    volume, module_delta = delta[path]
    dmp._sharder_map[module.unsharded_module_type].reshard(module, module_delta, dmp._env, dmp.device)
    dmp._optim = dmp._init_optim(dmp._dmp_wrapped_module)
    dmp._plan.plan[path] = module.module_sharding_plan
    return volume
