#!/usr/bin/env bash
# #40's targets, decided before seeing any figure: neuroshard against TorchRec 1.9.2's own planner,
# predicted (bench) and measured on the real stack (TorchRec + FBGEMM TBE on this CPU, Gloo).
#   fresh 4-GPU tasks (seed 2050): per-rank mode (each rank's lookups timed alone, steps with the real
#                                  input/output distributions); 20 fresh 2-GPU tasks (seed 2051): whole
#                                  DMP steps on 2 ranks. Both planners restricted to what TorchRec runs
#                                  on a CPU (table-, column-wise, data-parallel); TorchRec plans for "cpu".
set -euo pipefail
cd "$(dirname "$0")/../../../.."
B=build/shard-plan
D=${1:-/tmp/m40}; mkdir -p "$D"
types=table_wise,column_wise,data_parallel
date -u > $D/started
lscpu | grep -E 'Model name|^CPU\(s\)|Vendor' > $D/cpu.txt
[ -s $D/fresh-4gpu.json ] || $B gen-tasks --pool data/pool.json --protocol paper-4gpu --seed 2050 --num-tasks 20 -o $D/fresh-4gpu.json > /dev/null
[ -s $D/fresh-2gpu.json ] || $B gen-tasks --pool data/pool.json --protocol paper-4gpu --seed 2051 --num-tasks 20 --gpus 2 -o $D/fresh-2gpu.json > /dev/null
python3 - "$D" <<'PY'
import json, sys
d = json.load(open("data/tasks/paper-4gpu.json"))
d["tasks"], d["name"] = d["tasks"][:20], "paper-4gpu-first20"
json.dump(d, open(sys.argv[1] + "/paper-4gpu-first20.json", "w"))
PY
# Predicted cost and planning seconds, side by side (each task planned by each planner in one run).
# Steps whose output exists are not run again, and paired-measure --resume keeps what a stopped run timed.
for set in paper-4gpu-first20 fresh-4gpu; do
  [ -s $D/bench-$set.json ] || { $B bench --tasks $D/$set.json --algos neuroshard,torchrec,torchrec_planner --json --per-task -q \
    > $D/bench-$set.json.tmp && mv $D/bench-$set.json.tmp $D/bench-$set.json; }
done
# 856 tables on 128 GPUs: TorchRec's proposers ran past 15 minutes unbounded (tried once); a time
# limit of 120 s bounds both planners (TorchRec's timeout_seconds is half of it: it checks it only
# between proposals, and returned 50 s past a 60 s one).
[ -s $D/bench-all-128gpu.json ] || { $B bench --tasks data/tasks/all-128gpu.json --algos neuroshard,torchrec_planner --time-limit 120 \
  --json --per-task -q > $D/bench-all-128gpu.json.tmp && mv $D/bench-all-128gpu.json.tmp $D/bench-all-128gpu.json; }
# TorchRec's planner's own seconds (bench's include starting Python and importing TorchRec per task).
[ -s $D/torchrec-planner-seconds.json ] || PYTHONPATH=python .venv/bin/python - "$D" <<'PY' > $D/torchrec-planner-seconds.json.tmp
import argparse, json, sys, time
from shardplan.torchrec.baseline import plan_with_torchrec
from torchrec.distributed.planner.types import PlannerError
out = {}
for name in ("paper-4gpu-first20", "fresh-4gpu"):
    d = json.load(open(f"{sys.argv[1]}/{name}.json"))
    args = argparse.Namespace(gpus=d["num_devices"], gpus_per_host=8, mem_per_gpu=d["memory_per_device_bytes"],
                              optimizer="sgd", compute_device="cuda", sharding_types="", batch_size=512, min_partition=0,
                              timeout_seconds=0)
    seconds = []
    for task in d["tasks"]:
        tables = [(t["name"], t["rows"], t["dim"], t.get("dtype", "fp32"), t.get("pooling_factor", 1.0))
                  for t in task["tables"]]
        start = time.perf_counter()
        try:
            plan_with_torchrec(tables, args)
            seconds.append(time.perf_counter() - start)
        except PlannerError:  # no plan that fits after its 15% reservation
            seconds.append(None)
    out[name] = seconds
json.dump(out, sys.stdout, indent=1)
PY
[ -s $D/torchrec-planner-seconds.json ] || mv $D/torchrec-planner-seconds.json.tmp $D/torchrec-planner-seconds.json
# The real stack.
tools/paired-measure --tasks $D/fresh-4gpu.json --out $D/pm4 --passes 2 --resume --measurer torchrec-per-rank \
  --planner "neuroshard=--sharding-types $types" \
  --planner "torchrec_planner=--algo torchrec_planner_cpu --sharding-types $types" > $D/pm4.out 2>> $D/pm4.err
tools/paired-measure --tasks $D/fresh-2gpu.json --out $D/pm2 --passes 2 --resume --measurer torchrec-step \
  --planner "neuroshard=--sharding-types $types" \
  --planner "torchrec_planner=--algo torchrec_planner_cpu --sharding-types $types" > $D/pm2.out 2>> $D/pm2.err
for n in 4 2; do tools/paired_compare.py $D/pm$n/measured.json neuroshard torchrec_planner > $D/compare-$n.json; done
date -u > $D/finished
