"""python -m shardplan.torchrec PLAN [--check-torchrec]

Prints how a shard-plan plan maps onto TorchRec's sharding helpers, as JSON (TorchRec not needed).
--check-torchrec also builds the plan's EmbeddingBagCollections on the meta device (no GPU, no process
group, nothing allocated), runs TorchRec's helpers with explicit kernels and checks what they built shard
for shard. Exit codes: 0 ok, 2 a plan that cannot be read or that TorchRec cannot express, 3
--check-torchrec without TorchRec installed.
"""

import argparse
import json
import sys

from shardplan.plan_file import PlanError, describe_plan, read_plan

EXIT_OK, EXIT_BAD_PLAN, EXIT_NO_TORCHREC = 0, 2, 3


def torchrec_summary(plan):
    from shardplan.torchrec.bridge import build_sharding_plan
    from shardplan.torchrec.plan_model import UNQUALIFIED, model_of_plan
    description = describe_plan(plan)
    model = model_of_plan(description)
    plain = getattr(model, "unqualified_path", UNQUALIFIED)  # where the plain-named tables are
    sharding_plan = build_sharding_plan(plan, model, device_type="cuda")
    out = {}
    for path, module_plan in sharding_plan.plan.items():
        for name, ps in module_plan.items():
            built = {"sharding_type": ps.sharding_type, "compute_kernel": ps.compute_kernel, "ranks": ps.ranks}
            if ps.cache_params is not None:  # only a cached table has one
                built["cache_params"] = {"algorithm": ps.cache_params.algorithm.name,
                                         "load_factor": ps.cache_params.load_factor}
            out[name if path == plain else f"{path}/{name}"] = built
    return out


def main(argv=None, prog="python -m shardplan.torchrec"):
    parser = argparse.ArgumentParser(prog=prog, description="Map a shard-plan plan to TorchRec's sharding helpers.")
    parser.add_argument("plan", help="plan file written by shard-plan ('-' for stdin)")
    parser.add_argument("--check-torchrec", action="store_true",
                        help="also build the plan with TorchRec's helpers and check it shard for shard")
    args = parser.parse_args(argv)
    try:
        plan = read_plan(args.plan)
        out = describe_plan(plan)
        if args.check_torchrec:
            try:
                import torchrec.distributed.sharding_plan  # noqa: F401
            except ImportError as e:
                print(f"{prog}: --check-torchrec needs TorchRec installed ({e}); see scripts/setup-python.sh",
                      file=sys.stderr)
                return EXIT_NO_TORCHREC
            out["torchrec_plan"] = torchrec_summary(plan)
    except PlanError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_BAD_PLAN
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
