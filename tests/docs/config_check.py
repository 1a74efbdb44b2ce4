#!/usr/bin/env python3
"""Keeps docs/configuration.md and docs/troubleshooting.md true to the code.

Usage:
  config_check.py vars ROOT     the TRIGD_ variables read by engine/ (a string literal that is
                                exactly the name: getenv("TRIGD_X"), envname("TRIGD_X"), a flag
                                helper's argument) and by the scripts of tools/ (shell $TRIGD_X
                                or ${TRIGD_X...}; Python os.environ.get / os.environ[...] /
                                os.getenv; C++ getenv or Getenv in tools/benchmarks) are exactly
                                those docs/configuration.md lists in the "environment" column of
                                its tables
  config_check.py metrics ROOT  every trigd_* name README.md and the pages of docs/ quote (the
                                ADRs, records of their time, aside) is a metric engine/metrics
                                registers (histogram series _bucket, _sum, _count included), and
                                docs/troubleshooting.md quotes some
"""

import pathlib
import re
import sys

NAME = r"TRIGD_[A-Z0-9_]*[A-Z0-9]"
CPP_READ = re.compile(r'"(' + NAME + r')"')
SHELL_READ = re.compile(r"\$\{?(" + NAME + r")\b")
PY_READ = re.compile(r"""os\.(?:environ\.get\(|environ\[|getenv\()\s*["'](""" + NAME + r""")["']""")
CPP_GETENV = re.compile(r'[Gg]etenv\(\s*"(' + NAME + r')"')
CPP_SUFFIXES = {".cc", ".h", ".cpp", ".hpp"}


def code_reads(root):
    """{name: [where, ...]} of every TRIGD_ variable the code reads."""
    reads = {}

    def add(name, path, lineno):
        reads.setdefault(name, []).append(f"{path.relative_to(root)}:{lineno}")

    for path in sorted((root / "engine").rglob("*")):
        if path.suffix not in CPP_SUFFIXES:
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith(("//", "#define", "static_assert")):
                continue
            for m in CPP_READ.finditer(line):
                add(m.group(1), path, lineno)
    for path in sorted((root / "tools").rglob("*")):
        if not path.is_file() or "node_modules" in path.parts:
            continue
        if path.suffix in CPP_SUFFIXES:
            pattern = CPP_GETENV
        else:
            try:
                first = path.read_text().split("\n", 1)[0]
            except (UnicodeDecodeError, OSError):
                continue
            if path.suffix == ".py" or (first.startswith("#!") and "python" in first):
                pattern = PY_READ
            elif path.suffix == ".sh" or (first.startswith("#!") and ("bash" in first or first.endswith("sh"))):
                pattern = SHELL_READ
            else:
                continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if line.lstrip().startswith(("#", "//")):
                continue
            for m in pattern.finditer(line):
                add(m.group(1), path, lineno)
    return reads


def page_vars(page):
    """{name: line} of the names in the "environment" column of every table of the page."""
    listed, column = {}, None
    for lineno, line in enumerate(page.read_text().splitlines(), 1):
        if not line.startswith("|"):
            column = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if column is None:
            column = cells.index("environment") if "environment" in cells else -1
            continue
        separator = all(set(c) <= set("-: ") for c in cells) and any("-" in c for c in cells)
        if column < 0 or column >= len(cells) or separator:
            continue
        for name in re.findall(r"`(" + NAME + r")`", cells[column]):
            listed.setdefault(name, lineno)
    return listed


def check_vars(root):
    page = root / "docs/configuration.md"
    reads, listed = code_reads(root), page_vars(page)
    failures = []
    for name in sorted(set(reads) - set(listed)):
        failures.append(f"{name} is read by {', '.join(reads[name][:3])} but docs/configuration.md does not "
                        f"list it: add a row with it in the environment column of the table of the program "
                        f"that reads it")
    for name in sorted(set(listed) - set(reads)):
        failures.append(f"{name} is listed at docs/configuration.md:{listed[name]} but nothing in engine/ or "
                        f"tools/ reads it: remove the row, or the code lost a read")
    return len(set(reads) | set(listed)), failures


def registered_metrics(root):
    text = "\n".join(p.read_text() for p in sorted((root / "engine/metrics").glob("*.cc")))
    names = set()
    for m in re.finditer(r'\.Name\("(trigd_[a-z0-9_]+)"\)', text):
        names.add(m.group(1))
    for name in list(names):
        if re.search(r"Build(?:Histogram|Summary)\(\)\s*\.Name\(\"" + name + r"\"\)", text):
            names |= {name + "_bucket", name + "_sum", name + "_count"}
    return names


def check_metrics(root):
    known = registered_metrics(root)
    failures, quoted = [], 0
    if len(known) < 5:
        return 0, [f"found only {len(known)} metrics in engine/metrics/*.cc: the check's pattern is stale"]
    pages = [root / "README.md"] + sorted(p for p in (root / "docs").rglob("*.md") if "adr" not in p.parts)
    in_troubleshooting = 0
    for page in pages:
        for lineno, line in enumerate(page.read_text().splitlines(), 1):
            for m in re.finditer(r"\btrigd_[a-z0-9_]+", line):
                name = m.group(0)
                if name.endswith("_"):  # a prefix, as in `grep ^trigd_`
                    continue
                quoted += 1
                if page.name == "troubleshooting.md":
                    in_troubleshooting += 1
                if name not in known:
                    failures.append(f"{page.relative_to(root)}:{lineno}: {name} is not a metric engine/metrics registers")
    if in_troubleshooting == 0:
        failures.append("docs/troubleshooting.md quotes no metric")
    return quoted, failures


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    mode, root = sys.argv[1], pathlib.Path(sys.argv[2]).resolve()
    if mode == "vars":
        count, failures = check_vars(root)
        what = "variables"
    elif mode == "metrics":
        count, failures = check_metrics(root)
        what = "metric names"
    else:
        print(__doc__)
        return 2
    for f in failures:
        print("FAIL " + f)
    print(f"{count} {what} checked, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
