# Sourced by the example workers' e2e tests (python_worker_e2e.sh, go_worker_e2e.sh) after
# lib.sh, e2e_run, e2e_tmp and their fail(), with `label` and the `worker` command (an array)
# set: the same checks for any worker of docs/worker.md. It applies three schedules, starts trigd
# and the worker (its log in $tmp/worker.log), and checks that a run whose command exits 0 ends
# succeeded, one that exits 3 ends failed, one that outlives a third of its heartbeat_timeout
# heartbeats (and is not declared lost), and that requests of an attempt trigd ended or past
# their start_by are not started while a retry is.
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
"${worker[@]}" >"$tmp/worker.log" 2>&1 & pids+=($!)

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
heartbeats=$(kcat -C -b "$TRIGD_KAFKA" -t "${run}.events.program" -e -q | grep -c '"program": *"py.slow".*"status": *"heartbeat"' || true)
((heartbeats >= 2)) || fail "py.slow sent $heartbeats heartbeats, expected at least 2 in 4 s with a 3 s timeout"
lost=$(psql "$TRIGD_PG" -tAc "SELECT count(*) FROM runs WHERE reason = 'lost'")
[[ $lost == 0 ]] || fail "$lost runs declared lost"
# It starts no attempt that trigd ended (the control topic) nor a request past its start_by; a
# later attempt of an ended run (a retry) runs. Each command leaves a file if it runs.
mkdir "$tmp/ran"
kcat -P -b "$TRIGD_KAFKA" -t "${run}.control" -k ctl-1 <<'JSON'
{"type":"attempt_ended","run_id":"ctl-1","attempt":1,"status":"lost","reason":"lost","final":false,"start_by":"2100-01-01T00:00:00.000Z","time":"2026-11-27T00:00:00.000Z"}
JSON
python3 - "$tmp" >"$tmp/requests" <<'PY'
import json, sys
for run_id, attempt, start_by in [("ctl-1", 1, "2100-01-01T00:00:00.000Z"), ("stale-1", 1, "2026-01-01T00:10:00.000Z"),
                                  ("ctl-1", 2, "2100-01-01T00:00:00.000Z")]:
    print("py.ctl\t" + json.dumps({"run_id": run_id, "schedule": "default/py-ctl", "schedule_version": 1,
        "program": {"name": "py.ctl", "args": {"command": f"touch {sys.argv[1]}/ran/{run_id}.{attempt}"}, "target": "default"},
        "attempt": attempt, "heartbeat_timeout": "2m", "launched_at": "2026-01-01T00:00:00.000Z", "start_by": start_by,
        "triggered_by": []}))
PY
kcat -P -b "$TRIGD_KAFKA" -t "${run}.launch.default" -K $'\t' -l "$tmp/requests" || fail "produce the requests"
deadline=$((SECONDS + 30))
until [[ -e "$tmp/ran/ctl-1.2" ]] || ((SECONDS > deadline)); do sleep 0.3; done
[[ -e "$tmp/ran/ctl-1.2" ]] || fail "attempt 2 of ctl-1 (a retry of an ended attempt) did not run"
[[ -e "$tmp/ran/ctl-1.1" ]] && fail "attempt 1 of ctl-1, ended by trigd, ran"
[[ -e "$tmp/ran/stale-1.1" ]] && fail "stale-1, past its start_by, ran"
grep -q "run ctl-1 attempt 1: not started: trigd ended attempt 1 (lost, reason lost)" "$tmp/worker.log" || fail "no reason for ctl-1"
grep -q "run stale-1 attempt 1: not started: past its start deadline" "$tmp/worker.log" || fail "no reason for stale-1"
echo "PASS $label: succeeded, failed, heartbeats $heartbeats; an ended attempt and a stale request not started"
