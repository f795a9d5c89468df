"""python -m shardplan.measure --plan PLAN --tables TABLES [--mode step|per-rank] [-o OUT.json]

Trains the plan's tables on the real stack, TorchRec + FBGEMM, and writes per-rank times as JSON in the
layout of `shard-plan evaluate --measure --json`. Run it under torchrun with one process per rank of the
plan (env:// rendezvous; Gloo on CPUs, NCCL on GPUs), or without torchrun to have it start the plan's
ranks on this host itself:

  torchrun --nproc_per_node 4 -m shardplan.measure --plan plan.json --tables tables.json --mode per-rank
  # GPUs, 2 hosts of 8 (run on each host; NCCL): whole steps, each rank on its own GPU
  torchrun --nnodes 2 --nproc_per_node 8 --rdzv-backend c10d --rdzv-endpoint HOST0:29500 \
      -m shardplan.measure --plan plan.json --tables tables.json --mode step --device cuda -o steps.json

Every rank builds the plan's EmbeddingBagCollections, shards them with DistributedModelParallel under the
plan (explicit kernels: fused, dense for data-parallel; the plan's optimizer applied in backward) and feeds
its share of each table's batch (the traces of `shard-plan gen-traces`: pooling factor and reuse
histogram). Then, one rank at a time, each rank's lookups are timed on the inputs TorchRec's input
distribution gave them: the rank's compute (forward, and backward with the fused update), in --rounds
rounds of turns, the median over rounds reported. Then steps:
  step      whole training steps on all ranks at once: the mode for GPUs (each rank has its own) and for
            CPU ranks that each have a core
  per-rank  the same steps with each lookup replaced by a sleep of its measured time: the step holds
            TorchRec's real input and output distributions and data-parallel all-reduces, and the
            compute as measured alone, so four or eight CPU ranks can share two cores. It is a design for
            CPU ranks sharing cores; on GPUs it only hides the lookups' overlap with the collectives.
The global batch is --batch-size, else the one the plan's cost model was measured at (the plan file's
cost_model_hardware.compute.batch_size), else 2048: the plan was priced at that batch.
A rank's comm figures are its step's forward and backward minus its compute (waiting included); the
output all-to-all is also timed alone, all ranks together (measured_output_a2a_fw_ms / _bw_ms).

A plan with tables in host memory (fused_uvm_caching, fused_uvm) is refused on a CPU (exit 2) before any
rank starts: off cuda TorchRec keeps every table in host memory and FBGEMM builds no cache, so the run
would time the fused kernel, not the plan. On GPUs the bridge builds them with the plan's kernel and cache.
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import warnings

from shardplan.files import write_text_atomically
from shardplan.versions import installed_versions
from shardplan.worker_exit import exit_worker

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
MODES = ("per-rank", "step")
DEFAULT_BATCH = 2048  # the bundled CPU models' batch
STACK_PACKAGES = ("torch", "torchrec", "fbgemm-gpu", "fbgemm-gpu-cpu")


def _positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _parser():
    p = argparse.ArgumentParser(prog="python -m shardplan.measure", description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plan", required=True, help="plan file (shard-plan/1)")
    p.add_argument("--tables", required=True, help="the tables file the plan was made from")
    p.add_argument("--mode", choices=MODES, default="per-rank", help="how steps are timed (default per-rank)")
    p.add_argument("--batch-size", type=_positive, default=None,
                   help="global batch: samples per step over all ranks (default: the batch the plan's cost "
                        f"model was measured at, else {DEFAULT_BATCH})")
    p.add_argument("--seed", type=int, default=0, help="seed of the traces")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    p.add_argument("--steps", type=_positive, default=10, help="timed steps; medians are reported")
    p.add_argument("--rounds", type=_positive, default=8,
                   help="rounds of turns in which each rank's lookups are timed (steps each); the median "
                        "over rounds is reported (default 8: one round alone varies by 10-40%%)")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per rank on a CPU")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="auto: CUDA when available (NCCL), else the CPU (Gloo)")
    p.add_argument("--separate-groups", action="store_true",
                   help="build table-wise tables as table-wise beside column-wise ones (TorchRec runs two "
                        "groups of all-to-alls); by default they are built as single-shard column-wise tables")
    p.add_argument("-o", "--output", default="-", help="JSON file to write ('-': stdout)")
    p.add_argument("--binary", default=None, help="the shard-plan executable (for the traces)")
    return p


def _relaunch(args, argv):
    """Not under torchrun: start the plan's ranks on this host with torchrun's own module."""
    from shardplan.measure.checks import check_kernels, uvm_tables
    from shardplan.plan_file import describe_plan, read_plan
    described = describe_plan(read_plan(args.plan))  # PlanError names what is wrong
    if uvm_tables(described):  # refused before any rank starts (torch is imported only to ask for CUDA here)
        check_kernels(described, _device(args.device).type if args.device == "auto" else args.device)
    world = described["world_size"]
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={world}",
               "-m", "shardplan.measure"] + list(argv)
    return subprocess.run(command, check=False).returncode


def _device(choice):
    import torch
    if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()):
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device("cpu")


def _describe_device(device):
    import torch
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    model = platform.processor() or "cpu"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"cpu ({model}, {os.cpu_count()} cores)"


def plan_batch_size(plan):
    """The batch the plan's cost model priced it at, as the plan file records it; else DEFAULT_BATCH."""
    hardware = plan.get("cost_model_hardware") or {}
    batch = (hardware.get("compute") or {}).get("batch_size")
    return batch if isinstance(batch, int) and batch > 0 else DEFAULT_BATCH


def run(args):
    import torch
    import torch.distributed as dist
    from shardplan.measure.report import measurement_document
    from shardplan.measure.sharded import shard_plan_model
    from shardplan.measure.checks import check_plan
    from shardplan.measure.timing import (capture_lookups, replace_with_sleep, time_lookups_in_turns,
                                          time_output_dists, time_steps)
    from shardplan.measure.traces import generate_traces
    from shardplan.plan_file import read_plan

    device = _device(args.device)
    torch.set_num_threads(args.threads)
    plan = read_plan(args.plan)
    args.batch_size = args.batch_size or plan_batch_size(plan)
    check_plan(plan, args.tables, device)
    if device.type == "cuda":
        # Every rank its own GPU: NCCL and the collectives' object tensors use the current device.
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                            device_id=device if device.type == "cuda" else None)
    rank, world = dist.get_rank(), dist.get_world_size()
    if plan.get("num_devices") != world:
        raise ValueError(f"the plan is for {plan.get('num_devices')} ranks (num_devices), this job has {world}")
    sharded = shard_plan_model(plan, device, one_group=not args.separate_groups)
    traces = generate_traces(args.tables, args.batch_size, args.seed, args.binary)
    features = traces.local_features(sharded.feature_names, rank, world, device)
    lookups = capture_lookups(sharded.model, features)
    compute_rounds = time_lookups_in_turns(lookups, args.rounds, args.warmup, args.steps, device)
    a2a_fw, a2a_bw = time_output_dists(lookups, args.warmup, args.steps, device)
    if args.mode == "per-rank":
        replace_with_sleep(lookups)
    fw, bw, total = time_steps(sharded.model, features, args.warmup, args.steps, device)
    mine = {"lookup_fw_ms": sum(lk.fw_ms for lk in lookups), "lookup_bw_ms": sum(lk.bw_ms for lk in lookups),
            "output_a2a_fw_ms": a2a_fw, "output_a2a_bw_ms": a2a_bw, "step_fw_ms": fw, "step_bw_ms": bw,
            "step_ms": total, "compute_rounds_ms": compute_rounds}
    gathered = [None] * world
    dist.all_gather_object(gathered, mine)
    dist.barrier()  # leave together: no rank tears down while another still exchanges
    dist.destroy_process_group()
    if rank != 0:
        return None
    cores = os.cpu_count() or 1
    if args.mode == "step" and device.type == "cpu" and world > cores:
        print(f"shardplan.measure: {world} ranks share {cores} cores: whole steps measure the sharing too "
              "(--mode per-rank times each rank's compute alone)", file=sys.stderr)
    setup = {"stack": "torchrec", "mode": args.mode, "device": _describe_device(device), "world_size": world,
             "ranks_per_core": world / cores if device.type == "cpu" else None,
             "batch_size": args.batch_size, "seed": args.seed, "warmup": args.warmup, "steps": args.steps,
             "rounds": args.rounds,
             "threads": args.threads, "sharding_groups": "as planned" if args.separate_groups else "one",
             "versions": installed_versions(STACK_PACKAGES),
             "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")}
    return measurement_document(plan, gathered, setup)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    if "RANK" not in os.environ:
        try:
            return _relaunch(args, argv)
        except ValueError as e:  # a PlanError, or a plan this device cannot run
            print(f"shardplan.measure: {e}", file=sys.stderr)
            return EXIT_USAGE
    warnings.filterwarnings("ignore")
    try:
        doc = run(args)
    except (ValueError, OSError, RuntimeError, KeyError) as e:
        print(f"shardplan.measure (rank {os.environ.get('RANK')}): {e}", file=sys.stderr)
        return EXIT_USAGE if isinstance(e, ValueError) else EXIT_FAILED
    if doc is not None:
        text = json.dumps(doc, indent=2) + "\n"
        if args.output == "-":
            sys.stdout.write(text)
        else:
            write_text_atomically(args.output, text)
    return EXIT_OK


if __name__ == "__main__":
    status = main()
    if "RANK" in os.environ:
        exit_worker(status)  # a torchrun worker: shardplan/worker_exit.py says why
    sys.exit(status)
