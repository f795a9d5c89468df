"""4 Gloo ranks take turns timing the same TBE set; the others wait at dist.barrier() (as shardplan.measure's
turns) or sleep-poll a store key. Does the waiting slow the timed rank?"""
import json, os, statistics as st, subprocess, sys, time, tempfile
sys.path.insert(0, 'python')
import torch, torch.distributed as dist
from shardplan.measure.traces import read_pieces
from shardplan.measure.tbe import TbeGroup

dist.init_process_group('gloo')
rank, world = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(1)
D = 'data/measured/cpu-2core/alltoall-groups/pm4'
plan = json.load(open(f'{D}/cluster-10.json'))
tables = {x['name']: x for x in json.load(open(f'{D}/tables-10.json'))['tables']}
mine = [tables[t['name']] for t in plan['tables'] if t['shards'][0]['rank'] == 0]
d = tempfile.mkdtemp()
json.dump({'tables': mine}, open(f'{d}/t.json', 'w'))
subprocess.run(['build/shard-plan', 'gen-traces', '--tables', f'{d}/t.json', '--batch-size', '2048', '--seed', '10',
                '-o', f'{d}/tr.bin', '--quiet'], check=True)
_, pieces = read_pieces(f'{d}/tr.bin')
group = TbeGroup(pieces, 'fp32', 'sgd', torch.device('cpu'))
store = dist.distributed_c10d._get_default_store()

def time_it():
    group.step()
    s = []
    for _ in range(5):
        t0 = time.perf_counter(); group.step(); s.append(1e3 * (time.perf_counter() - t0))
    return st.median(s)

res = {'barrier': [], 'poll': []}
for rnd in range(4):
    for mode in (['barrier', 'poll'] if rnd % 2 == 0 else ['poll', 'barrier']):
        for turn in range(world):
            if mode == 'barrier':
                dist.barrier()
                if turn == rank: res[mode].append(time_it())
            else:
                key = f'{rnd}-{turn}'
                if turn == rank:
                    res[mode].append(time_it()); store.set(key, '1')
                else:
                    while not store.check([key]): time.sleep(0.005)
        dist.barrier()
print(rank, {k: [round(x, 2) for x in v] for k, v in res.items()},
      'barrier/poll %.3f' % (st.median(res['barrier']) / st.median(res['poll'])), flush=True)
dist.destroy_process_group()
