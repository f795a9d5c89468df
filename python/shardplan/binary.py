"""Finding and running the `shard-plan` binary (standard library only).

The package is pure Python; planning happens in the C++ binary. It is looked for, in order: the
`binary=` argument, `$SHARDPLAN_BINARY`, `shard-plan` on PATH, the `bin/` of this Python's prefix (a
`cmake --install --prefix` into a virtual environment), and the `build/` of the source tree this package
sits in (`pip install -e ./python`, or python/ on sys.path).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ENV_BINARY = "SHARDPLAN_BINARY"
_ERROR_PREFIX = "shard-plan: error: "  # how the binary's log writes an error on stderr

# shard-plan's exit codes (README): 0 success, 1 runtime failure, 2 bad usage or input, 3 infeasible.
EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, EXIT_INFEASIBLE = 0, 1, 2, 3


class BinaryNotFound(RuntimeError):
    """No shard-plan binary where the package looks for one."""


class BinaryError(RuntimeError):
    """shard-plan exited non-zero; `code` is its exit code and `message` what it printed on stderr."""

    def __init__(self, command, code, stderr):
        self.command, self.code, self.stderr = command, code, stderr
        # Its own words: the error lines, without the logger's prefix; else the end of what it said.
        errors = [line.split(_ERROR_PREFIX, 1)[1] for line in stderr.splitlines() if _ERROR_PREFIX in line]
        self.message = "\n".join(errors) if errors else stderr.strip()[-2000:] or "(no message)"
        what = {EXIT_USAGE: "refused its input", EXIT_INFEASIBLE: "found no plan that fits"}.get(code, "failed")
        super().__init__(f"shard-plan {what} (exit {code}): {self.message}")


def _candidates(explicit):
    if explicit:
        yield "the binary argument", Path(explicit)
        return
    if os.environ.get(ENV_BINARY):
        yield f"${ENV_BINARY}", Path(os.environ[ENV_BINARY])
        return
    on_path = shutil.which("shard-plan")
    if on_path:
        yield "PATH", Path(on_path)
    yield "this Python's prefix", Path(sys.prefix) / "bin" / "shard-plan"
    yield "the source tree", Path(__file__).resolve().parents[2] / "build" / "shard-plan"


def find_binary(binary=None):
    """The path of the shard-plan executable, or BinaryNotFound saying where it looked."""
    looked = []
    for where, path in _candidates(binary):
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        looked.append(f"{where} ({path})")
    raise BinaryNotFound("no shard-plan executable found; looked in " + ", ".join(looked) +
                         f". Build it (./scripts/setup.sh) and set {ENV_BINARY} or put it on PATH")


def run_binary(args, binary=None, timeout=None):
    """Runs shard-plan with `args`; returns its stdout, raises BinaryError on a non-zero exit.

    stderr (logs and the report) is captured and carried by the error; on success it is relayed to this
    process's stderr so that the user still sees the report.
    """
    command = [find_binary(binary)] + [str(a) for a in args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != EXIT_OK:
        raise BinaryError(command, done.returncode, done.stderr)
    if done.stderr:
        sys.stderr.write(done.stderr)
    return done.stdout
