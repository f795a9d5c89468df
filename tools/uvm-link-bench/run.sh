#!/usr/bin/env bash
# Builds and runs the UVM host-link benchmark on a GPU machine, from the repository root:
#
#   bash tools/uvm-link-bench/run.sh OUT_DIR
#
# Writes into OUT_DIR:
#   uvm-link.json      the benchmark's results (tools/uvm-link-bench/README.md describes them)
#   uvm-link.log       its progress and summary
#   machine.txt        nvidia-smi -q, nvidia-smi topo -m, lscpu, free -g, nvcc --version
#   python-probe.txt   whether torch and fbgemm_gpu import there (a failed probe never fails this script)
#   build.txt          the compiler's output
#
# Device time is scarce: the whole script is sized to finish within 4 minutes (compile, probes and the
# benchmark's own 110 s deadline, with a 160 s hard stop). Exit status: the benchmark's (0 ok, 1 CUDA error or no
# GPU, 124 when the hard stop ended it), or 1 when it cannot be compiled.
set -u -o pipefail

OUT=${1:?usage: bash tools/uvm-link-bench/run.sh OUT_DIR}
mkdir -p "$OUT" || exit 1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUILD=$(mktemp -d "${TMPDIR:-/tmp}/uvm-link-bench.XXXXXX") || exit 1
trap 'rm -rf "$BUILD"' EXIT
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}

log() { printf '[run.sh %4ds] %s\n' "$SECONDS" "$*" >&2; }

# The Python probe needs only the CPU, so it runs while nvcc compiles; the benchmark waits for it, so that nothing
# else touches the GPU or the host's memory bandwidth while it measures.
log "probing torch and fbgemm_gpu (background)"
(
  echo "===== python3: import torch, fbgemm_gpu"
  timeout 45 python3 - <<'EOF'
import sys
print("python", sys.version.split()[0], sys.executable)
try:
    import torch
    print("torch", torch.__version__, "| built with CUDA", torch.version.cuda,
          "| cuda available", torch.cuda.is_available())
except Exception as e:
    print("import torch failed:", repr(e))
    sys.exit(0)
try:
    import fbgemm_gpu
    print("fbgemm_gpu", getattr(fbgemm_gpu, "__version__", "(no __version__)"), fbgemm_gpu.__file__)
    # The op TorchRec's fused_uvm_caching allocates its tables with; present only in a CUDA build of fbgemm_gpu.
    try:
        torch.ops.fbgemm.new_managed_tensor
        print("torch.ops.fbgemm.new_managed_tensor: registered")
    except Exception as e:
        print("torch.ops.fbgemm.new_managed_tensor: missing:", repr(e))
except Exception as e:
    print("import fbgemm_gpu failed:", repr(e))
EOF
  echo "(exit status $?)"
  echo
  echo "===== pip list | grep -i -E 'torch|fbgemm'"
  if command -v pip >/dev/null 2>&1; then
    timeout 30 pip list 2>/dev/null | grep -i -E 'torch|fbgemm'
  else
    timeout 30 python3 -m pip list 2>/dev/null | grep -i -E 'torch|fbgemm'
  fi
  echo "(exit status $?)"
) >"$OUT/python-probe.txt" 2>&1 &
PROBE=$!

log "compiling with $NVCC"
ARCH=sm_90
if ! "$NVCC" -O3 -std=c++17 -arch=sm_90 -o "$BUILD/uvm_link_bench" "$HERE/uvm_link_bench.cu" >"$OUT/build.txt" 2>&1; then
  log "-arch=sm_90 failed (see build.txt); retrying with -arch=native"
  ARCH=native
  echo "===== retry with -arch=native" >>"$OUT/build.txt"
  if ! "$NVCC" -O3 -std=c++17 -arch=native -o "$BUILD/uvm_link_bench" "$HERE/uvm_link_bench.cu" >>"$OUT/build.txt" 2>&1; then
    log "compilation failed:"
    cat "$OUT/build.txt" >&2
    wait "$PROBE"
    exit 1
  fi
fi
log "compiled for -arch=$ARCH"

log "recording the machine"
section() {
  local title=$1
  shift
  printf '\n===== %s\n' "$title"
  timeout 30 "$@" 2>&1 || echo "(failed or missing: exit status $?)"
}
{
  section "date -u" date -u
  section "uname -a" uname -a
  section "nvcc --version" "$NVCC" --version
  section "nvidia-smi" nvidia-smi
  section "nvidia-smi -q" nvidia-smi -q
  section "nvidia-smi topo -m" nvidia-smi topo -m
  section "lscpu" lscpu
  section "free -g" free -g
  section "numactl -H" numactl -H
} >"$OUT/machine.txt" 2>&1

wait "$PROBE"
log "python probe done: $(grep -m1 -E '^(fbgemm_gpu |import fbgemm_gpu failed|import torch failed)' "$OUT/python-probe.txt" || echo 'see python-probe.txt')"

# The benchmark stops starting cases after --max-seconds and rewrites its JSON after every case; the outer timeout
# is for a case that hangs, and still leaves the cases done so far ("complete": false).
log "running the benchmark"
timeout -k 5 160 "$BUILD/uvm_link_bench" "$OUT/uvm-link.json" --max-seconds 110 2>&1 | tee "$OUT/uvm-link.log"
STATUS=${PIPESTATUS[0]}
if [ "$STATUS" -eq 124 ] || [ "$STATUS" -eq 137 ]; then
  log "the benchmark ran past 160 s and was stopped; uvm-link.json holds the cases it finished"
fi
log "done: exit status $STATUS; files in $OUT"
exit "$STATUS"
