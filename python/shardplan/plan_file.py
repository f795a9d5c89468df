"""Reading a shard-plan plan file (`shard-plan/1`) and describing it in TorchRec's terms.

Standard library only: importing this module never imports torch or TorchRec. `describe_plan` checks a
plan against the geometry TorchRec's sharding helpers can express and returns a neutral, JSON-ready
description per table; `shardplan.torchrec.bridge` turns that description into TorchRec objects.

TorchRec facts relied on (torchrec/distributed/sharding_plan.py, read at v1.9.2 and earlier versions):
  * placement(device_type, rank, local_size) -> "rank:R/cuda:R%local_size" (the plan's "placement").
  * table_wise(rank=R): one shard, offsets [0, 0], sizes [rows, dim].
  * column_wise(ranks=[...]): dim / len(ranks) columns per shard, shards in column order zipped with ranks;
    ranks may repeat. It keeps dim / len(ranks) only when that is a multiple of 4 (_find_base_dim), so
    widths must be multiples of 4 (FBGEMM needs that anyway). `size_per_rank` is NOT used: it puts shard
    i on rank i and ignores `ranks`.
  * row_wise(): ceil(rows / world_size) rows on each of ranks 0, 1, ... in order (trailing ranks may get
    none). row_wise(sizes_placement=...) is for inference (it forces the quantized kernel).
  * table_row_wise(host_index=H): row_wise's split over the local_size ranks of host H: ceil(rows /
    local_size) rows on each of ranks H*local_size, H*local_size + 1, ... in order; its sharding asserts
    world_size % local_size == 0 ("group granularity must be node").
  * data_parallel(): ranks = [0, ..., world_size - 1] and sharding_spec None: a replica per rank.

Kernels: "fused" (FBGEMM's table-batched embedding in HBM, optimizer in backward) for every sharded type and
"dense" for data_parallel, as shard-plan plans them. A sharded table may also name a UVM kernel:
"fused_uvm_caching" (weights in host memory, an LRU cache in HBM; then "cache_params" {"algorithm": "LRU",
"load_factor": x}, x in (0, 1), is required) or "fused_uvm" (host memory, no cache). TorchRec's
EmbeddingBagCollectionSharder offers both only on cuda and never for data_parallel
(torchrec/distributed/embedding_types.py, compute_kernels), and its validate_compute_kernels (1.7+) needs a
caching kernel's load factor strictly inside (0, 1).
"""

import json
import math
import sys

PLAN_FORMAT = "shard-plan/1"
SHARDING_TYPES = ("table_wise", "column_wise", "row_wise", "table_row_wise", "data_parallel")
# The kernels a sharded (not data-parallel) table may name: FBGEMM's fused kernel in HBM, or its weights in
# host memory (UVM) with an HBM cache (fused_uvm_caching) or without one (fused_uvm).
CACHING_KERNELS = ("fused_uvm_caching",)
UVM_KERNELS = ("fused_uvm_caching", "fused_uvm")
SHARDED_KERNELS = ("fused",) + UVM_KERNELS
# FBGEMM also has LFU (CacheAlgorithm.LFU); shard-plan's cache model is LRU's, so it plans LRU only.
CACHE_ALGORITHMS = ("LRU",)


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
    "table", "rows", "dim", "sharding_type", "compute_kernel", "cache_params" ({"algorithm": "LRU",
    "load_factor": x} for a fused_uvm_caching table, else None), "ranks" and "shards" in TorchRec's shard
    order (column order, row order), "torchrec" (the helper call), plus "widths" (column_wise),
    "rows_per_rank" (row_wise, table_row_wise) and "host_index" (table_row_wise). A plan made with host
    memory adds "ddr_per_host_bytes" and "host_link_GBps" as the plan gives them.
    """
    if not isinstance(plan, dict):
        raise PlanError("plan: must be a JSON object")
    fmt = plan.get("format")
    if fmt != PLAN_FORMAT:
        raise PlanError(f"plan: format {json.dumps(fmt)} is not {json.dumps(PLAN_FORMAT)}")
    world = _int(plan.get("num_devices"), "plan: num_devices", 1)
    # Same default as shard-plan's reader: 8 GPUs per host.
    local = _int(plan.get("devices_per_host", 8), "plan: devices_per_host", 1)
    host = _host_memory(plan)
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
    return dict({"format": PLAN_FORMAT, "world_size": world, "local_size": local, "tables": described}, **host)


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _host_memory(plan):
    """The top-level fields of a plan made with host memory (only there): checked, and kept as given."""
    out = {}
    if "ddr_per_host_bytes" in plan:
        out["ddr_per_host_bytes"] = _int(plan["ddr_per_host_bytes"], "plan: ddr_per_host_bytes", 0)
    if "host_link_GBps" in plan:
        link = plan["host_link_GBps"]
        if not _number(link) or link <= 0:
            raise PlanError(f"plan: host_link_GBps must be a number > 0, got {json.dumps(link)}")
        out["host_link_GBps"] = link
    return out


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
    kernel = _kernel(entry.get("compute_kernel"), kind, label)
    out = {"table": name, "rows": rows, "dim": dim, "sharding_type": kind, "compute_kernel": kernel,
           "cache_params": _cache_params(entry, kernel, label)}

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
        ordered = _same_width_per_rank(_merge_runs(_contiguous(label, shards, 1, dim, "column")))
        ranks = [s["rank"] for s in ordered]
        widths = [s["shard_sizes"][1] for s in ordered]
        # Equal widths are exactly what column_wise(ranks=...) builds; uneven ones need explicit shards.
        call = (f"column_wise(ranks={ranks})" if len(set(widths)) == 1
                else f"column_wise with explicit shards (uneven widths {widths})")
        out.update(ranks=ranks, widths=widths, shards=ordered, torchrec=call)
        if len(ordered) != len(shards):
            out["shards_as_torchrec_runs_them"] = len(ordered)  # merged side by side, or cut to one width
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


def _merge_runs(ordered):
    """Column shards side by side on one rank become one: the rank holds the same columns either way, and
    TorchRec views a rank's shards of a table at a single width."""
    merged = []
    for s in ordered:
        last = merged[-1] if merged else None
        if last is not None and last["rank"] == s["rank"]:
            last["shard_sizes"] = [last["shard_sizes"][0], last["shard_sizes"][1] + s["shard_sizes"][1]]
        else:
            merged.append(dict(s, shard_offsets=list(s["shard_offsets"]), shard_sizes=list(s["shard_sizes"])))
    return merged


def _same_width_per_rank(ordered):
    """A rank's column shards of one table at one width, as TorchRec (1.9) needs (it reshapes them to the
    first one's width): where a rank holds shards of several widths apart, they are cut into pieces of
    their greatest common width (a multiple of 4). The rank holds the same columns either way."""
    widths = {}
    for s in ordered:
        widths.setdefault(s["rank"], []).append(s["shard_sizes"][1])
    piece = {rank: math.gcd(*w) for rank, w in widths.items() if len(set(w)) > 1}
    if not piece:
        return ordered
    out = []
    for s in ordered:
        step = piece.get(s["rank"], s["shard_sizes"][1])
        for col in range(s["shard_offsets"][1], s["shard_offsets"][1] + s["shard_sizes"][1], step):
            out.append(dict(s, shard_offsets=[s["shard_offsets"][0], col], shard_sizes=[s["shard_sizes"][0], step]))
    return out


def expected_kernel(kind):
    """The compute kernel shard-plan plans for a sharding type unless a table says otherwise (and what a
    plan without "compute_kernel" means): TorchRec's only one for data-parallel replicas ("dense"), FBGEMM's
    fused table-batched embedding (optimizer in backward) for the others."""
    return "dense" if kind == "data_parallel" else "fused"


def allowed_kernels(kind):
    """The kernels a plan may name for a sharding type: "dense" for data_parallel (TorchRec offers no other
    for replicas), else "fused" or one of the UVM kernels (host memory, with or without an HBM cache)."""
    return ("dense",) if kind == "data_parallel" else SHARDED_KERNELS


def _kernel(kernel, kind, label):
    # Named explicitly so that a TorchRec which would pick another kernel (dense for a sharded table,
    # which its own planner refuses) is caught instead of silently training another way.
    if kernel is None:
        return expected_kernel(kind)
    allowed = allowed_kernels(kind)
    if kernel not in allowed:
        if kind == "data_parallel" and kernel in UVM_KERNELS:
            raise PlanError(f"{label}: compute_kernel {json.dumps(kernel)} is not \"dense\": TorchRec offers no "
                            "UVM or caching kernel for data_parallel replicas")
        want = " or ".join(json.dumps(k) for k in allowed)
        raise PlanError(f"{label}: compute_kernel {json.dumps(kernel)} is not {want}, the kernels shard-plan "
                        f"plans for {kind} tables")
    return kernel


def _cache_params(entry, kernel, label):
    """A fused_uvm_caching table's cache_params as {"algorithm", "load_factor"}; None for other kernels,
    which must not have any."""
    given = entry.get("cache_params")
    if kernel not in CACHING_KERNELS:
        if "cache_params" in entry:
            raise PlanError(f"{label}: cache_params {json.dumps(given)} with compute_kernel {json.dumps(kernel)}: "
                            f"only {' and '.join(json.dumps(k) for k in CACHING_KERNELS)} has a cache")
        return None
    if given is None:
        raise PlanError(f'{label}: compute_kernel {json.dumps(kernel)} needs cache_params {{"algorithm": "LRU", '
                        '"load_factor": x}, x in (0, 1)')
    if not isinstance(given, dict):
        raise PlanError(f"{label}: cache_params must be an object, got {json.dumps(given)}")
    unknown = sorted(set(given) - {"algorithm", "load_factor"})
    if unknown:
        raise PlanError(f"{label}: cache_params has fields {unknown} the bridge does not carry "
                        "(it knows algorithm and load_factor)")
    algorithm = given.get("algorithm")
    if algorithm not in CACHE_ALGORITHMS:
        raise PlanError(f"{label}: cache_params.algorithm {json.dumps(algorithm)} is not \"LRU\": FBGEMM also "
                        "has LFU, which shard-plan does not plan (its cache model is LRU's)")
    factor = given.get("load_factor")
    if not _number(factor) or not 0 < factor < 1:
        raise PlanError(f"{label}: cache_params.load_factor {json.dumps(factor)} must be a number in (0, 1), "
                        "0 and 1 excluded (TorchRec's validate_compute_kernels requires it of a caching kernel)")
    return {"algorithm": algorithm, "load_factor": factor}


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
