"""`shard-plan` on PATH for the pip package: replaces this process with the package's own binary.

The binary links the environment's torch through its RPATH and finds its models and hardware profiles beside
itself; this only checks that the torch it was built against is still the one installed, and hands the
binary this Python for the parts that run TorchRec or FBGEMM.
"""

import os
import sys

from shardplan.binary import EXIT_RUNTIME, PACKAGED_BINARY, BinaryNotFound, binary_environment, check_packaged_build


def main():
    if not (PACKAGED_BINARY.is_file() and os.access(PACKAGED_BINARY, os.X_OK)):
        print(f"shard-plan: error: this shardplan package has no binary at {PACKAGED_BINARY}", file=sys.stderr)
        return EXIT_RUNTIME
    try:
        check_packaged_build()
    except BinaryNotFound as e:
        print(f"shard-plan: error: {e}", file=sys.stderr)
        return EXIT_RUNTIME
    sys.stdout.flush()
    os.execve(PACKAGED_BINARY, ["shard-plan", *sys.argv[1:]], binary_environment(PACKAGED_BINARY))
    return EXIT_RUNTIME  # not reached: execve replaces this process or raises


if __name__ == "__main__":
    sys.exit(main())
