#!/usr/bin/env bash
# `cmake --install` into a scratch prefix gives a working bin/shard-plan that plans with the bundled
# models under share/shard-plan (the default: the GPU model and its hardware profile); and a copy of the binary outside any tree (a build directory anywhere)
# still finds the bundled model, through the source tree the build was configured from.
set -euo pipefail
build_dir="$1"
source_dir="$2"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
fail() { echo "install_test: $*" >&2; exit 1; }

prefix="$scratch/prefix"
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
share="$prefix/share/shard-plan"
for f in "$prefix/bin/shard-plan" "$share/models/h100/meta.json" "$share/models/cpu-2core/compute.pt" \
         "$share/data/hardware/h100-sxm-ib400.json" \
         "$share/data/pool.json" "$share/data/examples/tables-4gpu.json" "$share/tools/plan_to_torchrec.py" \
         "$share/python/shardplan/torchrec/baseline.py"; do
  [ -e "$f" ] || fail "missing after install: $f"
done
log="$("$prefix/bin/shard-plan" --tables "$share/data/examples/tables-4gpu.json" --gpus 4 --mem-per-gpu 4GiB \
        -o "$scratch/plan.json" --no-compare 2>&1 >/dev/null)" || fail "installed binary failed: $log"
grep -qF "cost model: neural:h100 ($share/models/h100)" <<<"$log" || fail "installed binary did not use its share/ model: $log"
"$prefix/bin/shard-plan" validate --plan "$scratch/plan.json" --tables "$share/data/examples/tables-4gpu.json" >/dev/null \
  || fail "the installed binary's plan does not validate"

# The installed plan_to_torchrec.py finds the installed package (no TorchRec needed to describe a plan).
python3 "$share/tools/plan_to_torchrec.py" "$scratch/plan.json" >/dev/null || fail "installed plan_to_torchrec.py failed"

elsewhere="$scratch/elsewhere/build"
mkdir -p "$elsewhere"
cp "$build_dir/shard-plan" "$elsewhere/"
log="$(cd "$scratch" && "$elsewhere/shard-plan" --tables "$source_dir/data/examples/tables-4gpu.json" --gpus 4 \
        --mem-per-gpu 4GiB -o "$scratch/plan2.json" --no-compare 2>&1 >/dev/null)" || fail "moved binary failed: $log"
grep -qF "cost model: neural:h100 ($source_dir/models/h100)" <<<"$log" || fail "moved binary did not find the model: $log"
echo "install_test: ok" >&2
