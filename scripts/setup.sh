#!/usr/bin/env bash
# Installs what shard-plan needs from Debian's packages (skipped when already there) and builds the
# shard-plan tool into build/ (the tests are built by scripts/test.sh). Safe to run again. Extra CMake
# flags: SHARDPLAN_CMAKE_ARGS="-DSHARDPLAN_WITH_TORCH=OFF"; SHARDPLAN_WERROR=ON makes warnings errors.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config
  libtorch-dev            # LibTorch: neural cost model, training, measurement, dataset importer
  libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
  libgtest-dev zlib1g-dev
  python3                 # tests of tools/plan_to_torchrec.py (standard library only)
  libgloo-dev             # Gloo headers that c10d's ProcessGroupGloo.hpp includes (collect-costs comm)
  librsvg2-bin            # rsvg-convert: the e2e test renders the --report chart to PNG, as a viewer would
  clang libclang-rt-14-dev  # the sanitizer build and libFuzzer targets (scripts/sanitize-and-fuzz.sh)
  clang-format            # the house style, checked by the tools tests (tools/check-format)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# shellcheck disable=SC2086  # SHARDPLAN_CMAKE_ARGS is a list of flags
# Warnings are errors only where SHARDPLAN_WERROR=ON says so (scripts/test.sh, CI): a newer compiler's
# new warning must not stop a user's build.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSHARDPLAN_WERROR="${SHARDPLAN_WERROR:-OFF}" ${SHARDPLAN_CMAKE_ARGS:-} >/dev/null
cmake --build build -j"$(nproc)" --target shard-plan
echo "setup: built build/shard-plan" >&2
