"""Same sitting: each rank's set of a plan timed as calibrate times it (FBGEMM TBE built anew, 1 warmup, median
of 5 steps) and by shardplan.measure (TorchRec, per-rank), alternating."""
import json, os, subprocess, sys, statistics as st, tempfile
sys.path.insert(0, 'python')
from shardplan.measure.traces import read_pieces
from shardplan.measure.tbe import time_set
D = 'data/measured/cpu-2core/alltoall-groups/pm4'
out = sys.argv[1]

def rank_sets(t):
    plan = json.load(open(f'{D}/cluster-{t}.json'))
    tables = {x['name']: x for x in json.load(open(f'{D}/tables-{t}.json'))['tables']}
    sets = {}
    for tb in plan['tables']:
        for s in tb['shards']:
            assert tb['sharding_type'] == 'table_wise'
            sets.setdefault(s['rank'], []).append(tables[tb['name']])
    return sets

def worker_times(t, seed):
    res = {}
    for rank, tabs in sorted(rank_sets(t).items()):
        with tempfile.TemporaryDirectory() as d:
            json.dump({'tables': tabs}, open(f'{d}/t.json', 'w'))
            subprocess.run(['build/shard-plan', 'gen-traces', '--tables', f'{d}/t.json', '--batch-size', '2048',
                            '--seed', str(seed), '-o', f'{d}/tr.bin', '--quiet'], check=True)
            _, pieces = read_pieces(f'{d}/tr.bin')
            meds = [st.median(time_set(pieces, warmup=1, iterations=5)) for _ in range(3)]
            res[rank] = meds
    return res

def measure_times(t, seed):
    o = f'{out}/meas-{t}-{seed}.json'
    subprocess.run([sys.executable, '-m', 'shardplan.measure', '--plan', f'{D}/cluster-{t}.json', '--tables',
                    f'{D}/tables-{t}.json', '--mode', 'per-rank', '--seed', str(seed), '--batch-size', '2048', '-o', o],
                   check=True, capture_output=True)
    return {d['rank']: d['measured_compute_ms'] for d in json.load(open(o))['devices']}

rows = []
for rep in range(2):
    for t in [9, 10, 1, 4]:
        first_worker = (rep + t) % 2 == 0
        w = m = None
        for which in ([0, 1] if first_worker else [1, 0]):
            if which == 0: w = worker_times(t, t)
            else: m = measure_times(t, t)
        for r in sorted(w):
            rows.append({'task': t, 'rep': rep, 'rank': r, 'worker_medians': w[r], 'measure': m[r]})
            print(t, rep, r, ' '.join('%.2f' % x for x in w[r]), 'measure %.2f' % m[r], 'ratio %.3f' % (m[r] / st.median(w[r])), flush=True)
json.dump(rows, open(f'{out}/ab.json', 'w'), indent=1)
import math
l = [math.log(r['measure'] / st.median(r['worker_medians'])) for r in rows]
print('mean ln(measure/worker) %+.3f sd %.3f n %d' % (st.mean(l), st.stdev(l), len(l)))
