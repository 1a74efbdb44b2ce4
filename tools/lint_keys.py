#!/usr/bin/env python3
"""tools/lint_keys.py BUILD CACHE BASELINE UNIT...: prints "UNIT KEY" for each unit clang-tidy must check.

KEY hashes what clang-tidy's verdict on the unit depends on: its preprocessed text and compile
flags (with the checkout's path taken out, so clones share keys), .clang-tidy and clang-tidy's
version. A unit whose key is a file in CACHE (this machine's passes) or a line of BASELINE (the
passes committed with the tree, tools/lint-baseline.txt) passed with exactly these inputs and is
left out; CACHE "off" leaves out nothing. BASELINE "all" prints every unit's key, whether it
passed or not (tools/lint baseline writes the baseline from it).
"""
import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys


def main() -> int:
    build, cache, baseline, units = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    every = baseline == "all"
    passed = set()
    if not every and cache != "off" and os.path.exists(baseline):
        with open(baseline) as f:
            passed = {line.split()[0] for line in f if line.strip() and not line.startswith("#")}
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = {os.path.realpath(e["file"]): e for e in json.load(f)}
    common = hashlib.sha256()
    with open(os.path.join(here, ".clang-tidy"), "rb") as f:
        common.update(f.read())
    common.update(subprocess.run(["clang-tidy", "--version"], capture_output=True, check=True).stdout)

    def key(unit: str) -> str:
        entry = commands.get(os.path.realpath(os.path.join(here, unit)))
        if entry is None or (cache == "off" and not every):
            return ""  # not in the build: clang-tidy says so itself
        args = shlex.split(entry["command"])
        # The compiler's own command, preprocessing only: drop -o OUT and -c, keep every flag.
        pre, skip = [], False
        for a in args:
            if skip:
                skip = False
                continue
            if a == "-o":
                skip = True
                continue
            if a == "-c":
                continue
            pre.append(a)
        out = subprocess.run(pre + ["-E", "-P"], cwd=entry["directory"], capture_output=True)
        if out.returncode != 0:
            return ""
        h = common.copy()
        h.update(" ".join(pre).replace(here, "@SRC@").encode())
        h.update(out.stdout.replace(here.encode(), b"@SRC@"))
        return h.hexdigest()

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        keys = list(pool.map(key, units))
    for unit, k in zip(units, keys):
        if not k:
            print(unit, "none")
        elif every or (k not in passed and not os.path.exists(os.path.join(cache, k))):
            print(unit, k)
    return 0


if __name__ == "__main__":
    sys.exit(main())
