"""Where the level between the calibration's TBE timing and shardplan.measure's lookup timing comes from.
Per rank, in turns (6 rounds of 3 warmup + 10 steps): the lookup module as shardplan.measure times it, its
TBEs called directly on the same inputs, and fresh TBEs built as the calibration builds them on the same inputs.
Prints per rank [median, fastest] ms of each. torchrun --standalone --nproc-per-node 4 lookup-probe.py PLAN TABLES 2048"""
import json, os, statistics, sys, time, warnings
warnings.filterwarnings("ignore")
import torch, torch.distributed as dist
from fbgemm_gpu.split_embedding_configs import EmbOptimType, SparseType
from fbgemm_gpu.split_table_batched_embeddings_ops_common import EmbeddingLocation, PoolingMode
from fbgemm_gpu.split_table_batched_embeddings_ops_training import ComputeDevice, SplitTableBatchedEmbeddingBagsCodegen
from shardplan.measure.sharded import shard_plan_model
from shardplan.measure.timing import capture_lookups, _Isolated
from shardplan.measure.traces import generate_traces
from shardplan.plan_file import read_plan

plan_path, tables_path, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.set_num_threads(1)
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
device = torch.device("cpu")
plan = read_plan(plan_path)
sharded = shard_plan_model(plan, device)
traces = generate_traces(tables_path, batch, 0, os.environ.get("SHARDPLAN_BINARY", "build/shard-plan"))
features = traces.local_features(sharded.feature_names, rank, world, device)
lookups = [lk for lk in capture_lookups(sharded.model, features) if lk.features is not None]

ALL = {}
def timed(fw_bw, key, steps=10, warmup=3):
    s = []
    for i in range(warmup + steps):
        t0 = time.perf_counter(); fw_bw(); t1 = time.perf_counter()
        if i >= warmup: s.append(1e3 * (t1 - t0))
    ALL.setdefault(key, []).extend(s)
    return statistics.median(s)

cases = {}
for li, lk in enumerate(lookups):
    iso = _Isolated(lk)
    cases[f"L{li}:module"] = lambda iso=iso: iso.backward(iso.forward())
    mod = iso.module
    groups = lk.features.split(mod._feature_splits)
    for gi, (emb, kjt) in enumerate(zip(mod._emb_modules, groups)):
        tbe = emb.emb_module
        idx, off = kjt.values().long(), kjt.offsets().long()
        def direct(tbe=tbe, idx=idx, off=off):
            out = tbe(indices=idx, offsets=off); out.backward(torch.full_like(out, 1e-3))
        cases[f"L{li}G{gi}:tbe-direct"] = direct
        fresh = SplitTableBatchedEmbeddingBagsCodegen(
            [(r, d, EmbeddingLocation.HOST, ComputeDevice.CPU) for (r, d, *_ ) in tbe.embedding_specs],
            feature_table_map=list(tbe.feature_table_map), optimizer=EmbOptimType.EXACT_SGD, learning_rate=0.01,
            eps=1e-8, weights_precision=tbe.weights_precision, output_dtype=SparseType.FP32,
            pooling_mode=PoolingMode.SUM, device=device)
        def fresh_run(f=fresh, idx=idx, off=off):
            out = f(idx, off); out.backward(torch.full_like(out, 1e-3))
        cases[f"L{li}G{gi}:tbe-fresh"] = fresh_run
        if rank == 0 and li == 0 and gi == 0:
            print("tbe attrs", tbe.optimizer, tbe.weights_precision, getattr(tbe, "stochastic_rounding", None),
                  getattr(tbe, "bounds_check_mode_int", None), getattr(tbe, "pooling_mode", None), file=sys.stderr)

rounds = {k: [] for k in cases}
for r in range(6):
    for turn in range(world):
        dist.barrier()
        if turn == rank:
            for k, f in cases.items():
                rounds[k].append(timed(f, k))
res = {k: (round(statistics.median(v),3), round(min(ALL[k]),3)) for k, v in rounds.items()}
res["_ntables"] = [len(e.emb_module.embedding_specs) for lk in lookups for e in _Isolated(lk).module._emb_modules]
res["_nidx"] = [int(lk.features.values().numel()) for lk in lookups]
g = [None] * world
dist.all_gather_object(g, res)
if rank == 0:
    print(json.dumps(g, indent=1))
dist.barrier(); dist.destroy_process_group()
