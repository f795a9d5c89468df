"""Installs a distribution and everything it requires into another virtual environment of the same
Python by hard-linking the files the source environment already installed (their RECORD), so that a
second environment with torch's 5 GB costs no disk and no download. pip then sees them as installed.
Console scripts are copied with their interpreter line pointed at the target environment.
  SOURCE_VENV/bin/python scripts/link-installed.py TARGET_VENV DIST [DIST ...]
Exits 1, linking nothing, when a required distribution is missing from the source environment."""

import os
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def required_closure(names):
    """The distributions `names` need, with the extras each is asked for, as {canonical name: dist}."""
    found, seen, todo = {}, set(), [(n, frozenset()) for n in names]
    while todo:
        name, extras = todo.pop()
        key = (canonicalize_name(name), extras)
        if key in seen:
            continue
        seen.add(key)
        dist = metadata.distribution(name)  # PackageNotFoundError names what is missing
        found[canonicalize_name(name)] = dist
        envs = [{"extra": e} for e in extras] or [{"extra": ""}]
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                todo.append((req.name, frozenset(req.extras)))
    return found


def link_file(source: Path, target: Path, python: Path):
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() or target.is_symlink():
        target.unlink()
    if target.parent.name == "bin":  # a console script: its first line names the interpreter
        text = source.read_bytes()
        if text.startswith(b"#!"):
            text = b"#!" + bytes(python) + text[text.index(b"\n"):]
        target.write_bytes(text)
        target.chmod(source.stat().st_mode)
    else:
        os.link(source, target)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    target_venv, names = Path(argv[1]).resolve(), argv[2:]
    source_site = Path(sysconfig.get_paths()["purelib"])
    target_site = target_venv / source_site.relative_to(Path(sys.prefix))
    if not target_site.is_dir():
        sys.exit(f"link-installed: {target_site} is not a site-packages of the same Python")
    try:
        dists = required_closure(names)
    except metadata.PackageNotFoundError as missing:
        sys.exit(f"link-installed: {missing} is not installed in {sys.prefix}")
    linked = 0
    for dist in dists.values():
        for record in dist.files or []:
            source = Path(os.path.normpath(source_site / record))
            if source.is_file():
                link_file(source, Path(os.path.normpath(target_site / record)), target_venv / "bin" / "python")
                linked += 1
    print(f"link-installed: {len(dists)} distributions, {linked} files linked into {target_venv}",
          file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
