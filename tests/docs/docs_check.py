#!/usr/bin/env python3
"""Keeps README.md and docs/ true to the repository.

Usage:
  docs_check.py links ROOT              every relative link of README.md and docs/**/*.md names a
                                        file or folder of the repository, and every #anchor a
                                        heading of its page; no link leaves the repository
  docs_check.py examples ROOT TRIGCTL   every ```json block parses; those that are schedule
                                        documents (objects, or arrays of objects, with "program"
                                        and "trigger") are given to the real parser
                                        (`trigctl schedules apply`, with a PostgreSQL that cannot
                                        be reached: exit 1 is a refusal, exit 2 means the parser
                                        accepted the document and the apply went on to connect).
                                        A block preceded by <!-- invalid --> must be refused.
  docs_check.py schema-tables ROOT      docs/schedules.md has a table for every object of
                                        schema/schedule.schema.json that has properties (marked
                                        <!-- schema: JSON-POINTER -->) and its first column lists
                                        exactly those properties
"""

import json
import pathlib
import re
import subprocess
import sys
import tempfile

LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^```(\w*)\s*$")


def pages(root):
    out = [root / "README.md"]
    out += sorted((root / "docs").rglob("*.md"))
    return [p for p in out if p.exists()]


def strip_code(text):
    """The text without fenced blocks and inline code (links there are examples, not links)."""
    lines, inside = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()) or line.strip().startswith("```"):
            inside = not inside
            lines.append("")
            continue
        lines.append("" if inside else re.sub(r"`[^`]*`", "``", line))
    return "\n".join(lines)


def slug(heading):
    """GitHub's anchor of a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for line in strip_code_keep_headings(path.read_text()):
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def strip_code_keep_headings(text):
    inside = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            inside = not inside
            continue
        if not inside:
            yield line


def check_links(root):
    failures, checked = [], 0
    for page in pages(root):
        text = strip_code(page.read_text())
        for lineno, line in enumerate(text.splitlines(), 1):
            for m in LINK.finditer(line):
                target = m.group(1)
                where = f"{page.relative_to(root)}:{lineno}: {target}"
                checked += 1
                if re.match(r"^[a-z]+:", target):
                    if page.name == "README.md" and page.parent == root:
                        failures.append(where + ": the README links outside the repository")
                    continue
                path_part, _, anchor = target.partition("#")
                dest = page if not path_part else (page.parent / path_part).resolve()
                try:
                    dest.relative_to(root.resolve())
                except ValueError:
                    failures.append(where + ": outside the repository")
                    continue
                if not dest.exists():
                    failures.append(where + ": no such file or folder")
                    continue
                if anchor:
                    if dest.suffix != ".md" or dest.is_dir():
                        failures.append(where + ": an anchor into a file that is not a page")
                    elif anchor not in anchors(dest):
                        failures.append(where + f": no heading #{anchor} in {dest.relative_to(root.resolve())}")
    return checked, failures


def json_blocks(path):
    """(line, text, marked_invalid) of each ```json block."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i].strip())
        if m and m.group(1) == "json":
            start = i
            invalid = any(l.strip() == "<!-- invalid -->" for l in lines[max(0, i - 2):i])
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            yield start + 1, "\n".join(body), invalid
        elif lines[i].strip().startswith("```"):
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                i += 1
        i += 1


def is_schedule(doc):
    items = doc if isinstance(doc, list) else [doc]
    return bool(items) and all(isinstance(d, dict) and "program" in d and "trigger" in d for d in items)


def check_examples(root, trigctl):
    failures, schedules = [], 0
    for page in pages(root):
        for line, text, invalid in json_blocks(page):
            where = f"{page.relative_to(root)}:{line}"
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as e:
                failures.append(f"{where}: not JSON: {e}")
                continue
            if not is_schedule(doc):
                continue
            schedules += 1
            with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
                f.write(text)
                f.flush()
                r = subprocess.run([trigctl, "--pg", "host=127.0.0.1 port=1 connect_timeout=2",
                                    "schedules", "apply", "-f", f.name],
                                   capture_output=True, text=True, timeout=60)
            refused = r.returncode == 1 and "nothing applied" in r.stderr
            accepted = r.returncode == 2 and "PostgreSQL" in r.stderr
            if not refused and not accepted:
                failures.append(f"{where}: unexpected trigctl exit {r.returncode}: {r.stderr.strip()}")
            elif invalid and not refused:
                failures.append(f"{where}: marked invalid but the parser accepts it")
            elif not invalid and refused:
                problems = "; ".join(l.split(": ", 1)[-1] for l in r.stderr.splitlines()[:-1])
                failures.append(f"{where}: the parser refuses it: {problems}")
    if schedules < 5:
        failures.append(f"only {schedules} schedule documents found in the docs (expected at least 5)")
    return schedules, failures


def resolve(schema, pointer):
    node = schema
    for part in pointer.strip("/").split("/"):
        node = node[part]
    return node


def schema_objects(node, pointer=""):
    """JSON pointers of every schema object that has properties."""
    if isinstance(node, dict):
        if isinstance(node.get("properties"), dict) and pointer:
            yield pointer
        for key, value in node.items():
            yield from schema_objects(value, f"{pointer}/{key}")


def check_schema_tables(root):
    schema = json.loads((root / "schema/schedule.schema.json").read_text())
    lines = (root / "docs/schedules.md").read_text().splitlines()
    tables = {}
    for i, line in enumerate(lines):
        m = re.match(r"^<!-- schema: (\S+) -->$", line.strip())
        if not m:
            continue
        fields, j = [], i + 1
        while j < len(lines) and not lines[j].startswith("|"):
            j += 1
        rows = 0
        while j < len(lines) and lines[j].startswith("|"):
            rows += 1
            if rows > 2:  # after the header and the separator
                cell = lines[j].split("|")[1].strip()
                fields.append(cell.strip("`"))
            j += 1
        tables[m.group(1).lstrip("/")] = (i + 1, fields)
    failures = []
    wanted = sorted(p.lstrip("/") for p in schema_objects(schema))
    for pointer in wanted:
        if pointer not in tables:
            failures.append(f"docs/schedules.md has no table for schema object {pointer} (mark it <!-- schema: {pointer} -->)")
    for pointer, (line, fields) in tables.items():
        try:
            props = set(resolve(schema, pointer)["properties"])
        except (KeyError, TypeError):
            failures.append(f"docs/schedules.md:{line}: {pointer} is not an object with properties in the schema")
            continue
        for name in sorted(props - set(fields)):
            failures.append(f"docs/schedules.md:{line}: {pointer}: field {name} is in the schema, not in the table")
        for name in sorted(set(fields) - props):
            failures.append(f"docs/schedules.md:{line}: {pointer}: field {name} is in the table, not in the schema")
        if len(fields) != len(set(fields)):
            failures.append(f"docs/schedules.md:{line}: {pointer}: a field is listed twice")
    return len(tables), failures


def main():
    mode, root = sys.argv[1], pathlib.Path(sys.argv[2]).resolve()
    if mode == "links":
        count, failures = check_links(root)
        what = "links"
    elif mode == "examples":
        count, failures = check_examples(root, sys.argv[3])
        what = "schedule documents"
    elif mode == "schema-tables":
        count, failures = check_schema_tables(root)
        what = "tables"
    else:
        print(__doc__)
        return 2
    for f in failures:
        print("FAIL " + f)
    print(f"{count} {what} checked, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
