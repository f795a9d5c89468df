#!/usr/bin/env bash
# The pip package's build (pyproject.toml: LibTorch from the environment's torch, cmake/TorchFromPython.cmake)
# into a build directory, without installing: for a GPU host with PyTorch but without pip access or a package
# manager (the lent GPU machine). Where pip works, `pip install --no-build-isolation .` is the same build.
#
#   scripts/build-cuda.sh stage-deps       on a machine with fmt, spdlog, nlohmann/json, CLI11 and Gloo
#                                          installed (scripts/setup.sh): copies their headers into .deps/,
#                                          to travel with the checkout to a host that has none
#   scripts/build-cuda.sh build [DIR]      configures and builds DIR/shard-plan (default DIR: build-cuda),
#                                          with .deps/ when it is there; extra CMake arguments after DIR
#
# PYTHON (default python3) names the Python whose torch package supplies LibTorch.
set -euo pipefail
cd "$(dirname "$0")/.."

stage_deps() {
  rm -rf .deps
  mkdir -p .deps/include .deps/gloo-include
  for dir in fmt spdlog nlohmann CLI; do
    [[ -d /usr/include/$dir ]] || { echo "stage-deps: /usr/include/$dir is missing; run scripts/setup.sh first" >&2; exit 2; }
    cp -r "/usr/include/$dir" .deps/include/
  done
  cp /usr/include/zlib.h /usr/include/zconf.h .deps/include/
  # c10d's Gloo backend includes Gloo's headers, which PyTorch's wheel does not ship.
  if [[ -d /usr/include/gloo ]]; then cp -r /usr/include/gloo .deps/gloo-include/; fi
  echo "staged into .deps/ ($(du -sh .deps | cut -f1))"
}

build() {
  local dir=${1:-build-cuda}
  shift || true
  local deps=() generator=() keep_going=()
  [[ -f .deps/include/fmt/format.h ]] && deps=(-DSHARDPLAN_DEPS_DIR="$PWD/.deps")
  # With Ninja, one failed build lists every file's errors at once: GPU time is scarce.
  if command -v ninja >/dev/null; then generator=(-G Ninja); keep_going=(-- -k 0); fi
  cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DSHARDPLAN_TORCH_FROM_PYTHON=ON \
        -DPython_EXECUTABLE="$(command -v "${PYTHON:-python3}")" -DSHARDPLAN_BUILD_TESTS=OFF "${deps[@]}" "$@"
  cmake --build "$dir" --target shard-plan -j "$(nproc)" "${keep_going[@]}"
  echo "built $dir/shard-plan"
}

case "${1:-}" in
  stage-deps) stage_deps ;;
  build) shift; build "$@" ;;
  *) sed -n '2,13p' "$0" >&2; exit 2 ;;
esac
