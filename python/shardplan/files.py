"""Writing output files whole or not at all (standard library only)."""

import json
import os
import tempfile


def write_text_atomically(path, text):
    """`text` to `path` through a temporary file beside it, renamed over it only when complete."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.tmp.", dir=directory)
    try:
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
