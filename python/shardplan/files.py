"""Writing output files whole or not at all (standard library only)."""

import json
import os
import tempfile


def _mode_for(path):
    # The replaced file's permissions, else what a plain open() would give a new file.
    try:
        return os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_text_atomically(path, text):
    """`text` to `path` through a temporary file beside it, renamed over it only when complete."""
    directory = os.path.dirname(os.path.abspath(path))
    mode = _mode_for(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.tmp.", dir=directory)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_json_atomically(path, doc, indent=1):
    write_text_atomically(path, json.dumps(doc, indent=indent) + "\n")
