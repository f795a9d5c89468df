#!/usr/bin/env bash
# tools/emulate-hosts: bad usage is exit 2; a failing collector fails the run and leaves no namespace,
# link or bridge behind; a tiny real collection across 2 emulated hosts records its layout. Exit 77
# (skipped, with the reason printed) where network namespaces are not permitted.
set -uo pipefail
binary="$1"
source_dir="$2"
tool="$source_dir/tools/emulate-hosts"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
leftovers() { { ip netns list 2>/dev/null; ip -o link show 2>/dev/null; } | grep -cE '(^| )sp[0-9]+(h|a|b|br)[0-9]*[:@ ]' ; }

"$tool" --hosts 1 --gpus-per-host 2 --rate 1gbit --binary "$binary" -- --samples 1 --out "$work/x" 2>/dev/null
[ $? -eq 2 ] || fail "--hosts 1 should be bad usage (exit 2)"

before=$(leftovers)
"$tool" --hosts 2 --gpus-per-host 1 --rate 1gbit --binary /bin/false -- --samples 1 --out "$work/y"
status=$?
if [ $status -eq 77 ]; then exit 77; fi
[ $status -eq 1 ] || fail "a failing collector should fail the run (exit 1), got $status"
[ "$(leftovers)" -eq "$before" ] || fail "namespaces or links left behind after a failure"

"$tool" --hosts 2 --gpus-per-host 1 --rate 1gbit --binary "$binary" -- \
    --samples 2 --repeats 1 --batch-size 64 --timeout 30 --out "$work/z" -q || fail "a tiny collection failed"
[ "$(wc -l < "$work/z/samples.jsonl")" -eq 2 ] || fail "expected 2 samples"
grep -q '"gpus_per_host":1' "$work/z/samples.jsonl" || fail "samples do not record gpus_per_host"
[ "$(leftovers)" -eq "$before" ] || fail "namespaces or links left behind after a run"
echo ok
