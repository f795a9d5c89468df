"""Per-rank measurements as `shard-plan evaluate --measure --json` lays them out, so that
tools/paired-measure and tools/paired_compare.py pair them like any other measurement."""


def _predicted(plan):
    devices = plan.get("devices") or []
    compute = [d.get("compute_ms") for d in devices]
    total = [d.get("total_ms") for d in devices]
    return compute if compute and None not in compute else None, total if total and None not in total else None


def _argmax(values):
    return max(range(len(values)), key=lambda i: values[i])


def measurement_document(plan, ranks, setup):
    """`ranks`: each rank's lookup and step medians (ms); `setup`: how they were measured."""
    predicted_compute, predicted_total = _predicted(plan)
    devices = []
    for r, m in enumerate(ranks):
        compute = m["lookup_fw_ms"] + m["lookup_bw_ms"]
        devices.append({
            "rank": r,
            "compute_ms": predicted_compute[r] if predicted_compute else None,
            "total_ms": predicted_total[r] if predicted_total else None,
            "measured_compute_ms": compute,
            # Each round's compute (the sum of the round's medians): how far single rounds strayed.
            "measured_compute_rounds_ms": m["compute_rounds_ms"],
            "measured_lookup_fw_ms": m["lookup_fw_ms"],
            "measured_lookup_bw_ms": m["lookup_bw_ms"],
            # Comm as the step saw it: the forward and backward beyond this rank's own compute.
            "measured_fw_comm_ms": max(0.0, m["step_fw_ms"] - m["lookup_fw_ms"]),
            "measured_bw_comm_ms": max(0.0, m["step_bw_ms"] - m["lookup_bw_ms"]),
            # The output all-to-all alone, all ranks together: a part of the comm above.
            "measured_output_a2a_fw_ms": m["output_a2a_fw_ms"],
            "measured_output_a2a_bw_ms": m["output_a2a_bw_ms"],
            "measured_total_ms": m["step_ms"]})
    computes = [d["measured_compute_ms"] for d in devices]
    steps = [d["measured_total_ms"] for d in devices]
    slowest = _argmax(computes)
    summary = plan.get("summary") or {}
    return {
        "algorithm": plan.get("algorithm", "unknown"),
        "cost_model": plan.get("cost_model"),
        "measured_with": setup,
        "devices": devices,
        "predicted": {"max_total_ms": summary.get("max_total_ms"),
                      "max_compute_ms": max(predicted_compute) if predicted_compute else None},
        "measured": {"devices": len(devices), "max_compute_ms": computes[slowest], "max_rank": slowest,
                     "predicted_max_compute_ms": predicted_compute[slowest] if predicted_compute else None,
                     "max_total_ms": max(steps), "max_total_rank": _argmax(steps)}}
