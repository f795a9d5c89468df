"""Times one plan's per-rank compute as `python -m shardplan.measure` did before --rounds (3 untimed and 10
timed steps per rank, one rank at a time), in ROUNDS rounds of turns in one job; prints each rank's
compute per round. The experiment behind --rounds (README.md):

  PYTHONPATH=python SHARDPLAN_BINARY=build/shard-plan python -m torch.distributed.run --standalone \
      --nproc_per_node=4 data/measured/cpu-2core/measure-rounds/rounds.py PLAN TABLES SEED [ROUNDS]
"""
import sys
import warnings

import torch
import torch.distributed as dist

from shardplan.measure.sharded import shard_plan_model
from shardplan.measure.timing import capture_lookups, time_lookups
from shardplan.measure.traces import generate_traces
from shardplan.plan_file import read_plan

warnings.filterwarnings("ignore")
plan_path, tables, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 8
cpu = torch.device("cpu")
torch.set_num_threads(1)
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
sharded = shard_plan_model(read_plan(plan_path), cpu, one_group=True)
features = generate_traces(tables, 2048, seed, None).local_features(sharded.feature_names, rank, world, cpu)
lookups = capture_lookups(sharded.model, features)
mine = []
for _ in range(rounds):
    for turn in range(world):
        dist.barrier()
        if turn == rank:
            mine.append(round(sum(fw + bw for fw, bw in time_lookups(lookups, 3, 10, cpu).values()), 2))
gathered = [None] * world
dist.all_gather_object(gathered, mine)
if rank == 0:
    print(gathered)
dist.barrier()
dist.destroy_process_group()
