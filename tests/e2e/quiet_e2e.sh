#!/usr/bin/env bash
# e2e (SPEC §11, issue 35 point 4): a quiet period and a silence, each woken by the checker's
# clock at its deadline, across a SIGKILL of trigd in the middle of the period.
# - "settled" (count 2, quiet 6s): three partitions, the last inside the quiet period; one
#   launch, at the last arrival plus 6 s (to within a second), after trigd was killed and
#   restarted during the period. `jobs why` says "quiet until T, last arrival at T0".
# - "silent" (silence for 8s): armed at apply, re-armed by an arrival; one launch at the last
#   arrival plus 8 s, across the same restart; once per silence (no job left armed after it).
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run quiet
e2e_tmp
export TRIGD_METRICS="127.0.0.1:$(free_port)"
fail() { echo "FAIL: $*"; echo "--- trigd log"; cat "$tmp"/trigd*.log; exit 1; }
sql() { psql "$TRIGD_PG" -tAc "$1"; }

consumed() {  # consumed N: waits until trigd has committed N events of the data topic
  local deadline=$((SECONDS + 30)) n=0
  while ((SECONDS < deadline)); do
    n=$(sql "SELECT coalesce(sum(next_offset),0) FROM consumer_offsets WHERE topic='${run}.events.data'")
    ((n >= $1)) && return 0
    sleep 0.1
  done
  fail "trigd did not consume $1 data events (at $n)"
}
launched() {  # launched SCHEDULE: waits for its run; prints launched_at in ms
  local deadline=$((SECONDS + 40)) t
  while ((SECONDS < deadline)); do
    t=$(sql "SELECT floor(extract(epoch from launched_at) * 1000)::bigint FROM runs WHERE schedule_name = 'default/$1'")
    [[ -n $t ]] && { echo "$t"; return 0; }
    sleep 0.1
  done
  return 1
}
# The collecting job's leaf 0: its last arrival (ms), as the ingest stamped it.
last_arrival() {
  sql "SELECT (trigger_state->0->>'last_arrival_ms') FROM jobs WHERE schedule_name = 'default/$1' AND state = 'pending_trigger'"
}
emit() {  # emit DATASET ID PARTITION
  echo "{\"id\":\"$2\",\"type\":\"partition\",\"time\":\"2026-11-22T10:00:00Z\",\"payload\":{\"dataset\":\"$1\",\"partitions\":[\"$3\"]}}" |
    kcat -P -b "$TRIGD_KAFKA" -t "${run}.events.data" -k "$1"
}
# within NAME LAUNCHED DEADLINE: the launch came at the deadline, not before, under a second after.
within() {
  local late=$(($2 - $3))
  ((late >= 0 && late < 1000)) || fail "$1 launched ${late} ms after its deadline (expected 0 to 999)"
  echo "$1: launched $late ms after its deadline"
}

"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
cat >"$tmp/schedules.json" <<'DOC'
[
  {"name": "settled", "program": {"name": "sales.rollup"},
   "trigger": {"partition": {"dataset": "quiet.raw", "count": 2, "quiet": "6s"}}},
  {"name": "silent", "program": {"name": "alerts.page"},
   "trigger": {"silence": {"dataset": "feed.raw", "for": "8s"}}}
]
DOC
"$bin/trigctl" schedules apply -f "$tmp/schedules.json" >/dev/null || fail "apply"
# The silence is armed at apply: a collecting job due at its end.
armed=$(sql "SELECT count(*) FROM jobs WHERE schedule_name = 'default/silent' AND state = 'pending_trigger' AND next_check_at IS NOT NULL")
[[ $armed == 1 ]] || fail "no armed job for the silence after apply"

"$bin/trigd" >"$tmp/trigd1.log" 2>&1 & pids+=($!)
emit quiet.raw q-1 dt=1
emit quiet.raw q-2 dt=2
emit feed.raw f-1 dt=1
consumed 3
# Count reached: the quiet period runs. One more arrival inside it restarts it.
emit quiet.raw q-3 dt=3
consumed 4
quiet_from=$(last_arrival settled)
silent_from=$(last_arrival silent)
[[ -n $quiet_from && -n $silent_from ]] || fail "no last arrival recorded: $(sql "SELECT schedule_name, state, trigger_state FROM jobs")"
job=$(sql "SELECT id FROM jobs WHERE schedule_name = 'default/settled' AND state = 'pending_trigger'")
"$bin/trigctl" jobs why "$job" >"$tmp/why" || fail "jobs why"
grep -qE 'quiet until [0-9T:.-]+Z, last arrival at [0-9T:.-]+Z' "$tmp/why" || fail "jobs why does not explain the quiet wait: $(cat "$tmp/why")"
job=$(sql "SELECT id FROM jobs WHERE schedule_name = 'default/silent' AND state = 'pending_trigger'")
"$bin/trigctl" jobs why "$job" >"$tmp/why" || fail "jobs why"
grep -qE 'silent since [0-9T:.-]+Z, fires at [0-9T:.-]+Z' "$tmp/why" || fail "jobs why does not explain the silence: $(cat "$tmp/why")"

# trigd dies in the middle of both periods and comes back before their ends.
kill -9 "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true
deadline=$((SECONDS + 10))
until (($(sql "SELECT floor(extract(epoch from now()) * 1000)::bigint") >= quiet_from + 2000)); do
  ((SECONDS < deadline)) || fail "clock did not move"
  sleep 0.1
done
[[ -z $(sql "SELECT run_id FROM runs") ]] || fail "a run launched before the deadlines"
"$bin/trigd" >"$tmp/trigd2.log" 2>&1 & pids+=($!)

t=$(launched settled) || fail "settled did not launch after the quiet period"
within settled "$t" $((quiet_from + 6000))
t=$(launched silent) || fail "silent did not launch after the silence"
within silent "$t" $((silent_from + 8000))

n=$(sql "SELECT count(*) FROM runs")
[[ $n == 2 ]] || fail "expected 2 runs, got $n"
# Once per silence: nothing is armed until the next arrival.
open=$(sql "SELECT count(*) FROM jobs WHERE schedule_name = 'default/silent' AND state = 'pending_trigger'")
[[ $open == 0 ]] || fail "the silence is armed again without an arrival"
history=$(sql "SELECT history::text FROM jobs WHERE schedule_name = 'default/settled' AND state = 'launched'")
echo "$history" | grep -qF '"what": "trigger complete"' || fail "the history does not say the clock completed the trigger: $history"
echo "PASS"
