#!/usr/bin/env bash
# e2e: a worker never starts a run attempt that trigd has ended, nor one past its start deadline
# (docs/adr/0060-workers-start-no-ended-attempt.md). Runs are launched with no worker up; a dead worker's `started`
# reports (emitted by the test) make them running, and with heartbeat_timeout 2s trigd ends
# them as lost: three fail (no retry), one is retried as attempt 2. A launch request past its
# start_by is put on the launch topic by hand. Then a worker starts (a new group: it reads the
# launch topic from the beginning): it starts none of the ended attempts nor the stale request
# (no `started` report of its own, no side-effect file, one log line each saying why), runs
# the retry (attempt 2) and a fresh run launched afterwards. The old worker ran them all.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run control
e2e_tmp
port=$(free_port)
export TRIGD_METRICS="127.0.0.1:$port"
fail() {
  echo "FAIL: $*"; echo "--- trigd log"; tail -30 "$tmp/trigd.log"
  echo "--- worker log"; cat "$tmp/worker.log" 2>/dev/null || true
  "$bin/trigctl" runs list || true
  exit 1
}
mkdir "$tmp/ran"
# Each attempt that runs leaves a file named after its run id and attempt.
cat >"$tmp/schedules.json" <<EOF
[{"namespace": "default", "name": "ended", "program": {"name": "ended.job",
  "args": {"command": "touch $tmp/ran/\$TRIGD_RUN_ID.\$TRIGD_ATTEMPT"}},
  "trigger": {"partition": {"dataset": "ended.raw"}}, "heartbeat_timeout": "2s"},
 {"namespace": "default", "name": "retried", "program": {"name": "retried.job",
  "args": {"command": "touch $tmp/ran/\$TRIGD_RUN_ID.\$TRIGD_ATTEMPT"}},
  "trigger": {"partition": {"dataset": "retried.raw"}}, "heartbeat_timeout": "2s",
  "retry": {"max_attempts": 2, "backoff": "1s"}}]
EOF
"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
"$bin/trigctl" schedules apply -f "$tmp/schedules.json" >/dev/null || fail "apply"
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)

launches() { kcat -C -b "$TRIGD_KAFKA" -t "${run}.launch.default" -e -q 2>/dev/null || true; }
has_launches() { [[ $(launches | wc -l) -ge $1 ]]; }
runs_of() {  # runs_of SCHEDULE: "run_id state attempt" per run
  "$bin/trigctl" runs list --schedule "$1" --json | python3 -c '
import json, sys
for r in json.load(sys.stdin): print(r["run_id"], r["state"], r["attempt"])'
}
for dt in 1 2 3; do "$bin/trigctl" events emit partition ended.raw "dt=$dt" >/dev/null || fail "emit ended dt=$dt"; done
"$bin/trigctl" events emit partition retried.raw dt=1 >/dev/null || fail "emit retried"
wait_until 60 has_launches 4 || fail "4 launch requests expected, got $(launches | wc -l)"
# A worker took each and died: its started reports, then silence.
ended_runs=$(runs_of default/ended | awk '{print $1}')
retried_run=$(runs_of default/retried | awk '{print $1}')
for id in $ended_runs; do "$bin/trigctl" events emit program ended.job started --run-id "$id" >/dev/null; done
"$bin/trigctl" events emit program retried.job started --run-id "$retried_run" >/dev/null
all_failed() { [[ $(runs_of default/ended | awk '$2 == "failed"' | wc -l) == 3 ]]; }
wait_until 60 all_failed || fail "the ended runs were not failed as lost: $(runs_of default/ended)"
second_attempt() { [[ $(runs_of default/retried) == "$retried_run launched 2" ]]; }
wait_until 60 second_attempt || fail "the retried run did not launch attempt 2: $(runs_of default/retried)"
wait_until 30 has_launches 5 || fail "no launch request for attempt 2"
controls() { kcat -C -b "$TRIGD_KAFKA" -t "${run}.control" -e -q 2>/dev/null | wc -l; }
four_controls() { [[ $(controls) == 4 ]]; }
wait_until 30 four_controls || fail "expected 4 control messages (3 failed, 1 lost), got $(controls)"
control=$(controls)
echo "3 runs failed as lost and 1 retried with no worker up; $control control messages"
# A request past its start deadline (no trigd run behind it: nothing reports on it).
python3 - "$tmp" >"$tmp/stale" <<'PY'
import json, sys
print("stale.job\t" + json.dumps({
    "run_id": "stale-1", "schedule": "default/stale", "schedule_version": 1,
    "program": {"name": "stale.job", "args": {"command": "touch %s/ran/stale-1.1" % sys.argv[1]}, "target": "default"},
    "attempt": 1, "heartbeat_timeout": "2s", "launched_at": "2026-01-01T00:00:00.000Z",
    "start_by": "2026-01-01T00:10:00.000Z", "triggered_by": []}))
PY
kcat -P -b "$TRIGD_KAFKA" -t "${run}.launch.default" -K $'\t' -l "$tmp/stale" || fail "produce the stale request"

"$bin/trigd-worker" --group-id "$run-late" >"$tmp/worker.log" 2>&1 & worker=$!; pids+=($worker)
retried_done() { [[ $(runs_of default/retried) == "$retried_run succeeded 2" ]]; }
wait_until 60 retried_done || fail "attempt 2 of $retried_run did not succeed: $(runs_of default/retried)"
[[ -e "$tmp/ran/$retried_run.2" ]] || fail "attempt 2 of $retried_run left no file"
# A run launched now runs.
"$bin/trigctl" events emit partition ended.raw dt=4 >/dev/null || fail "emit ended dt=4"
fresh_done() { [[ $(runs_of default/ended | awk '$2 == "succeeded"' | wc -l) == 1 ]]; }
wait_until 60 fresh_done || fail "the fresh run did not succeed: $(runs_of default/ended)"
fresh=$(runs_of default/ended | awk '$2 == "succeeded" {print $1}')
[[ -e "$tmp/ran/$fresh.1" ]] || fail "the fresh run $fresh left no file"
# Every request of ended.job and retried.job before the fresh one was taken by then (a
# program's requests share a partition, in order).
# The worker's own reports (ids w-...) on the program topic.
kcat -C -b "$TRIGD_KAFKA" -t "${run}.events.program" -e -q 2>/dev/null >"$tmp/reports" || true
worker_reports() {  # worker_reports RUN_ID ATTEMPT: the statuses the worker reported
  python3 - "$tmp/reports" "$1" "$2" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    p = e.get("payload", {})
    if e["id"].startswith("w-") and p.get("run_id") == sys.argv[2] and p.get("attempt") == int(sys.argv[3]):
        print(p["status"])
PY
}
for id in $ended_runs; do
  [[ -e "$tmp/ran/$id.1" ]] && fail "run $id, failed as lost, ran"
  [[ -z $(worker_reports "$id" 1) ]] || fail "the worker reported on ended run $id: $(worker_reports "$id" 1)"
  grep -q "run $id attempt 1 (ended.job): not started: trigd ended attempt 1 (failed, reason lost)" "$tmp/worker.log" ||
    fail "the worker did not say why it skipped run $id"
done
[[ -e "$tmp/ran/$retried_run.1" ]] && fail "attempt 1 of $retried_run, lost, ran"
[[ -z $(worker_reports "$retried_run" 1) ]] || fail "the worker reported on attempt 1 of $retried_run"
grep -q "run $retried_run attempt 1 (retried.job): not started: trigd ended attempt 1 (lost, reason lost)" "$tmp/worker.log" ||
  fail "the worker did not say why it skipped attempt 1 of $retried_run"
[[ $(worker_reports "$retried_run" 2 | tr '\n' ' ') == "started succeeded " ]] || fail "attempt 2 reports: $(worker_reports "$retried_run" 2)"
[[ $(runs_of default/ended | awk '$2 == "failed"' | wc -l) == 3 ]] || fail "the ended runs changed: $(runs_of default/ended)"
# The stale request is on a key of its own: wait for the worker to say it skipped it.
skipped() { grep -q "run stale-1 attempt 1 (stale.job): not started: past its start deadline" "$tmp/worker.log"; }
wait_until 30 skipped || fail "the worker did not say it skipped the stale request"
[[ -e "$tmp/ran/stale-1.1" ]] && fail "the stale request ran"
echo "the late worker skipped 3 failed runs, 1 lost attempt and 1 stale request; ran the retry and a fresh run"

# The worker read the control topic to its end before it consumed the launch topic.
read_at=$(grep -n "read ${run}.control to its end" "$tmp/worker.log" | head -1 | cut -d: -f1)
consuming_at=$(grep -n "consuming ${run}.launch.default" "$tmp/worker.log" | head -1 | cut -d: -f1)
[[ -n $read_at && -n $consuming_at ]] && ((read_at < consuming_at)) ||
  fail "the worker did not read the control topic before the launch topic"
kill -TERM "$worker"; wait "$worker" || fail "worker exit $?"
echo "PASS"
