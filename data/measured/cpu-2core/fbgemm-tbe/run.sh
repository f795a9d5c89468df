#!/usr/bin/env bash
# #45's targets, decided before seeing any figure: a cost model of FBGEMM's TBE kernel on this CPU.
#   1. compute data timed with --kernel fbgemm-tbe (the bundled data's settings: up to 24 shards and
#      4 GiB a set, 5 timed steps, one core), and a held-out set collected apart (another seed);
#   2. models/cpu-fbgemm pre-trained on it, the all-to-all kept from the bundled model; its held-out
#      error beside the bundled (embedding_bag) model's on the same TBE samples;
#   3. calibrate --kernel fbgemm-tbe from the bundled model, held-out error on the same samples;
#   4. on the real stack (TorchRec + FBGEMM), #40's fresh tasks: neuroshard with the TBE model, and
#      with the calibrated model + --measure-loop 8, against TorchRec's own planner.
set -euo pipefail
cd "$(dirname "$0")/../../../.."
B=build/shard-plan
D=${1:-/tmp/m45}; mkdir -p "$D"
T=${TASKS:-data/measured/cpu-2core/torchrec-stack}
types=table_wise,column_wise,data_parallel
date -u > $D/started
lscpu | grep -E 'Model name|^CPU\(s\)|Vendor' > $D/cpu.txt
common=(--kernel fbgemm-tbe --tables data/pool.json --mem-cap 4GiB --iterations 5 --max-tables 24 -q)
start=$(date +%s)
taskset -c 1 $B collect-costs compute "${common[@]}" --samples 5000 --seed 3 --out data/costs/cpu-fbgemm/compute
echo "collect $(( $(date +%s) - start )) s" > $D/collect.time
taskset -c 1 $B collect-costs compute "${common[@]}" --samples 1000 --seed 4 --out data/costs/cpu-fbgemm-heldout/compute
start=$(date +%s)
$B pretrain-cost-model --data data/costs/cpu-fbgemm --comm-from models/cpu-2core --out models/cpu-fbgemm > $D/pretrain.out 2> $D/pretrain.err
echo "pretrain $(( $(date +%s) - start )) s" > $D/pretrain.time
start=$(date +%s)
$B calibrate --kernel fbgemm-tbe --out $D/cal > $D/cal.out 2> $D/cal.err
echo "calibrate $(( $(date +%s) - start )) s" > $D/cal.time
for m in models/cpu-fbgemm models/cpu-2core $D/cal; do
  echo "== $m" >> $D/eval.txt
  $B eval-cost-model --model $m --data data/costs/cpu-fbgemm-heldout >> $D/eval.txt 2>&1
done
taskset -c 1 .venv/bin/python tools/kernel-additivity --sets 30 --seed 5 > $D/additivity.json 2> $D/additivity.err
for n in 4 2; do
  mode=$([ $n = 4 ] && echo torchrec-per-rank || echo torchrec-step)
  mkdir -p $D/pm$n
  cp $T/pm$n/torchrec_planner-*.json $T/pm$n/tables-*.json $D/pm$n/ 2>/dev/null || true
  tools/paired-measure --tasks $T/fresh-${n}gpu.json --out $D/pm$n --passes 2 --measurer $mode \
    --planner "neuroshard_tbe=--model models/cpu-fbgemm --sharding-types $types" \
    --planner "tbe_loop=--model $D/cal --measure-loop 8 --kernel fbgemm-tbe --sharding-types $types" \
    --planner "torchrec_planner=--algo torchrec_planner_cpu --sharding-types $types" > $D/pm$n.out 2> $D/pm$n.err
  for a in neuroshard_tbe tbe_loop; do
    tools/paired_compare.py $D/pm$n/measured.json $a torchrec_planner > $D/compare-$n-$a.json
  done
done
date -u > $D/finished
