#!/usr/bin/env python3
"""Turn a shard-plan plan.json into TorchRec ParameterSharding entries.

Two layers:
  * Pure Python (standard library only): `read_plan`, `describe_plan` check a plan against the geometry
    TorchRec's sharding helpers can express and return a neutral, JSON-ready description per table.
  * TorchRec (imported only when called): `build_per_param_sharding` makes the helper calls and
    `load_sharding_plan` runs `construct_module_sharding_plan` for an EmbeddingBagCollection, then checks
    that what TorchRec built is shard for shard the plan.

In a training script (tools/ on sys.path):
    from plan_to_torchrec import load_sharding_plan
    module_plan = load_sharding_plan("plan.json", model.sparse_arch.embedding_bag_collection)
    plan = ShardingPlan({"sparse_arch.embedding_bag_collection": module_plan})

CLI: `plan_to_torchrec.py plan.json` prints the description as JSON; `--check-torchrec` also builds the
TorchRec plan (on the meta device, no GPU or process group needed). Exit codes: 0 ok, 2 bad plan or usage,
3 TorchRec not installed.

TorchRec facts relied on, read in torchrec/distributed/sharding_plan.py of meta-pytorch/torchrec main
(commit 13c7f287) and of an older pytorch/torchrec revision whose helpers took only `rank` / `ranks`;
only the subset common to both is used:
  * construct_module_sharding_plan(module, per_param_sharding, sharder=None, local_size=None,
    world_size=None, device_type=...): per_param_sharding must name exactly the module's tables; each
    value is called as generator(param, local_size, world_size, device_type, sharder).
  * placement(device_type, rank, local_size) -> "rank:R/cuda:R%local_size" (the plan's "placement").
  * table_wise(rank=R): one shard, offsets [0, 0], sizes [rows, dim].
  * column_wise(ranks=[...]): dim / len(ranks) columns per shard, shards in column order zipped with ranks;
    ranks may repeat. Newer versions pick the block with _find_base_dim, which keeps dim / len(ranks) only
    when it is a multiple of 4, so widths must be multiples of 4 (FBGEMM needs that anyway).
    Newer versions' `size_per_rank` is NOT used: it puts shard i on rank i and ignores `ranks`.
  * row_wise(): ceil(rows / world_size) rows on each of ranks 0, 1, ... in order (trailing ranks may get
    none). Nothing else can be expressed for training: row_wise(sizes_placement=...) is for inference
    (it forces the quantized kernel).
  * table_row_wise(host_index=H) and data_parallel() are the same in meta-pytorch/torchrec 376cac6a and
    pytorch/torchrec a48cef79 as when they were added (pytorch/torchrec 5a8b5d8b); neither takes
    compute_kernel, so TorchRec picks the kernel (data_parallel: "dense", never "fused").
  * table_row_wise(host_index=H): row_wise's split over the local_size ranks of host H instead of all
    ranks: ceil(rows / local_size) rows on each of ranks H*local_size, H*local_size + 1, ... in order;
    ranks lists all local_size of them, trailing ones possibly empty. Its sharding (sharding/twrw_sharding.py)
    asserts world_size % local_size == 0 ("group granularity must be node").
  * data_parallel(): ranks = [0, ..., world_size - 1] and sharding_spec None: a replica of the whole
    table per rank, with no shard metadata.
  * ParameterSharding is a dataclass (sharding_type, compute_kernel, ranks, sharding_spec, ...);
    EnumerableShardingSpec and ShardMetadata come from torchrec.distributed.types.
"""

import argparse
import dataclasses
import importlib
import json
import math
import os
import sys

PLAN_FORMAT = "shard-plan/1"
SHARDING_TYPES = ("table_wise", "column_wise", "row_wise", "table_row_wise", "data_parallel")


class PlanError(ValueError):
    """A plan that cannot be read, or that TorchRec's helpers cannot express."""


def _int(value, where, minimum):
    # bool is an int in Python; a plan that says `true` for a size is wrong, not 1.
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise PlanError(f"{where}: must be an integer >= {minimum}, got {json.dumps(value)}")
    return value


def _pair(value, where):
    if not isinstance(value, list) or len(value) != 2:
        raise PlanError(f"{where}: must be a [row, col] pair, got {json.dumps(value)}")
    return _int(value[0], f"{where}[0]", 0), _int(value[1], f"{where}[1]", 0)


def read_plan(path):
    """Load a plan file ('-' for stdin); a missing file or bad JSON is a PlanError."""
    try:
        if path == "-":
            return json.load(sys.stdin)
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise PlanError(f"{path}: cannot read: {e.strerror or e}") from e
    except json.JSONDecodeError as e:
        raise PlanError(f"{path}: not JSON: {e}") from e


def describe_plan(plan):
    """Check a plan dict and describe each table in TorchRec's terms.

    Returns {"format", "world_size", "local_size", "tables": [...]}, tables in plan order, each with
    "table", "rows", "dim", "sharding_type", "compute_kernel", "ranks" and "shards" in TorchRec's shard
    order (column order, row order), "torchrec" (the helper call), plus "widths" (column_wise),
    "rows_per_rank" (row_wise, table_row_wise) and "host_index" (table_row_wise).
    """
    if not isinstance(plan, dict):
        raise PlanError("plan: must be a JSON object")
    fmt = plan.get("format")
    if fmt != PLAN_FORMAT:
        raise PlanError(f"plan: format {json.dumps(fmt)} is not {json.dumps(PLAN_FORMAT)}")
    world = _int(plan.get("num_devices"), "plan: num_devices", 1)
    # Same default as shard-plan's reader: 8 GPUs per host.
    local = _int(plan.get("devices_per_host", 8), "plan: devices_per_host", 1)
    tables = plan.get("tables")
    if not isinstance(tables, list) or not tables:
        raise PlanError("plan: tables must be a non-empty list")
    seen = set()
    described = []
    for i, entry in enumerate(tables):
        t = _describe_table(entry, i, world, local)
        if t["table"] in seen:
            raise PlanError(f'table "{t["table"]}": appears more than once')
        seen.add(t["table"])
        described.append(t)
    return {"format": PLAN_FORMAT, "world_size": world, "local_size": local, "tables": described}


def _describe_table(entry, index, world, local):
    if not isinstance(entry, dict):
        raise PlanError(f"tables[{index}]: must be an object")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise PlanError(f"tables[{index}].name: must be a non-empty string")
    label = f'table "{name}"'
    rows = _int(entry.get("rows"), f"{label}: rows", 1)
    dim = _int(entry.get("dim"), f"{label}: dim", 1)
    kind = entry.get("sharding_type")
    if kind not in SHARDING_TYPES:
        raise PlanError(f"{label}: sharding_type {json.dumps(kind)} has no TorchRec helper here "
                        f"(expected one of {', '.join(SHARDING_TYPES)})")
    raw = entry.get("shards")
    if not isinstance(raw, list) or not raw:
        raise PlanError(f"{label}: shards must be a non-empty list")
    shards = [_read_shard(s, f"{label} shards[{i}]", rows, dim, world, local) for i, s in enumerate(raw)]
    # The plan's "ranks" mirrors ParameterSharding.ranks: the shards' ranks in shard order.
    if entry.get("ranks") != [s["rank"] for s in shards]:
        raise PlanError(f"{label}: ranks {json.dumps(entry.get('ranks'))} do not list the shards' ranks in order "
                        f"{[s['rank'] for s in shards]}")
    out = {"table": name, "rows": rows, "dim": dim, "sharding_type": kind,
           "compute_kernel": entry.get("compute_kernel", "fused")}

    if kind == "table_wise":
        if len(shards) != 1:
            raise PlanError(f"{label}: table_wise needs exactly one shard, got {len(shards)}")
        s = shards[0]
        if s["shard_offsets"] != [0, 0] or s["shard_sizes"] != [rows, dim]:
            raise PlanError(f"{label} shards[0]: a table_wise shard must be the whole table (offsets [0, 0], "
                            f"sizes [{rows}, {dim}]), got offsets {s['shard_offsets']}, sizes {s['shard_sizes']}")
        out.update(ranks=[s["rank"]], shards=shards, torchrec=f"table_wise(rank={s['rank']})")
        return out

    if kind == "column_wise":
        for i, s in enumerate(shards):
            if s["shard_offsets"][0] != 0 or s["shard_sizes"][0] != rows:
                raise PlanError(f"{label} shards[{i}]: a column_wise shard must hold all {rows} rows, got rows "
                                f"[{s['shard_offsets'][0]}, {s['shard_offsets'][0] + s['shard_sizes'][0]})")
            if s["shard_sizes"][1] % 4:
                raise PlanError(f"{label} shards[{i}]: width {s['shard_sizes'][1]} is not a multiple of 4 "
                                "(FBGEMM's kernels and TorchRec's column_wise need it)")
        ordered = _contiguous(label, shards, 1, dim, "column")
        ranks = [s["rank"] for s in ordered]
        widths = [s["shard_sizes"][1] for s in ordered]
        # Equal widths are exactly what column_wise(ranks=...) builds; uneven ones need explicit shards.
        call = (f"column_wise(ranks={ranks})" if len(set(widths)) == 1
                else f"column_wise with explicit shards (uneven widths {widths})")
        out.update(ranks=ranks, widths=widths, shards=ordered, torchrec=call)
        return out

    if kind == "data_parallel":
        # data_parallel() replicates the whole table on every rank, in rank order; nothing else is expressible.
        if [s["rank"] for s in shards] != list(range(world)):
            raise PlanError(f"{label}: TorchRec's data_parallel() puts one replica on each of ranks 0..{world - 1} "
                            f"in rank order; this plan has shards on ranks {[s['rank'] for s in shards]}")
        for i, s in enumerate(shards):
            if s["shard_offsets"] != [0, 0] or s["shard_sizes"] != [rows, dim]:
                raise PlanError(f"{label} shards[{i}]: a data_parallel shard must be the whole table (offsets "
                                f"[0, 0], sizes [{rows}, {dim}]), got offsets {s['shard_offsets']}, "
                                f"sizes {s['shard_sizes']}")
        out.update(ranks=list(range(world)), shards=shards, torchrec="data_parallel()")
        return out

    for i, s in enumerate(shards):
        if s["shard_offsets"][1] != 0 or s["shard_sizes"][1] != dim:
            raise PlanError(f"{label} shards[{i}]: a {kind} shard must hold all {dim} columns, got columns "
                            f"[{s['shard_offsets'][1]}, {s['shard_offsets'][1] + s['shard_sizes'][1]})")
    if kind == "row_wise":
        ordered = _row_blocks(label, shards, rows, world, 0, "row_wise()", "")
        out.update(ranks=[s["rank"] for s in ordered], rows_per_rank=[s["shard_sizes"][0] for s in ordered],
                   shards=ordered, torchrec="row_wise()")
        return out

    # table_row_wise: TorchRec's helper names a host, not ranks, so the table must sit on one whole host.
    hosts = sorted({s["rank"] // local for s in shards})
    if len(hosts) != 1:
        raise PlanError(f"{label}: TorchRec's table_row_wise(host_index=...) keeps a table on one host of "
                        f"{local} ranks (devices_per_host); this plan has shards on hosts {hosts} "
                        f"(ranks {[s['rank'] for s in shards]})")
    if world % local:
        raise PlanError(f"{label}: TorchRec's table_row_wise needs whole hosts, num_devices {world} a multiple of "
                        f"devices_per_host {local} (it lists all {local} ranks of the host, and its sharding "
                        "asserts whole hosts)")
    call = f"table_row_wise(host_index={hosts[0]})"
    ordered = _row_blocks(label, shards, rows, local, hosts[0] * local, call, f" of host {hosts[0]}")
    out.update(ranks=[s["rank"] for s in ordered], rows_per_rank=[s["shard_sizes"][0] for s in ordered],
               host_index=hosts[0], shards=ordered, torchrec=call)
    return out


def _row_blocks(label, shards, rows, parts, first, call, where):
    """Shards in row order, checked to be TorchRec's ceil(rows / parts) blocks on ranks first, first + 1, ...

    Both row_wise() and table_row_wise() lay rows out this way; TorchRec's empty trailing blocks have no
    shard in a plan, so they are not expected here.
    """
    ordered = _contiguous(label, shards, 0, rows, "row")
    block = math.ceil(rows / parts)
    want_sizes = [min(block, rows - k * block) for k in range(math.ceil(rows / block))]
    want_ranks = [first + k for k in range(len(want_sizes))]
    ranks = [s["rank"] for s in ordered]
    sizes = [s["shard_sizes"][0] for s in ordered]
    if ranks != want_ranks or sizes != want_sizes:
        raise PlanError(f"{label}: TorchRec's {call} puts ceil({rows} / {parts}) = {block} rows on each of "
                        f"ranks {first}, {first + 1}, ...{where} in order (rows {want_sizes} on ranks {want_ranks}); "
                        f"this plan has rows {sizes} on ranks {ranks}, which TorchRec's helpers cannot express")
    return ordered


def _read_shard(shard, where, rows, dim, world, local):
    if not isinstance(shard, dict):
        raise PlanError(f"{where}: must be an object")
    rank = _int(shard.get("rank"), f"{where}.rank", 0)
    if rank >= world:
        raise PlanError(f"{where}.rank: {rank} is out of range [0, {world})")
    row0, col0 = _pair(shard.get("shard_offsets"), f"{where}.shard_offsets")
    nrows, ncols = _pair(shard.get("shard_sizes"), f"{where}.shard_sizes")
    if nrows == 0 or ncols == 0:
        raise PlanError(f"{where}.shard_sizes: empty shard [{nrows}, {ncols}]")
    if row0 + nrows > rows or col0 + ncols > dim:
        raise PlanError(f"{where}: rows [{row0}, {row0 + nrows}) x columns [{col0}, {col0 + ncols}) lie outside "
                        f"the {rows} x {dim} table")
    # TorchRec derives the placement from the rank: cuda:<rank mod local_size>.
    placement = f"rank:{rank}/cuda:{rank % local}"
    if shard.get("placement") != placement:
        raise PlanError(f"{where}.placement: {json.dumps(shard.get('placement'))} is not {json.dumps(placement)}")
    return {"rank": rank, "shard_offsets": [row0, col0], "shard_sizes": [nrows, ncols], "placement": placement}


def _contiguous(label, shards, axis, total, what):
    """Shards sorted along `axis`, checked to tile [0, total) with no gap or overlap."""
    order = sorted(range(len(shards)), key=lambda i: shards[i]["shard_offsets"][axis])
    end, prev = 0, None
    for i in order:
        start, size = shards[i]["shard_offsets"][axis], shards[i]["shard_sizes"][axis]
        if start > end:
            raise PlanError(f"{label}: {what}s [{end}, {start}) are in no shard (gap before shards[{i}])")
        if start < end:
            raise PlanError(f"{label} shards[{i}]: {what}s [{start}, {min(end, start + size)}) overlap shards[{prev}]")
        end, prev = start + size, i
    if end != total:
        raise PlanError(f"{label}: {what}s [{end}, {total}) are in no shard")
    return [shards[i] for i in order]


# ---- TorchRec layer: everything below imports TorchRec lazily. ----

def build_per_param_sharding(description, compute_kernel=None):
    """{table: ParameterShardingGenerator} for construct_module_sharding_plan, from describe_plan's output.

    compute_kernel=None lets TorchRec choose (its "fused" needs the optimizer applied in backward, as the
    plan's "fused" assumes); passing one requires a TorchRec whose helpers take `compute_kernel`.
    table_row_wise() and data_parallel() take none in any TorchRec read, so TorchRec always chooses there.
    """
    sp = importlib.import_module("torchrec.distributed.sharding_plan")
    kw = {"compute_kernel": compute_kernel} if compute_kernel else {}
    out = {}
    for t in description["tables"]:
        if t["sharding_type"] == "table_wise":
            out[t["table"]] = sp.table_wise(rank=t["ranks"][0], **kw)
        elif t["sharding_type"] == "row_wise":
            out[t["table"]] = sp.row_wise(**kw)
        elif t["sharding_type"] == "table_row_wise":
            out[t["table"]] = sp.table_row_wise(host_index=t["host_index"])
        elif t["sharding_type"] == "data_parallel":
            out[t["table"]] = sp.data_parallel()
        elif len(set(t["widths"])) == 1:
            out[t["table"]] = sp.column_wise(ranks=list(t["ranks"]), **kw)
        else:
            out[t["table"]] = _explicit_column_wise(sp, t["ranks"], t["widths"], kw)
    return out


def _explicit_column_wise(sp, ranks, widths, kw):
    # column_wise(ranks=) only splits evenly and size_per_rank ignores ranks, so uneven widths are set here.
    # TorchRec's sharded module reads each shard's own width (cw_sharding uses shard_sizes[1] per shard),
    # so uneven shards run as planned. The base call keeps TorchRec's own choice of compute kernel.
    types = importlib.import_module("torchrec.distributed.types")
    base = sp.column_wise(ranks=[ranks[0]], **kw)

    def generator(param, local_size, world_size, device_type, sharder):
        built = base(param, local_size, world_size, device_type, sharder)
        shards, offset = [], 0
        for rank, width in zip(ranks, widths):
            shards.append(types.ShardMetadata(shard_sizes=[param.shape[0], width], shard_offsets=[0, offset],
                                              placement=sp.placement(device_type, rank, local_size)))
            offset += width
        return dataclasses.replace(built, ranks=list(ranks), sharding_spec=types.EnumerableShardingSpec(shards))

    return generator


def load_sharding_plan(plan, module, world_size=None, local_size=None, device_type="cuda", compute_kernel=None):
    """The EmbeddingModuleShardingPlan of `module` (an EmbeddingBagCollection) from a plan dict or path.

    world_size / local_size default to the plan's num_devices / devices_per_host; other values are refused,
    since ranks and placements were planned for those. Put the result in
    ShardingPlan({"<module path>": result}) for DistributedModelParallel.
    """
    description = describe_plan(plan if isinstance(plan, dict) else read_plan(plan))
    for arg, value, key in (("world_size", world_size, "world_size"), ("local_size", local_size, "local_size")):
        if value is not None and value != description[key]:
            raise PlanError(f"{arg} {value} differs from the plan's {description[key]}")
    _check_module_tables(module, description)
    _check_launch(description)
    sp = importlib.import_module("torchrec.distributed.sharding_plan")
    result = sp.construct_module_sharding_plan(
        module, build_per_param_sharding(description, compute_kernel),
        local_size=description["local_size"], world_size=description["world_size"], device_type=device_type)
    _check_result(description, result, device_type)
    return result


def _check_launch(description):
    # The plan's ranks and cuda:<rank mod devices_per_host> placements only hold in a job of that shape.
    local = os.environ.get("LOCAL_WORLD_SIZE")  # what torchrun sets and TorchRec's get_local_size() reads
    if local is not None and local.isdigit() and int(local) != description["local_size"]:
        raise PlanError(f"LOCAL_WORLD_SIZE {local} differs from the plan's devices_per_host "
                        f"{description['local_size']}")
    try:
        dist = importlib.import_module("torch.distributed")
    except ImportError:
        return
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() != description["world_size"]:
        raise PlanError(f"the process group has {dist.get_world_size()} ranks, the plan "
                        f"{description['world_size']} (num_devices)")


def _check_module_tables(module, description):
    configs = getattr(module, "embedding_bag_configs", None)
    if configs is None:
        return  # construct_module_sharding_plan still asserts that the names match
    if callable(configs):  # a method in newer TorchRec, a property in older
        configs = configs()
    have = {c.name: (c.num_embeddings, c.embedding_dim) for c in configs}
    want = {t["table"]: (t["rows"], t["dim"]) for t in description["tables"]}
    problems = [f'"{n}" is in the plan, not the module' for n in want if n not in have]
    problems += [f'"{n}" is in the module, not the plan' for n in have if n not in want]
    problems += [f'"{n}" is {want[n][0]} x {want[n][1]} in the plan, {have[n][0]} x {have[n][1]} in the module'
                 for n in want if n in have and have[n] != want[n]]
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise PlanError("plan and module disagree: " + "; ".join(problems[:5]) + more)


def _check_result(description, result, device_type):
    # Guards against a TorchRec whose helpers build other shards than the ones relied on above.
    cuda = device_type == "cuda"  # the plan's placements name cuda devices
    for t in description["tables"]:
        ps = result[t["table"]]
        want = [(s["rank"], s["shard_offsets"], s["shard_sizes"], s["placement"] if cuda else None)
                for s in t["shards"]]
        if ps.sharding_spec is None:
            # data_parallel: TorchRec keeps only the ranks (every rank holds the whole table), so compare those.
            got = list(ps.ranks or [])
            if t["sharding_type"] == "data_parallel":
                want = t["ranks"]
        else:
            # row_wise() and table_row_wise() also list empty shards on trailing ranks (rows 9 over 4 ranks:
            # 3, 3, 3, 0); they hold nothing and the plan format has no empty shards, so they are left out.
            got = [(r, list(m.shard_offsets), list(m.shard_sizes), str(m.placement) if cuda else None)
                   for r, m in zip(ps.ranks, ps.sharding_spec.shards) if 0 not in list(m.shard_sizes)]
        if ps.sharding_type != t["sharding_type"] or got != want:
            what = "on ranks" if ps.sharding_spec is None else "shards"
            raise PlanError(f'table "{t["table"]}": TorchRec built {ps.sharding_type} {what} {got}, '
                            f"the plan has {t['sharding_type']} {what} {want}")


def _torchrec_summary(plan_dict, description):
    torch = importlib.import_module("torch")
    torchrec = importlib.import_module("torchrec")
    # The meta device allocates nothing, so even terabyte-sized plans build on a laptop.
    ebc = torchrec.EmbeddingBagCollection(
        tables=[torchrec.EmbeddingBagConfig(name=t["table"], num_embeddings=t["rows"], embedding_dim=t["dim"],
                                            feature_names=[t["table"]]) for t in description["tables"]],
        device=torch.device("meta"))
    result = load_sharding_plan(plan_dict, ebc)
    return {name: {"sharding_type": ps.sharding_type, "compute_kernel": ps.compute_kernel, "ranks": ps.ranks}
            for name, ps in result.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description="Map a shard-plan plan.json to TorchRec sharding helpers.")
    parser.add_argument("plan", help="plan file written by shard-plan ('-' for stdin)")
    parser.add_argument("--check-torchrec", action="store_true",
                        help="also build the plan with TorchRec's helpers and check it shard for shard")
    args = parser.parse_args(argv)
    try:
        plan = read_plan(args.plan)
        out = describe_plan(plan)
        if args.check_torchrec:
            try:
                importlib.import_module("torchrec.distributed.sharding_plan")
            except ImportError as e:
                print(f"plan_to_torchrec: --check-torchrec needs TorchRec installed ({e})", file=sys.stderr)
                return 3
            out["torchrec_plan"] = _torchrec_summary(plan, out)
    except PlanError as e:
        print(f"plan_to_torchrec: {e}", file=sys.stderr)
        return 2
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
