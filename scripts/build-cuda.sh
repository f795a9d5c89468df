#!/usr/bin/env bash
# Builds shard-plan against PyTorch's own LibTorch (with CUDA) on a machine that has PyTorch but not
# Debian's packages, e.g. a GPU host. The Debian build (README) stays the default.
#
#   scripts/build-cuda.sh stage-deps       on a Debian machine with the project's packages installed
#                                          (scripts/setup.sh): copies the header-only dependencies'
#                                          headers into .deps/, which you then copy beside the sources
#   scripts/build-cuda.sh build [DIR]      on the GPU host: configures and builds DIR/shard-plan
#                                          (default DIR: build-cuda); extra CMake arguments after DIR
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
  # c10d's Gloo backend includes Gloo's headers, which PyTorch's wheel (2.11) does not ship.
  if [[ -d /usr/include/gloo ]]; then cp -r /usr/include/gloo .deps/gloo-include/; fi
  echo "staged into .deps/ ($(du -sh .deps | cut -f1))"
}

build() {
  local dir=${1:-build-cuda}
  shift || true
  local python=${PYTHON:-python3}
  [[ -f .deps/include/fmt/format.h ]] || { echo "build: .deps/ is missing; run '$0 stage-deps' on a Debian machine" >&2; exit 2; }
  local prefix
  prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
  echo "LibTorch: $("$python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)') at $prefix"
  local generator=() keep_going=()
  # With Ninja, one failed build lists every file's errors at once: GPU time is scarce.
  if command -v ninja >/dev/null; then generator=(-G Ninja); keep_going=(-- -k 0); fi
  cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
        -DSHARDPLAN_DEPS_DIR="$PWD/.deps" -DSHARDPLAN_BUILD_TESTS=OFF "$@"
  cmake --build "$dir" --target shard-plan -j "$(nproc)" "${keep_going[@]}"
  echo "built $dir/shard-plan"
}

case "${1:-}" in
  stage-deps) stage_deps ;;
  build) shift; build "$@" ;;
  *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
