"""The installed versions of the packages a measurement ran on, for its provenance."""
from importlib import metadata


def installed_versions(names):
    """{package: version} for those of `names` that are installed."""
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out
