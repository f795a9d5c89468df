#!/usr/bin/env python3
"""Fits the all-to-all correction (meta.json comm.correction, docs/cost-models.md) of a model to the real
stack's per-rank measurements of plans that model scored, and writes the corrected model.

  fit_correction.py BASE_MODEL_DIR PLANS_DIR DOCS_DIR VARIANT OUT_MODEL_DIR

For each measurement DOCS_DIR/{i}-{pass}-{VARIANT}.json of plan PLANS_DIR/neuroshard-{i}.json, per
rank: the model's transfer is the plan's predicted fw_comm_ms less its wait for the latest rank's
compute, and bw_comm_ms; the stack's is measured_fw_comm_ms less the wait the measured computes give,
and measured_bw_comm_ms. Per direction, least squares of the stack's on the model's (offset + scale x
transfer), as fit_comm_correction does with shard-plan's own timings. Prints the fit and its error."""
import glob
import json
import os
import re
import shutil
import statistics
import sys


def observations(plans, docs, variant):
    fw, bw = [], []
    for path in sorted(glob.glob(os.path.join(docs, f"*-{variant}.json"))):
        task = re.match(r"(\d+)-\d+-", os.path.basename(path)).group(1)
        with open(os.path.join(plans, f"neuroshard-{task}.json")) as f:
            plan = json.load(f)
        with open(path) as f:
            doc = json.load(f)
        predicted = {d["rank"]: d for d in plan["devices"]}
        latest = max(d["compute_ms"] for d in plan["devices"])
        latest_measured = max(d["measured_compute_ms"] for d in doc["devices"])
        for d in doc["devices"]:
            p = predicted[d["rank"]]
            fw.append((p["fw_comm_ms"] - (latest - p["compute_ms"]),
                       d["measured_fw_comm_ms"] - (latest_measured - d["measured_compute_ms"])))
            bw.append((p["bw_comm_ms"], d["measured_bw_comm_ms"]))
    return fw, bw


def fit(pairs):
    xs, ys = zip(*pairs)
    mx, my = statistics.mean(xs), statistics.mean(ys)
    scale = sum((x - mx) * (y - my) for x, y in pairs) / sum((x - mx) ** 2 for x in xs)
    return my - scale * mx, scale


def mape(pairs, offset, scale):
    return 100 * statistics.mean(abs(max(0.25 * x, offset + scale * x) - y) / y for x, y in pairs)


def main():
    base, plans, docs, variant, out = sys.argv[1:6]
    fw, bw = observations(plans, docs, variant)
    (fo, fs), (bo, bs) = fit(fw), fit(bw)
    print(f"{len(fw)} ranks; forward transfer: {fo:.3f} ms + {fs:.3f} x model (MAPE {mape(fw, 0, 1):.1f}% -> "
          f"{mape(fw, fo, fs):.1f}%); backward: {bo:.3f} ms + {bs:.3f} x model (MAPE {mape(bw, 0, 1):.1f}% -> "
          f"{mape(bw, bo, bs):.1f}%)")
    shutil.copytree(base, out, dirs_exist_ok=True)
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    meta["comm"]["correction"] = {"fw_offset_ms": fo, "fw_scale": fs, "bw_offset_ms": bo, "bw_scale": bs}
    meta["name"] = os.path.basename(os.path.normpath(out))
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
