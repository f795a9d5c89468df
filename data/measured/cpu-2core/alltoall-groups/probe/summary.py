"""Per plan of the probe: every timing's step (the slowest rank's) and the ranks' mean forward and
backward communication (the step less the rank's own lookups), then their medians.
  python3 summary.py TIMED_DIR"""
import glob
import json
import os
import statistics
import sys

runs = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    plan = os.path.basename(path).split("-", 1)[1].rsplit("-", 1)[0]
    devices = json.load(open(path))["devices"]
    runs.setdefault(plan, []).append((max(d["measured_total_ms"] for d in devices),
                                      statistics.mean(d["measured_fw_comm_ms"] for d in devices),
                                      statistics.mean(d["measured_bw_comm_ms"] for d in devices)))
for plan, rows in runs.items():
    step, fw, bw = (statistics.median(col) for col in zip(*rows))
    print(f"{plan:12s} {len(rows)} timings; step {' '.join(f'{r[0]:.1f}' for r in rows)} ms: median {step:.1f}; "
          f"forward comm {fw:.1f}, backward comm {bw:.1f} ms (medians of the ranks' means)")
