#!/usr/bin/env bash
# e2e: the operator's verbs (SPEC §9, docs/trigctl.md#runs-start-cancel-rerun) on a running trigd
# and reference worker. apply --dry-run writes nothing and names the changed field; runs start
# launches a partition-triggered schedule by hand with its args merged, and `runs show` and
# `jobs why` say who started it; runs cancel stops a `sleep 600` command (its process is gone
# within 5 s), ends the run killed (reason cancelled) with trigd's killed event, and refuses a
# second cancel; runs rerun gives a new run linked both ways; schedules next lists fire times on
# the hour; runs start waits on a closed time window and --force launches at once; a backfill of three hourly fire times sent twice launches three runs; a run past its
# run_timeout is stopped and ends failed (reason timeout).
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run operate
e2e_tmp
port=$(free_port)
export TRIGD_METRICS="127.0.0.1:$port"
fail() {
  echo "FAIL: $*"; echo "--- trigd log"; tail -30 "$tmp/trigd.log"
  echo "--- worker log"; tail -30 "$tmp/worker.log" 2>/dev/null || true
  "$bin/trigctl" runs list || true
  exit 1
}
metric() {  # metric SERIES: its value on trigd's /metrics as a number (0 when absent)
  curl -sf "http://$TRIGD_METRICS/metrics" | awk -v s="$1" '$1 == s {v = $2} END {print v + 0}'
}
metric_is() { [[ $(metric "$1") == "$2" ]]; }
# metrics_are SERIES=VALUE...: trigd's /metrics shows each within 10 s (operator actions are
# counted from the database every 2 s), and then no more.
metrics_are() {
  local pair
  for pair in "$@"; do
    wait_until 10 metric_is "${pair%=*}" "${pair##*=}" || fail "/metrics: ${pair%=*} is $(metric "${pair%=*}"), expected ${pair##*=}"
  done
}
field() {  # field KEY: KEY of the JSON object on stdin (of a list: of its first element)
  python3 -c 'import json, sys
d = json.load(sys.stdin); d = d[0] if isinstance(d, list) else d
v = d.get(sys.argv[1]); print("" if v is None else (v if isinstance(v, str) else json.dumps(v)))' "$1"
}
python3 - "$tmp" >"$tmp/schedules.json" <<'PY'
import datetime, json, sys
tmp = sys.argv[1]
# A time window that is closed now: it opens two hours from now, for an hour.
opens = (datetime.datetime.now(datetime.timezone.utc).hour + 2) % 24
def sleeper(pidfile):
    return "sleep 600 & echo $! >%s/%s; wait" % (tmp, pidfile)
print(json.dumps([
    {"name": "manual", "program": {"name": "manual.job", "args": {"mode": "full", "day": "x"}},
     "trigger": {"partition": {"dataset": "manual.raw", "count": 99}}},
    {"name": "sleeper", "program": {"name": "sleeper.job", "args": {"command": sleeper("sleep.pid")}},
     "trigger": {"partition": {"dataset": "sleeper.raw"}}},
    {"name": "timed", "program": {"name": "timed.job", "args": {"command": sleeper("timed.pid")}},
     "trigger": {"partition": {"dataset": "timed.raw"}}, "run_timeout": "2s"},
    {"name": "hourly", "program": {"name": "hourly.job"},
     "trigger": {"time": {"cron": "0 * * * *", "timezone": "Europe/Berlin"}},
     "constraints": {"max_concurrent_runs": 1}},
    {"name": "windowed", "program": {"name": "windowed.job"},
     "trigger": {"partition": {"dataset": "windowed.raw"}},
     "constraints": {"time_window": {"start": "%02d:00" % opens, "end": "%02d:00" % ((opens + 1) % 24),
                                     "timezone": "UTC"}}},
], indent=1))
PY
"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
"$bin/trigctl" schedules apply -f "$tmp/schedules.json" >/dev/null || fail "apply"
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)
"$bin/trigd-worker" >"$tmp/worker.log" 2>&1 & pids+=($!)

# apply --dry-run: the changed field and the version it would get; nothing written.
sed 's/"day": "x"/"day": "y"/' "$tmp/schedules.json" >"$tmp/changed.json"
"$bin/trigctl" schedules apply --dry-run -f "$tmp/changed.json" >"$tmp/dry" || fail "dry run"
grep -qx 'changed   default/manual v2 (discards 0 open or waiting jobs)' "$tmp/dry" || fail "dry run: $(cat "$tmp/dry")"
grep -qxF '    program.args.day: "x" -> "y"' "$tmp/dry" || fail "dry run diff: $(cat "$tmp/dry")"
[[ $("$bin/trigctl" schedules show default/manual --json | field version) == 1 ]] || fail "the dry run wrote"

# runs start: a schedule whose trigger (99 partitions) is far from complete, launched now.
"$bin/trigctl" runs start default/manual --args '{"mode": "delta"}' --json >"$tmp/start" || fail "runs start"
run=$(field run_id <"$tmp/start")
job=$(field job_id <"$tmp/start")
[[ -n $run ]] || fail "runs start launched no run within 5 s: $(cat "$tmp/start")"
[[ $("$bin/trigctl" runs show "$run" --json | field started_by_hand) == "os:$(id -un)@$(hostname)" ]] ||
  fail "runs show: $("$bin/trigctl" runs show "$run")"
request() {
  kcat -C -b "$TRIGD_KAFKA" -t "${TRIGD_TOPIC_PREFIX}launch.default" -e -q 2>/dev/null | grep -F "\"$1\"" | head -1
}
merged=$(request "$run" | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["program"]["args"], sort_keys=True))')
[[ $merged == '{"day": "x", "mode": "delta"}' ]] || fail "args not merged: $merged"
"$bin/trigctl" jobs why "$job" >"$tmp/why"
grep -qF "opened by hand (runs start) by os:$(id -un)@$(hostname)" "$tmp/why" || fail "jobs why: $(cat "$tmp/why")"
echo "runs start: job $job launched as run $run with its args merged"

# runs start --force: a schedule whose time window is closed now waits without --force (the job
# pending on time_window) and launches at once with it.
"$bin/trigctl" runs start default/windowed --json >"$tmp/start" || fail "start windowed"
[[ -z $(field run_id <"$tmp/start") && $(field state <"$tmp/start") == pending_constraint ]] ||
  fail "runs start without --force launched in a closed window: $(cat "$tmp/start")"
"$bin/trigctl" jobs why "$(field job_id <"$tmp/start")" >"$tmp/why"
grep -qF time_window "$tmp/why" || fail "jobs why names no time_window: $(cat "$tmp/why")"
"$bin/trigctl" runs start default/windowed --force --json >"$tmp/start" || fail "start windowed --force"
forced=$(field run_id <"$tmp/start")
[[ -n $forced ]] || fail "runs start --force did not launch in a closed window: $(cat "$tmp/start")"
"$bin/trigctl" jobs why "$(field job_id <"$tmp/start")" >"$tmp/why"
grep -qF "launched by hand with --force: constraints not applied" "$tmp/why" || fail "jobs why: $(cat "$tmp/why")"
echo "runs start --force: waits on a closed time window without --force, run $forced with it"

# runs cancel: the command's process is gone within 5 s.
"$bin/trigctl" runs start default/sleeper --json >"$tmp/start" || fail "start sleeper"
sleeper=$(field run_id <"$tmp/start")
[[ -n $sleeper ]] || fail "the sleeper did not launch"
wait_until 20 test -s "$tmp/sleep.pid" || fail "the sleeper did not start"
pid=$(cat "$tmp/sleep.pid")
kill -0 "$pid" || fail "sleep 600 is not running"
"$bin/trigctl" runs cancel "$sleeper" --reason e2e >/dev/null || fail "cancel"
start=$SECONDS
gone() { ! kill -0 "$1" 2>/dev/null; }
wait_until 5 gone "$pid" || fail "sleep 600 (pid $pid) still running 5 s after the cancel"
echo "runs cancel: sleep 600 gone within $((SECONDS - start + 1)) s"
"$bin/trigctl" runs show "$sleeper" --json >"$tmp/show"
[[ $(field state <"$tmp/show")/$(field reason <"$tmp/show") == killed/cancelled ]] || fail "cancelled run: $(cat "$tmp/show")"
killed_event() {
  kcat -C -b "$TRIGD_KAFKA" -t "${TRIGD_TOPIC_PREFIX}events.program" -e -q 2>/dev/null |
    grep -F "\"$sleeper\"" | grep -F '"killed"' | grep -qF '"cancelled"'
}
wait_until 10 killed_event || fail "no killed event (reason cancelled) for $sleeper"
expect 1 "trigctl runs cancel: run $sleeper has finished (killed): there is nothing to cancel" \
  "$bin/trigctl" runs cancel "$sleeper"
expect 1 "trigctl runs cancel: no run nope" "$bin/trigctl" runs cancel nope

# The operate metrics (docs/operations.md) so far: four starts (manual, windowed twice, the
# sleeper) and one cancel, counted once each; the cancel also as a run outcome.
metrics_are 'trigd_operator_actions_total{action="start"}=4' 'trigd_operator_actions_total{action="cancel"}=1' \
  'trigd_runs_total{outcome="cancelled"}=1' 'trigd_operator_actions_total{action="rerun"}=0'
echo "metrics: 4 starts and 1 cancel on /metrics"

# A cancel committed while trigd is down (killed between the cancel's commit and its
# publication): its control message goes out after the restart and still stops the command.
rm -f "$tmp/sleep.pid"
"$bin/trigctl" runs start default/sleeper --json >"$tmp/start" || fail "start sleeper again"
sleeper2=$(field run_id <"$tmp/start")
wait_until 20 test -s "$tmp/sleep.pid" || fail "the second sleeper did not start"
pid2=$(cat "$tmp/sleep.pid")
kill -9 "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true
"$bin/trigctl" runs cancel "$sleeper2" >/dev/null || fail "cancel with trigd down"
kill -0 "$pid2" || fail "the command stopped before trigd published the cancel"
"$bin/trigd" >>"$tmp/trigd.log" 2>&1 & pids+=($!)
wait_until 15 gone "$pid2" || fail "sleep 600 (pid $pid2) still running after trigd's restart"
echo "runs cancel with trigd down: published after the restart, sleep 600 gone"
expect 1 "trigctl runs start: no schedule named default/nope" "$bin/trigctl" runs start default/nope

# runs rerun: a new run of the same job, linked both ways.
"$bin/trigctl" runs rerun "$run" --json >"$tmp/rerun" || fail "rerun"
rerun=$(field run_id <"$tmp/rerun")
[[ -n $rerun && $rerun != "$run" ]] || fail "rerun: $(cat "$tmp/rerun")"
[[ $("$bin/trigctl" runs show "$rerun" --json | field rerun_of) == "$run" ]] || fail "rerun_of"
[[ $("$bin/trigctl" runs show "$run" --json | field reruns) == "[\"$rerun\"]" ]] || fail "reruns"
echo "runs rerun: $run -> $rerun"

# schedules next: on the hour, in UTC and Berlin time.
"$bin/trigctl" schedules next default/hourly --count 3 --json >"$tmp/next"
python3 - "$tmp/next" <<'PY' || fail "next: $(cat "$tmp/next")"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["fire_times"]) == 3 and d["timezone"] == "Europe/Berlin", d
for t in d["fire_times"]:
    assert t["utc"].endswith(":00:00Z") and t["local"][19:] in ("+01:00", "+02:00"), t
PY
# The table shows the local column in local time too.
"$bin/trigctl" schedules next default/hourly --count 1 | tail -1 | grep -qE 'Z +[0-9T:-]{19}\+0[12]:00$' ||
  fail "next (table): $("$bin/trigctl" schedules next default/hourly --count 1)"

# backfill twice: three fire times, three runs.
for i in 1 2; do
  "$bin/trigctl" schedules backfill default/hourly --from 2026-01-01T00:00:00Z --to 2026-01-01T03:00:00Z >/dev/null ||
    fail "backfill $i"
done
hourly_runs() {
  [[ $("$bin/trigctl" runs list --schedule default/hourly --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))') == "$1" ]]
}
wait_until 30 hourly_runs 3 || fail "backfill: expected 3 runs"
"$bin/trigctl" schedules backfill default/hourly --from 2026-01-01T00:00:00Z --to 2026-01-01T03:00:00Z --dry-run --json >"$tmp/bf"
[[ $(field produced <"$tmp/bf")/$(field launched <"$tmp/bf") == 3/3 ]] || fail "backfill progress: $(cat "$tmp/bf")"
expect 1 "trigctl schedules backfill: schedule default/manual has no time trigger: there are no fire times to backfill" \
  "$bin/trigctl" schedules backfill default/manual --from 2026-01-01T00:00:00Z --to 2026-01-02T00:00:00Z
expect 1 "trigctl schedules backfill: the range holds more than 10000 fire times of schedule default/hourly (--max N raises the limit)" \
  "$bin/trigctl" schedules backfill default/hourly --from 2020-01-01T00:00:00Z --to 2026-01-01T00:00:00Z
hourly_runs 3 || fail "backfill: more than 3 runs"
echo "backfill: 3 fire times sent twice, 3 runs"

# run_timeout: the command stopped, the run failed (reason timeout).
"$bin/trigctl" runs start default/timed --json >"$tmp/start" || fail "start timed"
timed=$(field run_id <"$tmp/start")
wait_until 20 test -s "$tmp/timed.pid" || fail "the timed run did not start"
tpid=$(cat "$tmp/timed.pid")
timed_out() { [[ $("$bin/trigctl" runs show "$timed" --json | field reason) == timeout ]]; }
wait_until 15 timed_out || fail "run $timed not timed out: $("$bin/trigctl" runs show "$timed")"
[[ $("$bin/trigctl" runs show "$timed" --json | field state) == failed ]] || fail "the timed out run is not failed"
wait_until 5 gone "$tpid" || fail "the timed out command is still running"
echo "run_timeout: run failed (reason timeout), its command stopped"

# The operate metrics of the restarted trigd: the cancel made while it was down, the rerun, the
# backfills' six ticks, the timed-out run (failed, its only attempt).
metrics_are 'trigd_operator_actions_total{action="cancel"}=1' 'trigd_runs_total{outcome="cancelled"}=1' \
  'trigd_operator_actions_total{action="rerun"}=1' 'trigd_operator_actions_total{action="backfill_tick"}=6' \
  'trigd_runs_total{outcome="timeout"}=1' 'trigd_runs_total{outcome="failed"}=0'
echo "metrics: the restarted trigd counted the cancel, the rerun, 6 backfill ticks and the timeout"
echo PASS
