#!/usr/bin/env python3
"""Each binary prints its version: `NAME --version` writes "NAME X.Y.Z" on stdout and exits 0,
X.Y.Z being project(VERSION) of CMakeLists.txt, and CHANGELOG.md has a section for that version.

Usage: version_test.py ROOT BIN_DIR
"""

import pathlib
import re
import subprocess
import sys


def main():
    root, bin_dir = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    m = re.search(r"project\(trigd VERSION (\d+\.\d+\.\d+)", (root / "CMakeLists.txt").read_text())
    if not m:
        print("FAIL CMakeLists.txt: no project(trigd VERSION X.Y.Z)")
        return 1
    version = m.group(1)
    failures = []
    for name in ("trigd", "trigctl", "trigd-worker"):
        # An empty environment: --version must not need Kafka, PostgreSQL or any setting.
        r = subprocess.run([str(bin_dir / name), "--version"], capture_output=True, text=True, timeout=20, env={})
        want = f"{name} {version}"
        if r.returncode != 0 or r.stdout.strip() != want or r.stderr:
            failures.append(f"{name} --version: exit {r.returncode}, stdout {r.stdout.strip()!r}, "
                            f"stderr {r.stderr.strip()!r}; expected exit 0 and {want!r}")
    changelog = (root / "CHANGELOG.md").read_text() if (root / "CHANGELOG.md").exists() else ""
    if not re.search(r"^## \[" + re.escape(version) + r"\]", changelog, re.M):
        failures.append(f"CHANGELOG.md has no section '## [{version}]' for the version CMakeLists.txt gives")
    for f in failures:
        print("FAIL " + f)
    print(f"version {version}: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
