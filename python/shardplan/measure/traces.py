"""The index traces shard-plan's own measurements draw (`shard-plan gen-traces`), as TorchRec input.

A table's trace is one batch of the global batch size B; rank k of W feeds samples [k B/W, (k+1) B/W)
of every feature, so the sharded lookups see, after TorchRec's input distribution, the whole batch.
"""

import dataclasses
import json
import os
import tempfile

import numpy as np
import torch
from torchrec import KeyedJaggedTensor

from shardplan.binary import run_binary

TRACE_FORMAT = "shard-plan-traces/1"


class Traces:
    def __init__(self, batch_size, tables):
        self.batch_size = batch_size
        self.tables = tables  # {name: (indices, offsets)} as int64 numpy arrays

    def local_features(self, names, rank, world_size, device):
        """Rank `rank`'s KeyedJaggedTensor: its share of every table's batch, one feature per table."""
        if self.batch_size % world_size:
            raise ValueError(f"the batch of {self.batch_size} samples does not split over {world_size} ranks")
        per_rank = self.batch_size // world_size
        lo, hi = rank * per_rank, (rank + 1) * per_rank
        values, lengths = [], []
        for name in names:
            indices, offsets = self.tables[name]
            values.append(indices[offsets[lo]:offsets[hi]])
            lengths.append(np.diff(offsets[lo:hi + 1]))
        return KeyedJaggedTensor.from_lengths_sync(
            keys=list(names), values=torch.from_numpy(np.concatenate(values)).to(device),
            lengths=torch.from_numpy(np.concatenate(lengths)).to(device))


@dataclasses.dataclass
class Piece:
    """A table, column slice or row block with one batch of lookups into it."""
    name: str
    rows: int
    dim: int
    dtype: str
    indices: np.ndarray
    offsets: np.ndarray


def read_pieces(path):
    """Every table of a trace file, in file order, with its trace."""
    with open(path, "rb") as f:
        header = json.loads(f.readline())
        body = f.read()
    if header.get("format") != TRACE_FORMAT or header.get("byte_order") != "little":
        raise ValueError(f"{path}: not a {TRACE_FORMAT} file")
    batch = header["batch_size"]
    pieces = []
    for t in header["tables"]:
        indices = np.frombuffer(body, dtype="<i8", count=t["lookups"], offset=t["indices_at"])
        offsets = np.frombuffer(body, dtype="<i8", count=batch + 1, offset=t["offsets_at"])
        pieces.append(Piece(t["name"], t["rows"], t.get("dim", 0), t.get("dtype", "fp32"), indices, offsets))
    return batch, pieces


def read_traces(path):
    batch, pieces = read_pieces(path)
    return Traces(batch, {p.name: (p.indices, p.offsets) for p in pieces})


def generate_traces(tables_path, batch_size, seed, binary=None):
    """The traces of a tables file, drawn by the shard-plan binary (the same ones for every rank)."""
    with tempfile.TemporaryDirectory(prefix="shardplan-traces-") as work:
        path = os.path.join(work, "traces.bin")
        run_binary(["gen-traces", "--tables", tables_path, "--batch-size", batch_size, "--seed", seed, "-o", path,
                    "--quiet"], binary=binary)
        return read_traces(path)
