"""python -m shardplan.torchrec.baseline: TorchRec 1.x's own planner on a shard-plan tables file.

    python -m shardplan.torchrec.baseline --tables T --gpus 4 --mem-per-gpu 4294967296 -o plan.json

Plans the tables with TorchRec's EmbeddingShardingPlanner at its defaults (enumerator, proposers,
greedy partitioner, perf and storage estimators, 15% storage reservation) and writes the result as a
`shard-plan/1` plan (the header and the tables' shards; shard-plan computes the per-device fields when it
reads it), so that `shard-plan bench --algos ...,torchrec_planner` scores, validates and times it beside
its own. TorchRec is offered the sharding types a shard-plan plan can hold that its sharders offer for
the compute device and --sharding-types allows (on "cuda": table-, column-, row-, table-row-wise and data-parallel; on "cpu": table-,
column-wise and data-parallel), and the kernels shard-plan plans (fused; dense for data-parallel).
Exit codes as shard-plan's: 0 ok, 1 TorchRec failed, 2 bad input, 3 TorchRec found no plan that fits (its
message on stderr). TorchRec's table-column-wise type is not offered: a shard-plan plan cannot hold it.
"""

import argparse
import json
import logging
import sys
import time
import warnings

from shardplan.files import write_json_atomically
from shardplan.plan_file import SHARDING_TYPES, expected_kernel

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INFEASIBLE = 0, 1, 2, 3
ALGORITHM = "torchrec_planner"


def _entries(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    return doc["tables"] if isinstance(doc, dict) else doc


def read_tables(path):
    """[(name, rows, dim, dtype, pooling_factor)] of a shard-plan tables file (docs/formats.md)."""
    return _tables_of(_entries(path))


def _tables_of(entries):
    out = []
    for i, t in enumerate(entries):
        out.append((t.get("name", f"t{i}"), int(t.get("rows", t.get("num_embeddings"))),
                    int(t.get("dim", t.get("embedding_dim"))), t.get("dtype", "fp32"),
                    float(t.get("pooling_factor", 1.0))))
    return out


class Unplannable(Exception):
    """A constraint TorchRec's planner cannot honour."""


def read_constraints(entries):
    """{name: (sharding_types or None, ranks or None)}: the per-table constraints of a tables file's entries."""
    return {t.get("name", f"t{i}"): (t.get("sharding_types"), t.get("ranks")) for i, t in enumerate(entries)}


def _table_types(name, offered, constraints):
    """The sharding types TorchRec may give one table: those offered that its constraints allow."""
    own, ranks = constraints.get(name, (None, None))
    if ranks:
        raise Unplannable(f"table \"{name}\" is pinned to ranks {ranks}, and TorchRec's planner takes no ranks")
    types = [t for t in offered if own is None or t in own]
    if not types:
        raise Unplannable(f"table \"{name}\" may only be {','.join(own)}, none of which TorchRec offers here "
                          f"({','.join(offered)})")
    return types


def _model(tables):
    import torch
    from torchrec import EmbeddingBagCollection, EmbeddingBagConfig
    from torchrec.modules.embedding_configs import DataType
    dtypes = {"fp32": DataType.FP32, "fp16": DataType.FP16}
    return EmbeddingBagCollection(tables=[
        EmbeddingBagConfig(name=name, num_embeddings=rows, embedding_dim=dim, feature_names=[name],
                           data_type=dtypes[dtype]) for name, rows, dim, dtype, _ in tables],
        device=torch.device("meta"))


def _sharder(optimizer):
    from fbgemm_gpu.split_embedding_configs import EmbOptimType
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    # The optimizer's state is part of TorchRec's storage estimate.
    kinds = {"sgd": EmbOptimType.EXACT_SGD, "adagrad": EmbOptimType.EXACT_ADAGRAD,
             "rowwise_adagrad": EmbOptimType.EXACT_ROWWISE_ADAGRAD, "adam": EmbOptimType.ADAM}
    return EmbeddingBagCollectionSharder(fused_params={"optimizer": kinds[optimizer], "learning_rate": 0.01})


def plan_with_torchrec(tables, args, constraints=None):
    """TorchRec's ShardingPlan of `tables` on the cluster `args` describes, each table within its
    `constraints` (read_constraints)."""
    from torchrec.distributed.planner import EmbeddingShardingPlanner, ParameterConstraints, Topology
    sharder = _sharder(args.optimizer)
    allowed = args.sharding_types.split(",") if args.sharding_types else SHARDING_TYPES
    offered = [t for t in sharder.sharding_types(args.compute_device) if t in SHARDING_TYPES and t in allowed]
    if not offered:
        raise ValueError(f"none of the sharding types {allowed} is one TorchRec offers on {args.compute_device}")
    extra = {"min_partition": args.min_partition} if args.min_partition else {}
    per_table = {}
    for name, _, _, _, pooling in tables:
        types = _table_types(name, offered, constraints or {})
        kernels = sorted({expected_kernel(t) for t in types})
        per_table[name] = ParameterConstraints(sharding_types=types, compute_kernels=kernels, pooling_factors=[pooling],
                                               **extra)
    # On a CPU TorchRec keeps the tables in DDR and counts that: the cap must be the device's memory there.
    topology = Topology(world_size=args.gpus, local_world_size=args.gpus_per_host, compute_device=args.compute_device,
                        hbm_cap=args.mem_per_gpu, ddr_cap=args.mem_per_gpu if args.compute_device == "cpu" else None)
    planner = EmbeddingShardingPlanner(topology=topology, batch_size=args.batch_size, constraints=per_table,
                                       debug=False, timeout_seconds=args.timeout_seconds or None)
    return planner.plan(_model(tables), [sharder])


def plan_document(sharding_plan, tables, args, seconds):
    """The shard-plan/1 plan of TorchRec's ShardingPlan (placements in shard-plan's cuda:R form)."""
    module_plan = sharding_plan.plan.get("", {})
    entries = []
    for name, rows, dim, dtype, _ in tables:
        ps = module_plan[name]
        if ps.sharding_spec is None:  # data_parallel: a whole replica per rank
            shards = [([0, 0], [rows, dim], r) for r in ps.ranks]
        else:
            shards = [(list(m.shard_offsets), list(m.shard_sizes), r)
                      for r, m in zip(ps.ranks, ps.sharding_spec.shards) if 0 not in list(m.shard_sizes)]
        entries.append({"name": name, "rows": rows, "dim": dim, "dtype": dtype, "sharding_type": ps.sharding_type,
                        "compute_kernel": ps.compute_kernel, "ranks": [r for _, _, r in shards],
                        "shards": [{"rank": r, "shard_offsets": off, "shard_sizes": size,
                                    "placement": f"rank:{r}/cuda:{r % args.gpus_per_host}"}
                                   for off, size, r in shards]})
    return {"format": "shard-plan/1", "algorithm": ALGORITHM, "num_devices": args.gpus,
            "devices_per_host": args.gpus_per_host, "memory_per_device_bytes": args.mem_per_gpu,
            "optimizer": args.optimizer, "reserve_fraction": 0.0,
            "torchrec_planner": {"compute_device": args.compute_device, "batch_size": args.batch_size,
                                 "min_partition": args.min_partition, "timeout_seconds": args.timeout_seconds,
                                 "planning_seconds": round(seconds, 3)},
            "tables": entries}


def _parser():
    p = argparse.ArgumentParser(prog="python -m shardplan.torchrec.baseline",
                                description="Plan a shard-plan tables file with TorchRec's own planner.")
    p.add_argument("--tables", required=True, help="shard-plan tables file")
    p.add_argument("--gpus", type=int, required=True, help="world size")
    p.add_argument("--gpus-per-host", type=int, default=8, help="local world size")
    p.add_argument("--mem-per-gpu", type=int, default=80 << 30, help="HBM per rank, bytes (before TorchRec's reservation)")
    p.add_argument("--optimizer", default="sgd", choices=["sgd", "adagrad", "rowwise_adagrad", "adam"])
    p.add_argument("--compute-device", default="cuda", choices=["cuda", "cpu"],
                   help="the device TorchRec plans for (its sharding types depend on it)")
    p.add_argument("--sharding-types", default="",
                   help="comma-separated types TorchRec may choose from, among those its sharders offer (default all)")
    p.add_argument("--batch-size", type=int, default=512, help="per-rank batch size TorchRec's estimates use")
    p.add_argument("--min-partition", type=int, default=0,
                   help="ParameterConstraints.min_partition: smallest column-wise shard (0: TorchRec's default)")
    p.add_argument("--timeout-seconds", type=int, default=0,
                   help="TorchRec's own timeout: the best plan proposed by then (0: none, TorchRec's default)")
    p.add_argument("-o", "--output", required=True, help="plan file to write")
    return p


def main(argv=None):
    args = _parser().parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger().setLevel(logging.ERROR)  # TorchRec logs every data-parallel table's missing spec
    try:
        entries = _entries(args.tables)
        tables, constraints = _tables_of(entries), read_constraints(entries)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"torchrec_planner: {args.tables}: cannot read the tables ({e})", file=sys.stderr)
        return EXIT_USAGE
    from torchrec.distributed.planner.types import PlannerError, PlannerErrorType
    start = time.perf_counter()
    try:
        sharding_plan = plan_with_torchrec(tables, args, constraints)
    except Unplannable as e:
        print(f"torchrec_planner: {e}", file=sys.stderr)
        return EXIT_INFEASIBLE
    except PlannerError as e:
        # Only a model that does not fit is infeasible; TorchRec's own failures are failures.
        unplaceable = e.error_type in (PlannerErrorType.INSUFFICIENT_STORAGE, PlannerErrorType.STRICT_CONSTRAINTS,
                                       PlannerErrorType.PARTITION)
        print(f"torchrec_planner: TorchRec's planner found no plan ({e.error_type.value}): {e}", file=sys.stderr)
        return EXIT_INFEASIBLE if unplaceable else EXIT_FAILED
    except ValueError as e:
        print(f"torchrec_planner: {e}", file=sys.stderr)
        return EXIT_USAGE
    doc = plan_document(sharding_plan, tables, args, time.perf_counter() - start)
    write_json_atomically(args.output, doc)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
