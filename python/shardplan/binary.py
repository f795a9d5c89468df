"""Finding and running the `shard-plan` binary (standard library only).

Planning happens in the C++ binary. It is looked for, in order: the `binary=` argument,
`$SHARDPLAN_BINARY`, this package's own `bin/shard-plan` (the pip package built from the repository's
root, `pip install --no-build-isolation .`), `shard-plan` on PATH, the `bin/` of this Python's prefix (a
`cmake --install --prefix` into a virtual environment), and the `build/` of the source tree this package
sits in (`pip install -e ./python`, or python/ on sys.path; only a checkout's).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from shardplan.versions import installed_versions

ENV_BINARY = "SHARDPLAN_BINARY"
ENV_PYTHON = "SHARDPLAN_PYTHON"  # the Python the binary runs TorchRec's planner and FBGEMM's kernel with
_ERROR_PREFIX = "shard-plan: error: "  # how the binary's log writes an error on stderr
PACKAGE_DIR = Path(__file__).resolve().parent
PACKAGED_BINARY = PACKAGE_DIR / "bin" / "shard-plan"
BUILD_INFO = PACKAGE_DIR / "bin" / "build-info.json"  # what the packaged binary was built against
_SOURCE_TREE = PACKAGE_DIR.parents[1]
INSTALL_ADVICE = ("To install it with its binary, in an environment that holds torch: pip install "
                  "scikit-build-core==1.1.2 && pip install --no-build-isolation <shard-plan checkout> "
                  "(docs/torchrec.md); or build it (./scripts/setup.sh on Debian) and set SHARDPLAN_BINARY")

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


class PackagedBuildMismatch(BinaryNotFound):
    """The package's binary was built against another torch than the one installed now."""


def build_info():
    """What the package's own binary was built against (its build-info.json), or None without one."""
    try:
        return json.loads(BUILD_INFO.read_text())
    except FileNotFoundError:
        return None


def check_packaged_build(info=None, torch_version=None):
    """Raises PackagedBuildMismatch when the torch installed is not the one the package's binary links."""
    info = build_info() if info is None else info
    if not info:
        return
    built = info.get("torch_version", "")
    have = torch_version or installed_versions(("torch",)).get("torch")
    if have is not None and have.split("+")[0] == built:
        return
    now = f"this environment has torch {have}" if have else "this environment has no torch"
    raise PackagedBuildMismatch(
        f"shard-plan's binary in {PACKAGE_DIR} was built against torch {built} and links its libraries; {now}. "
        f"Build it again against this torch: pip install --no-build-isolation --force-reinstall --no-deps "
        f"<shard-plan checkout>")


def _in_source_tree():
    return (_SOURCE_TREE / "CMakeLists.txt").is_file() and (_SOURCE_TREE / "python" / "shardplan").is_dir()


def _candidates(explicit):
    if explicit:
        yield "the binary argument", Path(explicit)
        return
    if os.environ.get(ENV_BINARY):
        yield f"${ENV_BINARY}", Path(os.environ[ENV_BINARY])
        return
    yield "this package", PACKAGED_BINARY
    on_path = shutil.which("shard-plan")
    if on_path:
        yield "PATH", Path(on_path)
    yield "this Python's prefix", Path(sys.prefix) / "bin" / "shard-plan"
    if _in_source_tree():
        yield "the source tree", _SOURCE_TREE / "build" / "shard-plan"


def find_binary(binary=None):
    """The path of the shard-plan executable, or BinaryNotFound saying where it looked (or why the package's
    own binary cannot run here)."""
    looked = []
    for where, path in _candidates(binary):
        if path.is_file() and os.access(path, os.X_OK):
            if path == PACKAGED_BINARY:
                check_packaged_build()
            return str(path)
        looked.append(f"{where} ({path})")
    raise BinaryNotFound(f"no shard-plan executable found; looked in {', '.join(looked)}. {INSTALL_ADVICE}")


def binary_environment(path, base=None):
    """The environment to run `path` in: the package's own binary runs TorchRec's planner and FBGEMM's
    kernel with this Python (which has the package), unless SHARDPLAN_PYTHON says otherwise."""
    env = dict(os.environ if base is None else base)
    if Path(path) == PACKAGED_BINARY:
        env.setdefault(ENV_PYTHON, sys.executable)
    return env


def run_binary(args, binary=None, timeout=None):
    """Runs shard-plan with `args`; returns its stdout, raises BinaryError on a non-zero exit.

    stderr (logs and the report) is captured and carried by the error; on success it is relayed to this
    process's stderr so that the user still sees the report.
    """
    command = [find_binary(binary)] + [str(a) for a in args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False,
                          env=binary_environment(command[0]))
    if done.returncode != EXIT_OK:
        raise BinaryError(command, done.returncode, done.stderr)
    if done.stderr:
        sys.stderr.write(done.stderr)
    return done.stdout
