"""The installed versions of the packages a measurement ran on, and the TorchRec versions shardplan supports
(standard library only: nothing here imports TorchRec)."""
import os
import warnings
from importlib import metadata

# The TorchRec minor versions shardplan is tested with (python/constraints.txt pins the stack CI runs).
# TorchRec N pairs with fbgemm-gpu N and torch 2.(N+5): torchrec 1.9 with fbgemm-gpu 1.9 and torch 2.14.
SUPPORTED_TORCHREC = ((1, 9),)
# Set to 1 to use another TorchRec anyway (a warning instead of the error).
ALLOW_UNTESTED_ENV = "SHARDPLAN_ALLOW_UNTESTED_TORCHREC"
FBGEMM_PACKAGES = ("fbgemm-gpu", "fbgemm-gpu-cpu")


class UnsupportedTorchRec(ImportError):
    """The installed TorchRec (or its FBGEMM) is not one shardplan supports."""


def installed_versions(names):
    """{package: version} for those of `names` that are installed."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def _minor(version):
    parts = version.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def supported_torchrec_text():
    return " or ".join(f"{major}.{minor}.x" for major, minor in SUPPORTED_TORCHREC)


def torchrec_problem(versions=None):
    """Why the installed TorchRec stack is not supported, or None (also when TorchRec is not installed)."""
    versions = installed_versions(("torchrec",) + FBGEMM_PACKAGES) if versions is None else versions
    torchrec = versions.get("torchrec")
    if torchrec is None:
        return None
    if _minor(torchrec) not in SUPPORTED_TORCHREC:
        return (f"shardplan supports TorchRec {supported_torchrec_text()} (with the fbgemm-gpu of the same version "
                f"and torch 2.14); this environment has torchrec {torchrec}")
    fbgemm = {name: v for name, v in versions.items() if name in FBGEMM_PACKAGES}
    mismatched = {name: v for name, v in fbgemm.items() if _minor(v) != _minor(torchrec)}
    if mismatched:
        have = ", ".join(f"{name} {v}" for name, v in sorted(mismatched.items()))
        return f"torchrec {torchrec} needs the fbgemm-gpu of its own version; this environment has {have}"
    return None


def require_supported_torchrec(versions=None):
    """Raises UnsupportedTorchRec naming the supported versions, unless SHARDPLAN_ALLOW_UNTESTED_TORCHREC=1
    turns the error into a warning."""
    problem = torchrec_problem(versions)
    if problem is None:
        return
    if os.environ.get(ALLOW_UNTESTED_ENV) == "1":
        warnings.warn(f"{problem}; going on because {ALLOW_UNTESTED_ENV}=1", RuntimeWarning, stacklevel=2)
        return
    raise UnsupportedTorchRec(f"{problem}. Install a supported one, or set {ALLOW_UNTESTED_ENV}=1 to try it anyway")
