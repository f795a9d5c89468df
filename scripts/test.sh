#!/usr/bin/env bash
# Sets up (installs packages and the Python stack, builds) and runs the whole test suite: unit,
# end-to-end, LibTorch, Python package (TorchRec on 2 Gloo ranks) and plan-quality regression tests,
# then the pip install of the README in a fresh venv (scripts/test-pip-install.sh), then the sanitizer
# build and the fuzzers, then prints plan quality measured on this machine's kernels
# (not asserted: timings on shared machines are noisy). This is the command CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
export SHARDPLAN_WERROR=ON  # CI builds with warnings as errors (the asan preset does too)
./scripts/setup.sh
./scripts/setup-python.sh  # torch, fbgemm-gpu-cpu, TorchRec and the shardplan package, in .venv
cmake --build build -j"$(nproc)"  # the test suites, beyond what setup builds
# The package's TorchRec tests fail here, rather than skip, if the pinned stack does not import.
SHARDPLAN_REQUIRE_TORCHREC=1 ctest --test-dir build --output-on-failure -j"$(nproc)"
# The TorchRec user's path: the README's pip install in a fresh venv, tested from outside the checkout.
./scripts/test-pip-install.sh
./scripts/sanitize-and-fuzz.sh

if grep -q '^SHARDPLAN_WITH_TORCH:BOOL=ON' build/CMakeCache.txt; then
  echo "measured (printed, not asserted): max compute of the first 2 paper-4gpu tasks' plans on this machine" >&2
  ./build/shard-plan bench --tasks data/tasks/paper-4gpu.json --algos neuroshard,torchrec,size_lookup_greedy \
    --measure 2 --quiet
fi
