#!/usr/bin/env bash
# Planning time after the sharding types' all-to-all groups are priced (the search counts tables per type,
# the beam charges a split, replan charges its first split): tools/scale-bench with the default model, one
# search thread and both cores, three runs each, nothing else running.
#   data/measured/cpu-2core/planning-time-groups/run.sh [BINARY]     (from the repository root)
set -euo pipefail
here="$(dirname "$0")"
bin="${1:-build/shard-plan}"
lscpu | grep -E 'Model name|^CPU\(s\)|Vendor' >"$here/cpu.txt"
for rep in 1 2 3; do
  tools/scale-bench --binary "$bin" --cases 856x128,5000x1024 --json -- --threads 1 >"$here/one-thread-$rep.json" 2>/dev/null
  tools/scale-bench --binary "$bin" --cases 856x128,5000x1024 --json >"$here/both-cores-$rep.json" 2>/dev/null
done
python3 - "$here" <<'PY'
import glob, json, os, sys
for kind in ("one-thread", "both-cores"):
    seconds = {}
    for path in sorted(glob.glob(os.path.join(sys.argv[1], f"{kind}-*.json"))):
        for case in json.load(open(path))["cases"]:
            seconds.setdefault(f"{case['tables']}x{case['gpus']}", []).append(case["seconds"])
    print(kind, {case: f"{min(s):.2f}-{max(s):.2f} s" for case, s in seconds.items()})
PY
