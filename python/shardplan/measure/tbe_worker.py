"""python -m shardplan.measure.tbe_worker: times shard sets with FBGEMM's TBE for the shard-plan binary.

One request per line on stdin, one answer per line on stdout, until stdin closes:
  {"traces": PATH, "optimizer": "sgd", "device": "cpu", "warmup": 1, "iterations": 3, "threads": 1}
  -> {"samples_ms": [...]}   or   {"error": "..."}
PATH is a shard-plan-traces/1 file whose tables are the set's pieces (their rows, columns, data type and
one batch each); the set runs as one TBE operator per data type (shardplan.measure.tbe). The first line
written is {"ready": true, "versions": {...}} once torch and FBGEMM are imported.
"""

import json
import sys
import warnings

from shardplan.versions import installed_versions


def _answer(doc):
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def serve(lines):
    import torch
    from shardplan.measure.tbe import time_set
    from shardplan.measure.traces import read_pieces
    _answer({"ready": True, "versions": installed_versions(("torch", "fbgemm-gpu", "fbgemm-gpu-cpu"))})
    for line in lines:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            torch.set_num_threads(int(request.get("threads", 1)))
            device = torch.device(request.get("device", "cpu"))
            _, pieces = read_pieces(request["traces"])
            samples = time_set(pieces, optimizer=request.get("optimizer", "sgd"),
                               device=device, warmup=int(request.get("warmup", 1)),
                               iterations=int(request.get("iterations", 3)))
            _answer({"samples_ms": samples})
        except (KeyError, ValueError, OSError, RuntimeError) as e:
            _answer({"error": f"{type(e).__name__}: {e}"})


def main():
    warnings.filterwarnings("ignore")
    serve(sys.stdin)
    return 0


if __name__ == "__main__":
    sys.exit(main())
