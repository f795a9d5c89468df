"""What the package's tests share: the paths, the shard-plan binary, and whether TorchRec is here.

Tests that need TorchRec are skipped without it, unless SHARDPLAN_REQUIRE_TORCHREC=1 (what CI sets): then
its absence fails them, so CI cannot pass with the stack missing.

With SHARDPLAN_TEST_INSTALLED=1 (scripts/test-pip-install.sh, on a copy of these tests outside the checkout)
they test the installed package as a user has it: its own shardplan and binary, no source tree on the path,
no SHARDPLAN_BINARY handed to what they run.
"""

import importlib.util
import logging
import os
import subprocess
import sys
import unittest
import warnings
from pathlib import Path

INSTALLED = os.environ.get("SHARDPLAN_TEST_INSTALLED") == "1"
TESTS_DIR = Path(__file__).resolve().parent
ROOT = TESTS_DIR.parents[1]  # the checkout, when not INSTALLED
PYTHON_DIR = ROOT / "python"
if not INSTALLED and str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))

# TorchRec warns at length about topologies built directly and dry-run storage estimates.
warnings.filterwarnings("ignore")
logging.getLogger("torchrec").setLevel(logging.ERROR)
logging.getLogger().setLevel(logging.ERROR)

REQUIRE_TORCHREC = os.environ.get("SHARDPLAN_REQUIRE_TORCHREC") == "1"
HAVE_TORCHREC = all(importlib.util.find_spec(m) is not None for m in ("torch", "torchrec", "fbgemm_gpu"))
if INSTALLED:
    from shardplan.binary import find_binary  # noqa: E402  the installed package's search
    BINARY = find_binary()
else:
    BINARY = os.environ.get("SHARDPLAN_BINARY") or str(ROOT / "build" / "shard-plan")
HAVE_BINARY = os.path.isfile(BINARY) and os.access(BINARY, os.X_OK)
# What the tests hand ShardPlanPlanner: the installed package finds its binary itself.
PLANNER_BINARY = None if INSTALLED else BINARY


def needs_torchrec(cls):
    """Class decorator: skip without TorchRec, unless CI requires it (then the test fails on import)."""
    if HAVE_TORCHREC or REQUIRE_TORCHREC:
        return cls
    return unittest.skip("TorchRec is not installed (scripts/setup-python.sh)")(cls)


def needs_binary(cls):
    return cls if HAVE_BINARY else unittest.skip(f"no shard-plan binary at {BINARY}")(cls)


def environment(**extra):
    """This process's environment with the package and the binary found, for subprocesses."""
    # Faulthandler: a rank that aborts prints every thread's Python stack, so a failure says where.
    if INSTALLED:
        return dict(os.environ, PYTHONFAULTHANDLER="1", **extra)
    path = os.pathsep.join(filter(None, [str(PYTHON_DIR), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path, SHARDPLAN_BINARY=BINARY, PYTHONFAULTHANDLER="1", **extra)


def torchrun(script_or_module, *args, ranks=2, timeout=600):
    """Runs a script (or `-m module`) on `ranks` local Gloo ranks; returns the CompletedProcess."""
    target = ["-m", script_or_module[3:]] if script_or_module.startswith("-m ") else [script_or_module]
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={ranks}",
               *target, *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=environment())


def failure_text(stderr, lines=60):
    """What a failed torchrun said, without TorchRec's and torchrun's warnings."""
    noise = ("WARNING", "warnings.warn", "Warning:", "] is_fx_tracing", "OMP_NUM_THREADS", "****")
    kept = [line for line in stderr.splitlines() if not any(n in line for n in noise)]
    return "\n".join(kept[-lines:])
