#!/usr/bin/env python3
"""Regenerates the example outputs in README.md and docs/*.md from the commands that make them.

An example is a fenced block right after a marker line that names its command:

    <!-- example: shard-plan --tables data/examples/tables-4gpu.json --gpus 4 --mem-per-gpu 4GiB -->
    ```
    ...what the command prints on stdout...
    ```

The command runs under bash in a scratch directory holding links to the repository's data/ and models/,
with `shard-plan` on PATH (the --binary given), so files it writes go nowhere. With --check nothing is
written: it exits 1 and prints a diff when a block differs from what the command prints now, ignoring
wall-clock times ("in 0.031 s"). Standard library only.

  tools/regen_examples.py --binary build/shard-plan           # rewrite the blocks
  tools/regen_examples.py --binary build/shard-plan --check   # what CI runs
"""
import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^<!-- example: (.*) -->$")
SECONDS = re.compile(r"\d+\.\d+ s\b")


def documents():
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def run(command, binary, scratch):
    bin_dir = Path(scratch) / "bin"
    bin_dir.mkdir(exist_ok=True)
    link = bin_dir / "shard-plan"
    if not link.exists():
        link.symlink_to(Path(binary).resolve())
    for name in ("data", "models"):
        target = Path(scratch) / name
        if not target.exists():
            target.symlink_to(ROOT / name)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ.get('PATH', '')}")
    env.pop("SHARDPLAN_MODEL", None)
    result = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=scratch, env=env, capture_output=True,
                            text=True)
    if result.returncode != 0:
        sys.exit(f"regen_examples: `{command}` exited {result.returncode}:\n{result.stderr}")
    return result.stdout


def process(path, binary, scratch, check):
    lines = path.read_text().split("\n")
    out, problems, i = [], [], 0
    while i < len(lines):
        out.append(lines[i])
        match = MARKER.match(lines[i])
        if not match:
            i += 1
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            sys.exit(f"regen_examples: {path}:{i + 1}: an example marker must be followed by a fenced block")
        end = i + 2
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end >= len(lines):
            sys.exit(f"regen_examples: {path}:{i + 2}: the example's block is not closed")
        old = lines[i + 2:end]
        new = run(match.group(1), binary, scratch).rstrip("\n").split("\n")
        if [SECONDS.sub("T s", l) for l in old] != [SECONDS.sub("T s", l) for l in new]:
            problems.append("".join(difflib.unified_diff([l + "\n" for l in old], [l + "\n" for l in new],
                                                         f"{path.name} (in the file)", f"{match.group(1)} (now)")))
        out.append(lines[i + 1])
        out.extend(new)
        out.append(lines[end])
        i = end + 1
    if not check and problems:
        path.write_text("\n".join(out))
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True, help="the shard-plan executable to run")
    parser.add_argument("--check", action="store_true", help="only report blocks that differ (exit 1)")
    args = parser.parse_args()
    problems = []
    with tempfile.TemporaryDirectory() as scratch:
        for path in documents():
            problems += process(path, args.binary, scratch, args.check)
    if args.check and problems:
        sys.stdout.write("".join(problems))
        print(f"regen_examples: {len(problems)} example(s) out of date; run tools/regen_examples.py --binary "
              "build/shard-plan", file=sys.stderr)
        return 1
    print(f"regen_examples: {'checked' if args.check else 'regenerated'} the examples; {len(problems)} changed",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
