"""How a torchrun worker of this package ends: without the interpreter's teardown.

C++ threads of the stack (Gloo's among them) that are still joinable when the interpreter finalises abort
the process now and then ("terminate called without an active exception", with no Python frame left),
after the worker's work is done and written; torchrun then fails the whole job. A worker that has
destroyed its process group and written its output flushes and leaves with os._exit."""

import os
import sys


def exit_worker(code):
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
