"""Timing a TorchRec model sharded under a plan: each rank's own lookups, and whole training steps.

A sharded EmbeddingBagCollection runs, per sharding type, an input distribution, a lookup (FBGEMM's
table-batched embedding for the rank's shards: forward, and in backward the gradient and the fused
optimizer's update) and an output distribution. The lookups are timed one rank at a time on the inputs
the real input distribution gave them, so two cores can measure eight ranks' compute fairly; steps are
timed on all ranks at once, with a barrier before each.
"""

import dataclasses
import statistics
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torchrec.distributed.embeddingbag import ShardedEmbeddingBagCollection

from shardplan.versions import installed_versions, supported_torchrec_text


@dataclasses.dataclass
class Lookup:
    """One lookup module of this rank (one sharding type of one collection) and what it was fed."""
    owner: ShardedEmbeddingBagCollection
    index: int
    features: object = None       # the KeyedJaggedTensor the input distribution gave it
    output: torch.Tensor = None   # zeros shaped like its pooled output
    fw_ms: float = 0.0
    bw_ms: float = 0.0

    @property
    def module(self):
        return self.owner._lookups[self.index]

    @property
    def replica(self):
        # Data-parallel tables' lookup: DDP around a dense kernel; its gradients are all-reduced.
        return isinstance(self.module, DistributedDataParallel)


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# What the timing reads of TorchRec's private state: a ShardedEmbeddingBagCollection's lookup modules and
# output distributions, one of each per sharding type (read in TorchRec 1.9's embeddingbag.py).
_INTERNALS = ("_lookups", "_output_dists")


def check_torchrec_internals(owner):
    """Raises RuntimeError naming the TorchRec version when `owner` lacks what this module reads of it."""
    lookups, dists = (getattr(owner, name, None) for name in _INTERNALS)
    lists = (list, tuple, torch.nn.ModuleList)
    if isinstance(lookups, lists) and isinstance(dists, lists) and len(lookups) == len(dists):
        return
    have = {name: type(getattr(owner, name, None)).__name__ for name in _INTERNALS}
    raise RuntimeError(f"shardplan.measure times each sharding type through ShardedEmbeddingBagCollection's "
                       f"{' and '.join(_INTERNALS)} (two lists of modules of one length, as in TorchRec "
                       f"{supported_torchrec_text()}); torchrec {installed_versions(('torchrec',)).get('torchrec')} "
                       f"has {have}")


def capture_lookups(model, features):
    """This rank's lookups, each with the input and output shape of one real forward of `model`."""
    lookups = []
    handles = []
    owners = [m for m in model.modules() if isinstance(m, ShardedEmbeddingBagCollection)]
    if owners:
        check_torchrec_internals(owners[0])
    for owner in owners:
        for i, module in enumerate(owner._lookups):
            entry = Lookup(owner, i)

            def record(_module, args, output, entry=entry):
                entry.features = args[0]
                entry.output = torch.zeros_like(output)
            handles.append(module.register_forward_hook(record))
            lookups.append(entry)
    with torch.no_grad():
        model(features)
    for h in handles:
        h.remove()
    return lookups


class _Isolated:
    """A lookup to time on its own. A replica's lookup is called past its DDP wrapper: DDP's gradient
    all-reduce is armed only by its own forward, so the replica's backward (and the optimizer applied in
    backward to it) runs here without waiting for the other ranks."""

    def __init__(self, lookup):
        self.lookup = lookup
        self.module = lookup.module.module if lookup.replica else lookup.module
        self.grad = torch.full_like(lookup.output, 1e-3)

    def forward(self):
        return self.module(self.lookup.features)

    def backward(self, output):
        output.backward(self.grad)
        for p in self.module.parameters():
            p.grad = None  # a dense gradient no optimizer took would pile up step after step


def time_lookups(lookups, warmup, steps, device):
    """Each lookup's median forward and backward milliseconds over `steps` steps, timed alone, in turn:
    {id(lookup): (fw_ms, bw_ms)}."""
    runs = [_Isolated(lk) for lk in lookups if lk.features is not None]
    samples = {id(run.lookup): ([], []) for run in runs}
    for step in range(warmup + steps):
        for run in runs:
            synchronize(device)
            start = time.perf_counter()
            output = run.forward()
            synchronize(device)
            middle = time.perf_counter()
            run.backward(output)
            synchronize(device)
            end = time.perf_counter()
            if step >= warmup:
                samples[id(run.lookup)][0].append(1e3 * (middle - start))
                samples[id(run.lookup)][1].append(1e3 * (end - middle))
    return {key: (statistics.median(fw), statistics.median(bw)) for key, (fw, bw) in samples.items()}


def time_lookups_in_turns(lookups, rounds, warmup, steps, device):
    """Times this rank's lookups alone, one rank at a time, in `rounds` rounds of turns; sets every lookup's
    forward and backward milliseconds to its median over the rounds, and returns each round's compute.

    One round alone does not repeat: the same rank of the same plan measured 10.2 to 12.9 ms in three jobs
    back to back on a 2-core VM, a first round now and then 70% slow and single rounds 40% slow; the median
    of eight rounds repeated within 4% (data/measured/cpu-2core/measure-rounds)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    per_round = []
    for _ in range(rounds):
        for turn in range(world):  # the other ranks wait at the barrier
            dist.barrier()
            if turn == rank:
                per_round.append(time_lookups(lookups, warmup, steps, device))
    for lk in lookups:
        if lk.features is not None:
            lk.fw_ms = statistics.median(r[id(lk)][0] for r in per_round)
            lk.bw_ms = statistics.median(r[id(lk)][1] for r in per_round)
    return [sum(fw + bw for fw, bw in r.values()) for r in per_round]


_PENDING = []  # the emulated replica all-reduces of the step under way


def _finish_pending():
    while _PENDING:
        _PENDING.pop().wait()


class _Sleep(torch.autograd.Function):
    """Takes a lookup's measured time without computing: the step then holds only the collectives."""

    @staticmethod
    def forward(ctx, anchor, output, fw_seconds, bw_seconds, replica_elements):
        time.sleep(fw_seconds)
        ctx.bw_seconds, ctx.replica_elements = bw_seconds, replica_elements
        return output.clone()

    @staticmethod
    def backward(ctx, grad):
        time.sleep(ctx.bw_seconds)
        if ctx.replica_elements:
            # What DDP does with a replica's gradient: an all-reduce of every element, overlapping the rest
            # of the backward; time_steps waits for it once the backward returns.
            _PENDING.append(dist.all_reduce(torch.zeros(ctx.replica_elements, device=grad.device), async_op=True))
        return torch.zeros(1, device=grad.device), None, None, None, None


class SleepingLookup(torch.nn.Module):
    def __init__(self, lookup):
        super().__init__()
        self.output = lookup.output
        self.fw_seconds, self.bw_seconds = lookup.fw_ms / 1e3, lookup.bw_ms / 1e3
        self.replica_elements = sum(p.numel() for p in lookup.module.parameters()) if lookup.replica else 0
        self.anchor = torch.nn.Parameter(torch.zeros(1, device=self.output.device))

    def forward(self, features):
        return _Sleep.apply(self.anchor, self.output, self.fw_seconds, self.bw_seconds, self.replica_elements)


def replace_with_sleep(lookups):
    for lk in lookups:
        if lk.features is not None:
            lk.owner._lookups[lk.index] = SleepingLookup(lk)


def time_steps(model, features, warmup, steps, device):
    """This rank's median forward, backward and step milliseconds, all ranks starting each step together."""
    fw, bw = [], []
    for step in range(warmup + steps):
        dist.barrier()
        synchronize(device)
        start = time.perf_counter()
        loss = model(features).sum()
        synchronize(device)
        middle = time.perf_counter()
        loss.backward()
        _finish_pending()
        synchronize(device)
        end = time.perf_counter()
        if step >= warmup:
            fw.append(1e3 * (middle - start))
            bw.append(1e3 * (end - middle))
    if not torch.isfinite(loss.detach()):
        raise RuntimeError(f"the training loss is {loss.item()}")
    return statistics.median(fw), statistics.median(bw), statistics.median(a + b for a, b in zip(fw, bw))


def time_output_dists(lookups, warmup, steps, device):
    """This rank's median forward and backward milliseconds of the output distributions alone: each
    collection's pooled-embedding all-to-all (and its gradients' in backward) on its lookups' outputs,
    all ranks together, a barrier before each step."""
    inputs = [lk.output.detach().clone().requires_grad_() for lk in lookups]
    fw, bw = [], []
    for step in range(warmup + steps):
        dist.barrier()
        synchronize(device)
        start = time.perf_counter()
        results = [lk.owner._output_dists[lk.index](x, None).wait() for lk, x in zip(lookups, inputs)]
        synchronize(device)
        middle = time.perf_counter()
        sum(r.float().sum() for r in results).backward()
        synchronize(device)
        end = time.perf_counter()
        for x in inputs:
            x.grad = None
        if step >= warmup:
            fw.append(1e3 * (middle - start))
            bw.append(1e3 * (end - middle))
    return statistics.median(fw), statistics.median(bw)
