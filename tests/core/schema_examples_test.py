#!/usr/bin/env python3
"""Keeps schema/schedule.schema.json (for editors) in step with the engine's parser.

Usage: schema_examples_test.py PROJECT_SOURCE_DIR

- every tools/examples/**/*.json validates against the schema;
- every valid golden document (tests/core/golden/schedules/valid_*.json) validates, and so does
  its canonical form (the .expected file);
- for every structural error of an invalid golden document (unknown field, bad enum value,
  wrong type, missing required field, empty array), the schema reports an error at the same
  place: at the field itself (or within it), or, for an unknown or missing field, at its
  object, naming the field. Semantic errors (bad cron, unknown time zone, start == end, ...)
  are the parser's alone and are not asserted here.
"""

import json
import pathlib
import re
import sys

import jsonschema

# The parser's wording for structural problems (see engine/core/schedule_parser.cc).
STRUCTURAL = re.compile(
    r": unknown field \("
    r"|: unknown (status|catchup|on_unmet|on_upstream_failure|action) \""
    r"|(^|: )expected (a|an) .*, got "
    r"|: required$"
    r"|: must not be empty$"
)


def parse_path(path):
    """'[1].trigger.all[0].partition' -> [1, 'trigger', 'all', 0, 'partition']."""
    parts = []
    for token in re.finditer(r"\[(\d+)\]|([^.\[\]]+)", path):
        parts.append(int(token.group(1)) if token.group(1) else token.group(2))
    return parts


def all_errors(errors):
    """Schema errors with those nested under oneOf/anyOf, which jsonschema keeps in context."""
    for error in errors:
        yield error
        yield from all_errors(error.context)


def schema_reports(validator, document, line):
    """Whether the schema has an error where the parser's error line points."""
    # ScheduleError::ToString(): "path: reason", or the bare reason for the document itself.
    # Paths hold no ": ", reasons may, so the first one separates them.
    path, sep, reason = line.partition(": ")
    if not sep:
        path, reason = "", line
    parts = parse_path(path)
    names_a_field = reason == "required" or reason.startswith("unknown field")
    where = parts[:-1] if names_a_field else parts
    for error in all_errors(validator.iter_errors(document)):
        at = list(error.absolute_path)
        if names_a_field:
            if at == where and repr(parts[-1]) in error.message:
                return True
        elif at[:len(where)] == where:
            # The parser reports a bad array element at the array ("status: unknown status").
            return True
    return False


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    schema = json.loads((root / "schema/schedule.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    file_validator = jsonschema.Draft202012Validator(schema)

    passed = 0
    failures = []

    def check(name, ok, detail=""):
        nonlocal passed
        if ok:
            passed += 1
        else:
            failures.append(f"{name}: {detail}")

    def schema_errors(validator, document):
        return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
                for e in validator.iter_errors(document)]

    examples = sorted((root / "tools/examples").rglob("*.json"))
    check("tools/examples holds examples", len(examples) >= 6, f"found {len(examples)}")
    for path in examples:
        errors = schema_errors(file_validator, json.loads(path.read_text()))
        check(str(path.relative_to(root)), not errors, "; ".join(errors))

    golden = sorted((root / "tests/core/golden/schedules").glob("*.json"))
    check("golden folder holds cases", len(golden) >= 45, f"found {len(golden)}")
    for path in golden:
        name = str(path.relative_to(root))
        expected = path.with_suffix(".expected").read_text()
        try:
            document = json.loads(path.read_text())
        except json.JSONDecodeError:
            # A syntax-error case: there is nothing to validate.
            check(name + " is an invalid_ case", path.stem.startswith("invalid_"))
            continue

        if path.stem.startswith("valid_"):
            errors = schema_errors(file_validator, document)
            check(name, not errors, "; ".join(errors))
            errors = schema_errors(file_validator, json.loads(expected))
            check(name + " (canonical form)", not errors, "; ".join(errors))
            continue

        for line in expected.splitlines():
            if not STRUCTURAL.search(line):
                continue
            check(f"{name}: {line}", schema_reports(file_validator, document, line),
                  "the parser reports it, the schema does not")

    for failure in failures:
        print("FAIL " + failure)
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
