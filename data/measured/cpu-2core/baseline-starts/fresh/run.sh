#!/usr/bin/env bash
here="$(cd "$(dirname "$0")" && pwd)"; cd "$here/../../../../.."
for n in 8 32; do for m in default h100; do
  build/shard-plan bench --tasks $here/fresh-${n}gpu.json --model models/$m --json --per-task -q > $here/bench-$n-$m.json
done; done

