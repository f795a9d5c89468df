"""One process, one set (task 10 rank 0): calibrate's timing (TBE built anew, zero weights, 1 warmup + median of 5)
against a persistent TBE, with zero and with uniform weights (as TorchRec initialises), alternating."""
import json, statistics as st, subprocess, sys, time, tempfile
sys.path.insert(0, 'python')
import torch
from shardplan.measure.traces import read_pieces
from shardplan.measure.tbe import TbeGroup, time_set
torch.set_num_threads(1)
t, r = int(sys.argv[1]), int(sys.argv[2])
D = 'data/measured/cpu-2core/alltoall-groups/pm4'
plan = json.load(open(f'{D}/cluster-{t}.json'))
tables = {x['name']: x for x in json.load(open(f'{D}/tables-{t}.json'))['tables']}
mine = [tables[x['name']] for x in plan['tables'] if x['shards'][0]['rank'] == r]
d = tempfile.mkdtemp()
json.dump({'tables': mine}, open(f'{d}/t.json', 'w'))
subprocess.run(['build/shard-plan', 'gen-traces', '--tables', f'{d}/t.json', '--batch-size', '2048', '--seed', str(t),
                '-o', f'{d}/tr.bin', '--quiet'], check=True)
_, pieces = read_pieces(f'{d}/tr.bin')
zero = TbeGroup(pieces, 'fp32', 'sgd', torch.device('cpu'))
uni = TbeGroup(pieces, 'fp32', 'sgd', torch.device('cpu'))
uni.op.init_embedding_weights_uniform(-0.01, 0.01)
def persistent(g):
    g.step(); s = []
    for _ in range(5):
        t0 = time.perf_counter(); g.step(); s.append(1e3 * (time.perf_counter() - t0))
    return st.median(s)
res = {'fresh': [], 'zero': [], 'uniform': []}
for i in range(8):
    res['fresh'].append(st.median(time_set(pieces, warmup=1, iterations=5)))
    res['zero'].append(persistent(zero))
    res['uniform'].append(persistent(uni))
m = {k: st.median(v) for k, v in res.items()}
print(t, r, {k: round(v, 2) for k, v in m.items()}, 'zero/fresh %.3f uniform/fresh %.3f' % (m['zero'] / m['fresh'], m['uniform'] / m['fresh']), flush=True)
