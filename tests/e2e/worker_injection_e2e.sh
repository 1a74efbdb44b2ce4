#!/usr/bin/env bash
# e2e (issue 56, defect 4): partition names and custom event keys holding ; $() backticks quotes
# and newlines, rendered into a `command` as {{partitions}} and {{keys}} (bare, inside '...' and
# inside "...") and read from TRIGD_PARTITIONS / TRIGD_KEYS, go through a real trigd and the real
# reference worker: every run succeeds, no command of theirs runs (no file appears where the
# commands run), and each program receives the values as literal text.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run injection
e2e_tmp
export TRIGD_METRICS="127.0.0.1:$(free_port)"
fail() {
  echo "FAIL: $*"; echo "--- trigd log"; tail -30 "$tmp/trigd.log"; echo "--- worker log"; tail -30 "$tmp/worker.log"
  exit 1
}
work=$tmp/work
out=$tmp/out
mkdir -p "$work" "$out"

"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
# Each command runs in $work, where a value that broke out of its quoting would create a file.
python3 - "$work" "$out" >"$tmp/schedules.json" <<'PY'
import json, sys
work, out = sys.argv[1], sys.argv[2]
def schedule(name, command, trigger):
    return {"name": name, "program": {"name": "inj." + name,
                                      "args": {"command": f"cd {work} && printf '%s\\n' {command} >{out}/{name}"}},
            "trigger": trigger}
parts = {"partition": {"dataset": "inj.raw"}}
keys = {"event": {"name": "inj.key", "count": 5}}
print(json.dumps([
    schedule("bare", "{{partitions}}", parts),
    schedule("single", "'{{partitions}}'", parts),
    schedule("double", '"{{partitions}}"', parts),
    schedule("env", '"$TRIGD_PARTITIONS"', parts),
    schedule("keys-bare", "{{keys}}", keys),
    schedule("keys-single", "'{{keys}}'", keys),
    schedule("keys-double", '"{{keys}}"', keys),
    schedule("keys-env", '"$TRIGD_KEYS"', keys),
]))
PY
"$bin/trigctl" schedules apply -f "$tmp/schedules.json" >/dev/null || fail "apply"
(cd "$work" && exec "$bin/trigd") >"$tmp/trigd.log" 2>&1 & pids+=($!)
(cd "$work" && exec "$bin/trigd-worker") >"$tmp/worker.log" 2>&1 & pids+=($!)

# Sorted as trigd sorts them (bytes), so the expected order is the one rendered.
values=(
  'dt=1; touch pwned'
  "x'; touch pwned2; echo '"
  '$(touch pwned3)'
  '`touch pwned4`'
  $'a"b\nc; touch pwned5'
)
"$bin/trigctl" events emit partition inj.raw "${values[@]}" >/dev/null || fail "emit partitions"
for v in "${values[@]}"; do
  "$bin/trigctl" events emit custom inj.key --key "$v" >/dev/null || fail "emit key"
done

finished() { [[ $(psql "$TRIGD_PG" -tAc "SELECT count(*) FROM runs WHERE state = 'succeeded'") == 8 ]]; }
wait_until 60 finished || fail "8 runs did not succeed: $(psql "$TRIGD_PG" -tAc "SELECT schedule_id, state FROM runs")"

created=$(ls -A "$work")
[[ -z $created ]] || fail "a value ran as a command: $work holds $created"
python3 - "$out" "${values[@]}" <<'PY' || fail "a program did not receive the values as literal text"
import os, sys
out, values = sys.argv[1], sorted(sys.argv[2:], key=lambda v: v.encode())
one_line = " ".join(values) + "\n"
want = {"bare": "".join(v + "\n" for v in values), "single": one_line, "double": one_line, "env": one_line}
ok = True
for name, text in want.items():
    for prefix in ("", "keys-"):
        got = open(os.path.join(out, prefix + name)).read()
        if got != text:
            print(f"{prefix}{name}: got {got!r}, expected {text!r}")
            ok = False
sys.exit(0 if ok else 1)
PY
echo "OK: 5 hostile values through 8 commands and the real worker: nothing ran, all arrived literal"
