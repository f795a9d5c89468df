#!/usr/bin/env python3
"""The figures of data/hardware/cpu-2core-torchrec.json: least squares of a rank's measured forward plus
backward comm on the real stack (../torchrec-groups, 4 ranks) on the plan's total width, and on the rank's
own width beside it; then the profile's latency and host rate at W = 4, batch 2048, fp32.

  .venv/bin/python data/measured/cpu-2core/search-picks/fit_stack_profile.py     (from the repository root)
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stack-comm"))
import analyse  # noqa: E402  ../stack-comm/analyse.py: rank_rows reads the measurements

W, BATCH, BYTES = 4, 2048, 4


def main():
    rows = analyse.rank_rows()
    comm = np.array([r["comm"] for r in rows])
    total = np.array([r["total_width"] for r in rows])
    own = np.array([r["width"] for r in rows])
    x = np.column_stack([np.ones(len(comm)), total])
    (a, b), *_ = np.linalg.lstsq(x, comm, rcond=None)
    r2 = 1 - ((comm - x @ [a, b]) ** 2).sum() / ((comm - comm.mean()) ** 2).sum()
    both = np.linalg.lstsq(np.column_stack([np.ones(len(comm)), total, own]), comm, rcond=None)[0]
    print(f"{len(rows)} ranks: comm = {a:.2f} ms + {b:.5f} ms x total width (R^2 {r2:.2f}); "
          f"with the rank's own width beside it: {both[2]:+.4f} ms per column")
    # Per direction: (W-1) x latency + (W-1)/W x BATCH x BYTES x total width / host rate; both directions.
    latency_ms = a / (2 * (W - 1))
    host_bytes_per_ms = 2 * (W - 1) / W * BATCH * BYTES / b
    print(f"peer latency {latency_ms * 1000:.0f} us, host rate {host_bytes_per_ms / 1e6:.4f} GB/s")


if __name__ == "__main__":
    main()
