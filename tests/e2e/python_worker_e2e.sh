#!/usr/bin/env bash
# e2e: the example worker of docs/worker.md (tools/examples/worker.py) against a real trigd and
# Kafka: a run whose command exits 0 ends succeeded, one that exits 3 ends failed, and a run
# whose command outlives a third of its heartbeat_timeout heartbeats (it is not declared lost).
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run pyworker
e2e_tmp
export TRIGD_METRICS="127.0.0.1:$(free_port)"
fail() { echo "FAIL: $*"; echo "--- trigd log"; cat "$tmp/trigd.log"; echo "--- worker log"; cat "$tmp/worker.log"; exit 1; }

"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
cat >"$tmp/schedules.json" <<'JSON'
[
  {"name": "py-ok", "program": {"name": "py.ok", "args": {"command": "test -n \"$TRIGD_RUN_ID\""}},
   "trigger": {"partition": {"dataset": "py.ok"}}},
  {"name": "py-fail", "program": {"name": "py.fail", "args": {"command": "exit 3"}},
   "trigger": {"partition": {"dataset": "py.fail"}}},
  {"name": "py-slow", "program": {"name": "py.slow", "args": {"command": "sleep 4"}},
   "trigger": {"partition": {"dataset": "py.slow"}}, "heartbeat_timeout": "3s"}
]
JSON
"$bin/trigctl" schedules apply -f "$tmp/schedules.json" >/dev/null || fail "apply"
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)
python3 "$src/tools/examples/worker.py" >"$tmp/worker.log" 2>&1 & pids+=($!)

for d in py.ok py.fail py.slow; do "$bin/trigctl" events emit partition "$d" p1 >/dev/null || fail "emit $d"; done

run_state() {  # run_state SCHEDULE -> the state of its newest run, or nothing
  "$bin/trigctl" runs list --schedule "default/$1" --json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r[0]["state"] if r else "")'
}
wait_state() {  # wait_state SCHEDULE STATE SECONDS
  local deadline=$((SECONDS + $3)) state=""
  while ((SECONDS < deadline)); do
    state=$(run_state "$1")
    [[ $state == "$2" ]] && return 0
    sleep 0.5
  done
  fail "$1: run state \"$state\", expected $2"
}
wait_state py-ok succeeded 60
wait_state py-fail failed 60
wait_state py-slow succeeded 60
heartbeats=$(kcat -C -b "$TRIGD_KAFKA" -t "${run}.events.program" -e -q | grep -c '"program": "py.slow".*"status": "heartbeat"' || true)
((heartbeats >= 2)) || fail "py.slow sent $heartbeats heartbeats, expected at least 2 in 4 s with a 3 s timeout"
lost=$(psql "$TRIGD_PG" -tAc "SELECT count(*) FROM runs WHERE reason = 'lost'")
[[ $lost == 0 ]] || fail "$lost runs declared lost"
echo "PASS python worker: succeeded, failed, heartbeats $heartbeats"
