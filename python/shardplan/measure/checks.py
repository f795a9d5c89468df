"""What a measurement needs of its inputs, checked before any rank starts work: errors name the field."""

from shardplan.plan_file import UVM_KERNELS, describe_plan
from shardplan.torchrec.baseline import read_tables

# FBGEMM's fused optimizers that run on a CPU (TorchRec's CPU kernels): Adam is GPU-only there.
CPU_OPTIMIZERS = ("sgd", "adagrad", "rowwise_adagrad")


def uvm_tables(described):
    """The described plan's tables in host memory (fused_uvm_caching, fused_uvm), as "name (kernel)"."""
    return [f'"{t["table"]}" ({t["compute_kernel"]})' for t in described["tables"]
            if t["compute_kernel"] in UVM_KERNELS]


def check_kernels(described, device_type):
    """ValueError when the plan has UVM tables and the ranks would run on a CPU: TorchRec keeps every table
    in host memory off cuda (BatchedFusedEmbeddingBag's HOST location) and FBGEMM builds no cache on a CPU,
    so the cache, its misses and the host link would not be measured, only a fused table in DDR."""
    tables = uvm_tables(described)
    if tables and device_type != "cuda":
        raise ValueError(f"plan: table{'s' if len(tables) > 1 else ''} {', '.join(tables)} in host memory cannot "
                         f"be measured on a {device_type}: off cuda TorchRec keeps every table in host memory and "
                         "FBGEMM builds no cache, so what ran would be the fused kernel, not the plan. Measure it on "
                         "GPUs with FBGEMM's CUDA build (--device cuda)")


def check_plan(plan, tables_path, device):
    """ValueError naming the table or field when the plan and the tables file do not go together, or when
    the device cannot run the plan's kernels."""
    described = describe_plan(plan)
    check_kernels(described, device.type)
    try:
        tables = {name: (rows, dim) for name, rows, dim, _, _ in read_tables(tables_path)}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{tables_path}: cannot read the tables ({e})") from e
    for t in described["tables"]:
        if t["table"] not in tables:
            raise ValueError(f'table "{t["table"]}" is in the plan, not in {tables_path}')
        if tables[t["table"]] != (t["rows"], t["dim"]):
            rows, dim = tables[t["table"]]
            raise ValueError(f'table "{t["table"]}" is {t["rows"]} x {t["dim"]} in the plan, {rows} x {dim} in '
                             f"{tables_path}")
    optimizer = plan.get("optimizer", "sgd")
    if device.type == "cpu" and optimizer not in CPU_OPTIMIZERS:
        raise ValueError(f"plan: optimizer {optimizer!r} has no fused CPU kernel in FBGEMM "
                         f"(on a CPU: {', '.join(CPU_OPTIMIZERS)})")
