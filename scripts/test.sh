#!/usr/bin/env bash
# Sets up (installs packages, builds) and runs the whole test suite: unit, end-to-end and, once they
# exist, regression and LibTorch tests. This is the command CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
ctest --test-dir build --output-on-failure -j"$(nproc)"
