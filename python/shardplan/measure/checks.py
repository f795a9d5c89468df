"""What a measurement needs of its inputs, checked before any rank starts work: errors name the field."""

from shardplan.plan_file import describe_plan
from shardplan.torchrec.baseline import read_tables

# FBGEMM's fused optimizers that run on a CPU (TorchRec's CPU kernels): Adam is GPU-only there.
CPU_OPTIMIZERS = ("sgd", "adagrad", "rowwise_adagrad")


def check_plan(plan, tables_path, device):
    """ValueError naming the table or field when the plan and the tables file do not go together."""
    described = describe_plan(plan)
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
