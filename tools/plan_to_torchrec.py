#!/usr/bin/env python3
"""The command line `python -m shardplan.torchrec PLAN [--check-torchrec]` under its old name, for scripts
that call it. Its Python API moved: shardplan.plan_file.describe_plan, shardplan.torchrec.build_sharding_plan.

The bridge lives in the `shardplan` package (python/, `pip install ./python`); this wrapper finds it beside
the tools (a source tree, or an install's share/shard-plan) when it is not installed.
"""
import os
import sys

try:
    import shardplan  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))

from shardplan.torchrec.__main__ import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(prog="plan_to_torchrec.py"))
