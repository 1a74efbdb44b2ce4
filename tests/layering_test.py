#!/usr/bin/env python3
"""The modules' layering: common <- model <- core <- (store, log, metrics) <- api <- app.

Fails, naming file, line and include, when a module includes a module above it, or when
common, model or core include a database, broker, HTTP or operating-system header: their logic
stays pure (no I/O) and is tested without services. The build's per-module include roots
already make an upward project include fail to compile; this test also covers system headers,
which no include root can hide.
"""
import pathlib
import re
import sys

ORDER = ["common", "model", "core", "store", "log", "metrics", "api", "app"]
# The modules each module may include (itself included).
ALLOWED = {
    "common": {"common"},
    "model": {"common", "model"},
    "core": {"common", "model", "core"},
    "store": {"common", "model", "core", "store"},
    "log": {"common", "model", "core", "log"},
    "metrics": {"common", "model", "core", "metrics"},
    "api": {"common", "model", "core", "store", "log", "api"},
    "app": set(ORDER),
}
# Headers that mean I/O or a client library, refused in the pure modules. common/log.cc is the
# one writer of log lines and may use <iostream>.
IO_HEADERS = re.compile(
    r"^(pqxx/|libpq|librdkafka/|rdkafka|prometheus/|httplib|boost/beast|civetweb|"
    r"sys/|unistd\.h|fcntl\.h|fstream$|iostream$|filesystem$|thread$|netinet/|arpa/)")
PURE = {"common", "model", "core"}
IO_ALLOWED_FILES = {"engine/common/log.cc"}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def problems(root: pathlib.Path):
    for module in ORDER:
        for path in sorted((root / "engine" / module).glob("*")):
            if path.suffix not in (".h", ".cc"):
                continue
            rel = path.relative_to(root).as_posix()
            for number, line in enumerate(path.read_text().splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                kind, header = m.groups()
                top = header.split("/", 1)[0]
                if kind == '"' and top in ALLOWED and top not in ALLOWED[module]:
                    yield f"{rel}:{number}: {module} includes {header} ({top} is above {module})"
                if module in PURE and rel not in IO_ALLOWED_FILES and IO_HEADERS.match(header):
                    yield f"{rel}:{number}: {module} includes <{header}>: {module} does no I/O"


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    found = list(problems(root))
    for p in found:
        print(p)
    if not (root / "engine" / "core").is_dir():
        print(f"no engine/core under {root}")
        return 1
    print(f"layering: {len(found)} problem(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
