"""A shard set timed as TorchRec runs it: FBGEMM's table-batched embedding (TBE) training step.

TorchRec runs all of a rank's shards of one sharding type, data type and kernel through one
SplitTableBatchedEmbeddingBagsCodegen: the forward pools every piece's bags, and the backward computes the
gradient and applies the fused optimizer's update in the same pass. Here a set's pieces (whole tables,
column slices or row blocks, each with its own trace) become the tables of one such operator per data
type, and a step is its forward and backward. On a CPU the weights live in host memory (what TorchRec's
fused kernel does on a CPU); on a GPU in its HBM.
"""

import statistics
import time

import torch
from fbgemm_gpu.split_embedding_configs import EmbOptimType, SparseType
from fbgemm_gpu.split_table_batched_embeddings_ops_common import EmbeddingLocation, PoolingMode
from fbgemm_gpu.split_table_batched_embeddings_ops_training import (ComputeDevice,
                                                                    SplitTableBatchedEmbeddingBagsCodegen)

OPTIMIZERS = {"sgd": EmbOptimType.EXACT_SGD, "adagrad": EmbOptimType.EXACT_ADAGRAD,
              "rowwise_adagrad": EmbOptimType.EXACT_ROWWISE_ADAGRAD, "adam": EmbOptimType.ADAM}
PRECISIONS = {"fp32": SparseType.FP32, "fp16": SparseType.FP16}


def _synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class TbeGroup:
    """One operator over pieces of one data type, and its batch: TBE's table-major indices and offsets."""

    def __init__(self, pieces, dtype, optimizer, device):
        on_gpu = device.type == "cuda"
        specs = [(p.rows, p.dim, EmbeddingLocation.DEVICE if on_gpu else EmbeddingLocation.HOST,
                  ComputeDevice.CUDA if on_gpu else ComputeDevice.CPU) for p in pieces]
        self.op = SplitTableBatchedEmbeddingBagsCodegen(
            specs, optimizer=OPTIMIZERS[optimizer], learning_rate=0.01, eps=1e-8,
            weights_precision=PRECISIONS[dtype], output_dtype=SparseType.FP32, pooling_mode=PoolingMode.SUM,
            device=device)
        indices, offsets, base = [], [], 0
        for p in pieces:
            indices.append(torch.from_numpy(p.indices))
            offsets.append(torch.from_numpy(p.offsets[:-1]) + base)  # each table's bags, shifted past the last
            base += len(p.indices)
        self.indices = torch.cat(indices).to(device)
        self.offsets = torch.cat(offsets + [torch.tensor([base])]).to(device)
        self.grad = None

    def step(self):
        out = self.op(self.indices, self.offsets)
        if self.grad is None:
            self.grad = torch.full_like(out, 1e-3)
        out.backward(self.grad)


def time_set(pieces, optimizer="sgd", device=torch.device("cpu"), warmup=1, iterations=3):
    """Milliseconds of each timed step (forward, backward and update) of the set's operators, built anew."""
    groups = []
    for dtype in sorted({p.dtype for p in pieces}):
        groups.append(TbeGroup([p for p in pieces if p.dtype == dtype], dtype, optimizer, device))
    samples = []
    for step in range(warmup + iterations):
        _synchronize(device)
        start = time.perf_counter()
        for group in groups:
            group.step()
        _synchronize(device)
        if step >= warmup:
            samples.append(1e3 * (time.perf_counter() - start))
    return samples


def median_ms(samples):
    return statistics.median(samples)
