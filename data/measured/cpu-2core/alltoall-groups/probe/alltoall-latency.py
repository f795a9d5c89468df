"""How long a Gloo all-to-all of almost nothing takes on this host's ranks: one after a barrier, and five
back to back (as many as TorchRec runs for one sharding type). Rank 0 prints the medians.
  torchrun --standalone --nproc-per-node 4 alltoall-latency.py"""
import statistics
import time

import torch
import torch.distributed as dist


def median_ms(times, skip):
    return round(1e3 * statistics.median(times[skip:]), 3)


dist.init_process_group("gloo")
world = dist.get_world_size()
for label, floats_per_peer in (("16 B per peer", 4), ("64 KiB per peer", 4096 * 4)):
    send = torch.zeros(world * floats_per_peer)
    receive = torch.empty_like(send)
    one, five = [], []
    for _ in range(60):
        dist.barrier()
        start = time.perf_counter()
        dist.all_to_all_single(receive, send)
        one.append(time.perf_counter() - start)
    for _ in range(30):
        dist.barrier()
        start = time.perf_counter()
        for _ in range(5):
            dist.all_to_all_single(receive, send)
        five.append(time.perf_counter() - start)
    if dist.get_rank() == 0:
        print(f"{label}: one all-to-all {median_ms(one, 10)} ms, five back to back {median_ms(five, 5)} ms")
dist.destroy_process_group()
