"""A shard-plan plan as TorchRec 1.x's ShardingPlan, built with TorchRec's own helpers and checked.

Every ParameterSharding names its compute kernel explicitly: since TorchRec 0.5 the helpers pick `dense`
for a parameter without an optimizer applied in backward, which would silently train a sharded table
another way (TorchRec's own planner refuses `dense` for anything but data-parallel). What TorchRec built
is then compared with the plan, shard for shard and kernel for kernel.

TorchRec runs each sharding type of a module as a group of its own, with its own input and output
all-to-alls. A table-wise table is a column-wise table of one shard, so where a module has both, its
table-wise tables are built as single-shard column-wise ones (`one_group`): the same shards on the same
ranks, one group fewer (data/measured/cpu-2core/torchrec-groups).

A table the plan keeps in host memory with an HBM cache (compute kernel "fused_uvm_caching") also gets
its cache: `cache_params=CacheParams(algorithm=CacheAlgorithm.LRU, load_factor=x)` on its
ParameterSharding (TorchRec's helpers take no cache parameters), which TorchRec hands FBGEMM as
cache_algorithm and cache_load_factor; the check compares them too. The plan is built on any device type,
but only cuda runs it as planned: off cuda TorchRec keeps every table in host memory and FBGEMM builds no
cache.
"""

import dataclasses

import torch
from fbgemm_gpu.split_table_batched_embeddings_ops_common import CacheAlgorithm  # what CacheParams holds
from torchrec.distributed import sharding_plan as helpers
from torchrec.distributed.types import CacheParams, EnumerableShardingSpec, ShardingPlan, ShardMetadata

from shardplan.plan_file import PlanError, describe_plan, read_plan
from shardplan.torchrec.tables import plan_names


def built_types(tables, one_group=True):
    """{table: the sharding type TorchRec builds it with}, for described tables of one module.

    one_group: a table-wise table of a module that also has column-wise tables of its kernel is built as
    column-wise with one shard, unless its width is not a multiple of 4 (FBGEMM's column-wise rule)."""
    out = {t["table"]: t["sharding_type"] for t in tables}
    if not one_group:
        return out
    column_kernels = {t["compute_kernel"] for t in tables if t["sharding_type"] == "column_wise"}
    for t in tables:
        if t["sharding_type"] == "table_wise" and t["compute_kernel"] in column_kernels and t["dim"] % 4 == 0:
            out[t["table"]] = "column_wise"
    return out


def per_param_sharding(tables, one_group=True):
    """{table name: ParameterShardingGenerator} for construct_module_sharding_plan, from described tables."""
    out = {}
    types = built_types(tables, one_group)
    for t in tables:
        out[t["name_in_module"]] = _with_cache(_generator(t, types), t.get("cache_params"))
    return out


def _generator(t, types):
    """The ParameterShardingGenerator of one described table, its kernel named (no cache yet)."""
    kernel, kind = t["compute_kernel"], t["sharding_type"]
    if kind == "table_wise" and types[t["table"]] == "column_wise":
        return _uneven_column_wise(t["ranks"], [t["dim"]], kernel)
    if kind == "table_wise":
        return helpers.table_wise(rank=t["ranks"][0], compute_kernel=kernel)
    if kind == "row_wise":
        return helpers.row_wise(compute_kernel=kernel)
    if kind == "table_row_wise":
        return _with_kernel(helpers.table_row_wise(host_index=t["host_index"]), kernel)
    if kind == "data_parallel":
        return _with_kernel(helpers.data_parallel(), kernel)
    if len(set(t["widths"])) == 1:
        return helpers.column_wise(ranks=list(t["ranks"]), compute_kernel=kernel)
    return _uneven_column_wise(t["ranks"], t["widths"], kernel)


def cache_params_of(cache):
    """TorchRec's CacheParams of a described table's "cache_params" ({"algorithm", "load_factor"}), or None."""
    if cache is None:
        return None
    return CacheParams(algorithm=CacheAlgorithm[cache["algorithm"]], load_factor=cache["load_factor"])


def _with_cache(generator, cache):
    # The helpers take no cache parameters: set them on what they build, as _with_kernel sets the kernel.
    if cache is None:
        return generator

    def build(param, local_size, world_size, device_type, sharder):
        return dataclasses.replace(generator(param, local_size, world_size, device_type, sharder),
                                   cache_params=cache_params_of(cache))
    return build


def _with_kernel(generator, kernel):
    # table_row_wise() and data_parallel() take no kernel; set it on what they build.
    def build(param, local_size, world_size, device_type, sharder):
        return dataclasses.replace(generator(param, local_size, world_size, device_type, sharder),
                                   compute_kernel=kernel)
    return build


def _uneven_column_wise(ranks, widths, kernel):
    # column_wise(ranks=) splits evenly and size_per_rank ignores ranks, so uneven shards are set here;
    # the sharded module reads each shard's own width (cw_sharding uses shard_sizes[1] per shard).
    base = helpers.column_wise(ranks=[ranks[0]], compute_kernel=kernel)

    def build(param, local_size, world_size, device_type, sharder):
        built = base(param, local_size, world_size, device_type, sharder)
        shards, offset = [], 0
        for rank, width in zip(ranks, widths):
            shards.append(ShardMetadata(shard_sizes=[param.shape[0], width], shard_offsets=[0, offset],
                                        placement=helpers.placement(device_type, rank, local_size)))
            offset += width
        return dataclasses.replace(built, ranks=list(ranks), sharding_spec=EnumerableShardingSpec(shards))
    return build


def embedding_bag_collections(model):
    """{module path: EmbeddingBagCollection} of every EBC in `model`, in module order ("" for the model)."""
    from torchrec import EmbeddingBagCollection
    return {path: m for path, m in model.named_modules() if isinstance(m, EmbeddingBagCollection)}


def _module_tables(modules):
    # {plan name: (path, name in module, rows, dim)} by the same naming rule the planner writes.
    keys, shapes = [], {}
    for path, module in modules.items():
        for config in module.embedding_bag_configs():
            keys.append((path, config.name))
            shapes[(path, config.name)] = (config.num_embeddings, config.embedding_dim)
    names = plan_names(keys)
    return {names[k]: (k[0], k[1]) + shapes[k] for k in keys}


def build_sharding_plan(plan, model, device_type=None, sharders=None, check_launch=True, one_group=True):
    """The ShardingPlan of every EmbeddingBagCollection in `model` (a plan dict or path).

    Tables are matched by name: a table's own name, or "module.path/name" where two modules have tables
    of one name (what ShardPlanPlanner writes). device_type defaults to "cuda" when CUDA is available,
    else "cpu"; the plan's ranks and devices_per_host hold for either. check_launch: refuse a running job
    whose world size or local world size is not the plan's (off when planning for another job).
    one_group: build table-wise tables as single-shard column-wise ones beside column-wise tables
    (built_types); the shards and ranks are the plan's either way.
    """
    description = describe_plan(plan if isinstance(plan, dict) else read_plan(plan))
    device_type = device_type or ("cuda" if torch.cuda.is_available() else "cpu")
    modules = embedding_bag_collections(model)
    if not modules:
        raise PlanError("the model has no EmbeddingBagCollection to shard")
    if check_launch:
        _check_launch(description)
    by_path = _assign_tables(description, _module_tables(modules))
    sharders = {type(m): s for s in (sharders or []) for m in modules.values() if isinstance(m, s.module_type)}
    result = {}
    for path, tables in by_path.items():
        module_plan = helpers.construct_module_sharding_plan(
            modules[path], per_param_sharding(tables, one_group), sharder=sharders.get(type(modules[path])),
            local_size=description["local_size"], world_size=description["world_size"], device_type=device_type)
        check_module_plan(tables, module_plan, device_type, description["local_size"], path, one_group)
        result[path] = module_plan
    return ShardingPlan(result)


def _assign_tables(description, module_tables):
    problems, by_path = [], {}
    planned = {t["table"] for t in description["tables"]}
    for t in description["tables"]:
        found = module_tables.get(t["table"])
        if found is None:
            problems.append(f'"{t["table"]}" is in the plan, not the model')
            continue
        path, name, rows, dim = found
        if (rows, dim) != (t["rows"], t["dim"]):
            problems.append(f'"{t["table"]}" is {t["rows"]} x {t["dim"]} in the plan, {rows} x {dim} in the model')
        by_path.setdefault(path, []).append(dict(t, name_in_module=name))
    problems += [f'"{n}" is in the model, not the plan' for n in module_tables if n not in planned]
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise PlanError("plan and model disagree: " + "; ".join(problems[:5]) + more)
    return by_path


def _check_launch(description):
    # The plan's ranks and placements only hold in a job of its shape.
    import os
    import torch.distributed as dist
    local = os.environ.get("LOCAL_WORLD_SIZE")  # what torchrun sets and TorchRec's get_local_size() reads
    # A plan of fewer ranks than a host holds runs on one partly filled host.
    per_host = min(description["local_size"], description["world_size"])
    if local is not None and local.isdigit() and int(local) != per_host:
        raise PlanError(f"LOCAL_WORLD_SIZE {local} differs from the plan's {per_host} ranks per host "
                        f"(devices_per_host {description['local_size']}, num_devices {description['world_size']})")
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() != description["world_size"]:
        raise PlanError(f"the process group has {dist.get_world_size()} ranks, the plan "
                        f"{description['world_size']} (num_devices)")


def check_module_plan(tables, module_plan, device_type, local_size, path="", one_group=True):
    """Raises PlanError where what TorchRec built differs from the plan: type (as built_types has it),
    kernel, cache (algorithm and load factor), ranks or shards."""
    types = built_types(tables, one_group)
    for t in tables:
        ps = module_plan[t["name_in_module"]]
        where = f'table "{t["table"]}"' + (f' of module "{path}"' if path else "")
        if ps.compute_kernel != t["compute_kernel"]:
            raise PlanError(f"{where}: TorchRec built compute kernel {ps.compute_kernel!r}, the plan has "
                            f"{t['compute_kernel']!r}")
        _check_cache(where, ps.cache_params, t.get("cache_params"))
        want = [(s["rank"], s["shard_offsets"], s["shard_sizes"],
                 str(helpers.placement(device_type, s["rank"], local_size))) for s in t["shards"]]
        if ps.sharding_spec is None:
            # data_parallel: TorchRec keeps only the ranks (every rank holds the whole table).
            got, want = list(ps.ranks or []), t["ranks"]
        else:
            # row_wise() and table_row_wise() also list empty shards on trailing ranks; the plan has none.
            got = [(r, list(m.shard_offsets), list(m.shard_sizes), str(m.placement))
                   for r, m in zip(ps.ranks, ps.sharding_spec.shards) if 0 not in list(m.shard_sizes)]
        if ps.sharding_type != types[t["table"]] or got != want:
            what = "on ranks" if ps.sharding_spec is None else "shards"
            raise PlanError(f"{where}: TorchRec built {ps.sharding_type} {what} {got}, "
                            f"the plan has {types[t['table']]} {what} {want}")


def _check_cache(where, built, planned):
    # A cached table: TorchRec's CacheParams holds the plan's algorithm and load factor. Any other: none.
    if planned is None:
        if built is not None:
            raise PlanError(f"{where}: TorchRec built cache_params {built}, the plan has none")
        return
    got = None if built is None else (getattr(built.algorithm, "name", built.algorithm), built.load_factor)
    if got != (planned["algorithm"], planned["load_factor"]):
        raise PlanError(f"{where}: TorchRec built cache algorithm and load factor {got}, the plan has "
                        f"{(planned['algorithm'], planned['load_factor'])}")
