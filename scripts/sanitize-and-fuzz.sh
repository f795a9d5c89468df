#!/usr/bin/env bash
# The reliability job (part of scripts/test.sh): the core library, CLI and their unit and end-to-end
# tests built with clang under AddressSanitizer + UndefinedBehaviorSanitizer (LibTorch stays out, so the
# bundled model is replaced by the analytic one), then each libFuzzer target run for FUZZ_SECONDS from
# the seed corpus in tests/fuzz/corpus/. Any sanitizer report or fuzzer crash fails it; a crash input is
# left in build-asan/fuzz-findings/ to become a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds="${FUZZ_SECONDS:-20}"

# The asan preset (CMakePresets.json): clang, warnings as errors, LibTorch off, the sanitizers and fuzzers.
cmake --preset asan >/dev/null
cmake --build --preset asan -j"$(nproc)"
ctest --preset asan -j"$(nproc)"

findings="build-asan/fuzz-findings"
mkdir -p "$findings"
for target in tables plan tasks model_meta model_files pickle_guard input_file; do
  # New inputs go to a scratch corpus; the seed corpus in the repository is only read.
  scratch="$(mktemp -d)"
  echo "fuzz: ${target}_fuzzer for ${fuzz_seconds}s" >&2
  log="$findings/${target}.log"
  status=0
  ./build-asan/tests/fuzz/"${target}_fuzzer" -max_total_time="$fuzz_seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$findings/${target}-" "$scratch" "tests/fuzz/corpus/$target" \
    >"$log" 2>&1 || status=$?
  rm -rf "$scratch"
  grep -E '^stat::(number_of_executed_units|new_units_added)' "$log" >&2 || true
  if [ "$status" -ne 0 ]; then
    grep -E -A40 'ERROR|what\(\)' "$log" >&2 || tail -40 "$log" >&2
    echo "fuzz: ${target}_fuzzer failed (exit $status); the input is in $findings/" >&2
    exit 1
  fi
done
echo "sanitize-and-fuzz: clean" >&2
