"""What a TorchRec module asks of a planner, as shard-plan's tables file.

TorchRec's own enumerator lists every shardable table of the module (any number of
EmbeddingBagCollections at any module path) with the sharding types and compute kernels its sharders and
`ParameterConstraints` allow, so what shard-plan is told is exactly what TorchRec's planner would choose
from.
"""

import dataclasses

from shardplan.plan_file import SHARDING_TYPES, expected_kernel

# shard-plan's tables file holds fp32 and fp16 tables (docs/formats.md).
_DTYPES = {"torch.float32": "fp32", "torch.float16": "fp16"}


class TableError(ValueError):
    """A table shard-plan cannot plan (its message names the module path and the table)."""


@dataclasses.dataclass
class ModuleTable:
    path: str            # module path in the model ("" for the planned module itself)
    name: str            # the table's name in its module
    plan_name: str       # its name in the tables file and the plan (unique in the model)
    rows: int
    dim: int
    dtype: str
    pooling_factor: float
    sharding_types: list  # the types TorchRec allows it that a shard-plan plan can hold, in TorchRec's order
    kernels: list

    @property
    def where(self):
        return f'table "{self.name}" of module "{self.path}"'


def plan_names(keys):
    """{(path, name): name in the plan}: the table's own name where no other module has one like it,
    else "path/name" (a module path never holds '/', so this cannot collide with a plain name's path)."""
    count = {}
    for _, name in keys:
        count[name] = count.get(name, 0) + 1
    return {(path, name): name if count[name] == 1 else f"{path}/{name}" for path, name in keys}


def describe_module(search_space):
    """The module's tables, in enumeration order, from TorchRec's enumerated sharding options."""
    from torchrec import EmbeddingBagCollection
    found = {}
    for option in search_space:
        module = option.module[1]
        if type(module) is not EmbeddingBagCollection:  # subclasses (feature-processed ones) shard otherwise
            raise TableError(f'module "{option.path}" is a {type(module).__name__}: shard-plan plans '
                             "EmbeddingBagCollections only; leave its sharder out of the sharders")
        key = (option.path, option.name)
        entry = found.setdefault(key, {"option": option, "types": [], "kernels": []})
        if option.sharding_type not in entry["types"]:
            entry["types"].append(option.sharding_type)
        if option.compute_kernel not in entry["kernels"]:
            entry["kernels"].append(option.compute_kernel)
    names = plan_names(list(found))
    return [_table(path, name, names[(path, name)], entry) for (path, name), entry in found.items()]


def _table(path, name, plan_name, entry):
    option = entry["option"]
    rows, dim = (int(n) for n in option.tensor.shape)
    dtype = _DTYPES.get(str(option.tensor.dtype))
    where = f'table "{name}" of module "{path}"'
    if dtype is None:
        raise TableError(f"{where}: data type {option.tensor.dtype} is not one shard-plan plans (fp32, fp16)")
    # Several features of one table each look it up: the table's lookups per sample add up.
    pooling = float(sum(option.input_lengths)) if option.input_lengths else 1.0
    types = [t for t in entry["types"] if t in SHARDING_TYPES]
    usable = [t for t in types if expected_kernel(t) in entry["kernels"]]
    if not usable:
        raise TableError(
            f"{where}: TorchRec's sharders and constraints allow it sharding types {entry['types']} with kernels "
            f"{entry['kernels']}; shard-plan plans {', '.join(SHARDING_TYPES)} with the fused kernel "
            "(data_parallel: dense), so none of them can hold it")
    return ModuleTable(path=path, name=name, plan_name=plan_name, rows=rows, dim=dim, dtype=dtype,
                       pooling_factor=pooling, sharding_types=usable, kernels=entry["kernels"])


def plan_sharding_types(tables):
    """shard-plan's --sharding-types for `tables`: every type some table allows, with table_wise (which the
    binary's set always holds); each table's own list goes in the tables file and narrows it per table."""
    allowed = {t for table in tables for t in table.sharding_types} | {"table_wise"}
    return [t for t in SHARDING_TYPES if t in allowed]


def tables_document(tables):
    """The tables file shard-plan reads (docs/formats.md), each table with the sharding types TorchRec
    allows it (its ParameterConstraints.sharding_types and its sharders')."""
    return {"tables": [{"name": t.plan_name, "rows": t.rows, "dim": t.dim, "dtype": t.dtype,
                        "pooling_factor": t.pooling_factor, "sharding_types": list(t.sharding_types)}
                       for t in tables]}
