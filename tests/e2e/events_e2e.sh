#!/usr/bin/env bash
# e2e (SPEC §11, issue 35): custom events through the reverse index and a real trigd: one whose
# `where` does not match opens no job, one that matches launches once, with {{keys}} rendered;
# a partition leaf's `match` glob counts only matching partitions and {{partitions}} renders
# them (the request also carries `placeholders`, the worker exports TRIGD_PARTITIONS); a
# custom event without a name is dead-lettered; an update with on_update keep half-way through a
# count keeps what the job collected and launches under the new version.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run events
e2e_tmp
export TRIGD_METRICS="127.0.0.1:$(free_port)"
fail() { echo "FAIL: $*"; echo "--- trigd log"; cat "$tmp/trigd.log"; echo "--- worker log"; cat "$tmp/worker.log"; exit 1; }

consumed() {  # consumed N: waits until trigd has committed N events of the data topic
  local deadline=$((SECONDS + 30))
  while ((SECONDS < deadline)); do
    n=$(psql "$TRIGD_PG" -tAc "SELECT coalesce(sum(next_offset),0) FROM consumer_offsets WHERE topic='${run}.events.data'")
    ((n >= $1)) && return 0
    sleep 0.2
  done
  fail "trigd did not consume $1 data events (at $n)"
}
emit() { echo "$2" | kcat -P -b "$TRIGD_KAFKA" -t "${run}.events.data" -k "$1"; }

"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
cat >"$tmp/schedules.json" <<'DOC'
[
  {"name": "promote", "program": {"name": "model.deploy", "args": {"command": "echo deploying {{keys}}"}},
   "trigger": {"event": {"name": "model.published", "where": {"attrs.stage": "prod"}}}},
  {"name": "early-hours", "program": {"name": "sales.load",
     "args": {"command": "test \"$TRIGD_PARTITIONS\" = 'dt=1/h=01 dt=1/h=02' && echo load {{partitions}}"}},
   "trigger": {"partition": {"dataset": "sales.raw", "count": 2, "match": "dt=*/h=0?"}}},
  {"name": "counting", "program": {"name": "count.v1"}, "on_update": "keep",
   "trigger": {"partition": {"dataset": "counts", "count": 4}}}
]
DOC
"$bin/trigctl" schedules apply -f "$tmp/schedules.json" >/dev/null || fail "apply"
# A typo in a placeholder is refused at apply, naming the field.
cat >"$tmp/typo.json" <<'DOC'
{"name": "typo", "program": {"name": "p", "args": {"command": "echo {{partition}}"}},
 "trigger": {"partition": {"dataset": "d"}}}
DOC
"$bin/trigctl" schedules apply -f "$tmp/typo.json" 2>"$tmp/err" && fail "a typo in a placeholder was applied"
grep -qF 'program.args.command: unknown placeholder "{{partition}}"' "$tmp/err" || fail "typo refusal: $(cat "$tmp/err")"

"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)
"$bin/trigd-worker" >"$tmp/worker.log" 2>&1 & pids+=($!)

custom() {  # custom ID STAGE
  emit model.published "{\"id\":\"$1\",\"type\":\"custom\",\"time\":\"2026-11-22T10:00:00Z\",\"payload\":{\"name\":\"model.published\",\"key\":\"fraud-v7\",\"attrs\":{\"stage\":\"$2\"}}}"
}
custom c-dev dev
consumed 1
jobs=$(psql "$TRIGD_PG" -tAc "SELECT count(*) FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.name = 'default/promote'")
[[ $jobs == 0 ]] || fail "a custom event whose where does not match opened $jobs job(s)"

custom c-prod prod
launch=$(wait_for_message 30 "${run}.launch.default" '"schedule":"default/promote"') || fail "no launch for the matching custom event"
echo "$launch" | grep -qF '"command":"echo deploying '"'fraud-v7'"'"' || fail "{{keys}} not rendered: $launch"
rid=$(echo "$launch" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["run_id"])')
wait_for_message 30 "${run}.events.program" "\"run_id\":\"$rid\",\"status\":\"succeeded\"" >/dev/null || fail "promote run did not succeed"
# The same event again changes nothing (de-duplicated); a custom event without a name is dead.
custom c-prod prod
emit x '{"id":"c-bad","type":"custom","time":"2026-11-22T10:00:00Z","payload":{"key":"k"}}'
wait_for_message 30 "${run}.dead" 'missing_field: payload.name is required' >/dev/null || fail "no dead letter for a nameless custom event"
consumed 4

part() {  # part ID PARTITION
  emit sales.raw "{\"id\":\"$1\",\"type\":\"partition\",\"time\":\"2026-11-22T10:00:00Z\",\"payload\":{\"dataset\":\"sales.raw\",\"partitions\":[\"$2\"]}}"
}
part p-1 dt=1/h=15
part p-2 dt=1/h=01
consumed 6
jobs=$(psql "$TRIGD_PG" -tAc "SELECT count(*) FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.name = 'default/early-hours' AND j.state <> 'pending_trigger'")
[[ $jobs == 0 ]] || fail "h=15 counted although the glob does not match it"
part p-3 dt=1/h=02
launch=$(wait_for_message 30 "${run}.launch.default" '"schedule":"default/early-hours"') || fail "no launch for the matching partitions"
echo "$launch" | grep -qF "echo load 'dt=1/h=01' 'dt=1/h=02'" || fail "{{partitions}} not rendered: $launch"
echo "$launch" | grep -qF '"partitions":"dt=1/h=01 dt=1/h=02"' || fail "no placeholders in the request: $launch"
rid=$(echo "$launch" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["run_id"])')
# The worker's command checks TRIGD_PARTITIONS: it succeeds only when the variable is right.
wait_for_message 30 "${run}.events.program" "\"run_id\":\"$rid\",\"status\":\"succeeded\"" >/dev/null || fail "TRIGD_PARTITIONS not exported"

# on_update keep, half-way through a count of 4.
count() { emit counts "{\"id\":\"$1\",\"type\":\"partition\",\"time\":\"2026-11-22T10:00:00Z\",\"payload\":{\"dataset\":\"counts\",\"partitions\":[\"$1\"]}}"; }
count n-1
count n-2
consumed 9
sed 's/"count.v1"/"count.v2"/' "$tmp/schedules.json" >"$tmp/v2.json"
"$bin/trigctl" schedules apply -f "$tmp/v2.json" >/dev/null || fail "apply v2"
count n-3
count n-4
launch=$(wait_for_message 30 "${run}.launch.default" '"schedule":"default/counting"') || fail "no launch after keep: $(psql "$TRIGD_PG" -tAc "SELECT state, history FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.name = 'default/counting'")"
echo "$launch" | grep -qF '"schedule_version":2' || fail "not launched under v2: $launch"
echo "$launch" | grep -qF '"name":"count.v2"' || fail "not the v2 program: $launch"
for n in n-1 n-2 n-3 n-4; do echo "$launch" | grep -qF "\"$n\"" || fail "$n missing from the kept job's events: $launch"; done
history=$(psql "$TRIGD_PG" -tAc "SELECT history FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.name = 'default/counting'")
echo "$history" | grep -qF 'kept: schedule updated to v2' || fail "history does not say the update kept the job: $history"

launches=$(kcat -C -b "$TRIGD_KAFKA" -t "${run}.launch.default" -e -q | grep -cF '"schedule":"default/promote"')
[[ $launches == 1 ]] || fail "expected 1 launch of promote, got $launches"
stored=$(psql "$TRIGD_PG" -tAc "SELECT document->'program'->'args'->>'command' FROM schedules WHERE name = 'default/promote'")
[[ $stored == 'echo deploying {{keys}}' ]] || fail "the stored schedule lost its template: $stored"
echo "PASS"
