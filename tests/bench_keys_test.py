#!/usr/bin/env python3
"""The keys of the benchmarks' JSON last lines that docs/performance.md and issue 38 rely on
(tools/benchmarks/NAME.cc sets each as j["key"]); a renamed key fails here, not in a report."""
import re
import sys
from pathlib import Path

REQUIRED = {
    "launch": ["per_s", "ratio", "limit_ratio", "peer_ratio", "peer_per_s"],
    "append": ["per_s", "ratio", "limit_ratio"],
    "latency": ["p50_ms", "p99_ms", "histogram_p50_ms", "histogram_consistent"],
    "storm": ["seconds"],
}

root = Path(sys.argv[1])
failed = False
for scenario, keys in REQUIRED.items():
    source = root / "tools" / "benchmarks" / f"{scenario}.cc"
    written = set(re.findall(r'\bj\["([a-z0-9_]+)"\]\s*=', source.read_text()))
    for key in keys:
        if key not in written:
            print(f"{source}: the JSON last line has no key {key!r}")
            failed = True
sys.exit(1 if failed else 0)
