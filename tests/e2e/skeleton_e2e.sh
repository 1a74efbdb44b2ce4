#!/usr/bin/env bash
# e2e: the walking skeleton through real PostgreSQL and Kafka, exactly as a user runs it:
# apply a schedule, start trigd and a worker, emit a partition event with kcat, and expect one
# launch request with a run id, the worker's `succeeded` report, a dead letter for garbage,
# offsets stored in PostgreSQL, and no second launch when the same event id is re-sent.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run e2e
port=$(free_port)
export TRIGD_METRICS="127.0.0.1:$port"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- trigd log"; cat "$tmp/trigd.log"; echo "--- worker log"; cat "$tmp/worker.log"; exit 1; }
tmp=$(mktemp -d)

"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
"$bin/trigctl" schedules apply -f "$src/tools/examples/demo-ingest.json" | grep -q "applied    default/demo-ingest v1" || fail "apply"
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)
"$bin/trigd-worker" >"$tmp/worker.log" 2>&1 & pids+=($!)

event='{"id":"skeleton-1","type":"partition","time":"2026-11-22T10:00:00Z","payload":{"dataset":"demo.raw","partitions":["dt=2026-11-22"]}}'
echo "$event" | kcat -P -b "$TRIGD_KAFKA" -t "${run}.events.data" -k demo.raw
echo 'not json' | kcat -P -b "$TRIGD_KAFKA" -t "${run}.events.data" -k junk

launch=$(wait_for_message 60 "${run}.launch.default" '"schedule":"default/demo-ingest"') || fail "no launch request"
run_id=$(echo "$launch" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["run_id"])')
[[ -n $run_id ]] || fail "launch request without run id"
wait_for_message 60 "${run}.events.program" "\"run_id\":\"$run_id\",\"status\":\"succeeded\"" >/dev/null || fail "no succeeded report for $run_id"
wait_for_message 30 "${run}.dead" '"reason":"bad_json' >/dev/null || fail "no dead letter"

# The same event id again changes nothing.
echo "$event" | kcat -P -b "$TRIGD_KAFKA" -t "${run}.events.data" -k demo.raw
sleep 3
launches=$(kcat -C -b "$TRIGD_KAFKA" -t "${run}.launch.default" -e -q | wc -l)
[[ $launches == 1 ]] || fail "expected 1 launch request, got $launches"
jobs=$(psql "$TRIGD_PG" -tAc "SELECT count(*) FROM jobs WHERE state='launched'")
[[ $jobs == 1 ]] || fail "expected 1 launched job, got $jobs"
offsets=$(psql "$TRIGD_PG" -tAc "SELECT coalesce(sum(next_offset),0) FROM consumer_offsets WHERE topic='${run}.events.data'")
[[ $offsets == 3 ]] || fail "expected stored offsets to cover 3 events, got $offsets"
"$bin/trigctl" jobs list --json | python3 -c 'import json,sys; j=json.load(sys.stdin); assert len(j)==1 and j[0]["state"]=="launched", j' || fail "trigctl jobs list"
for _ in $(seq 1 20); do
  state=$("$bin/trigctl" runs show "$run_id" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  [[ $state == succeeded ]] && break; sleep 0.5
done
[[ $state == succeeded ]] || fail "run state $state, expected succeeded"
"$bin/trigctl" runs list | grep -q "$run_id" || fail "trigctl runs list"
metrics=$(curl -sf "http://127.0.0.1:$port/metrics") || fail "no /metrics on $port"
metric() { echo "$metrics" | grep -F "$1" | awk '{print $NF}'; }
[[ $(metric 'trigd_events_total{outcome="applied",type="partition"}') == 1 ]] || fail "applied count: $(metric 'trigd_events_total{outcome="applied"')"
[[ $(metric 'trigd_events_total{outcome="duplicate",type="partition"}') == 1 ]] || fail "duplicate count"
[[ $(metric 'trigd_dead_letters_total{reason="bad_json"}') == 1 ]] || fail "dead letter count"
[[ $(metric 'trigd_jobs_total{transition="launched"}') == 1 ]] || fail "launched count"
[[ $(metric 'trigd_event_to_launch_seconds_count') == 1 ]] || fail "latency histogram count"
[[ $(metric 'trigd_runs_total{outcome="succeeded"}') == 1 ]] || fail "runs succeeded count"
if command -v promtool >/dev/null; then echo "$metrics" | promtool check metrics || fail "promtool check metrics"; fi
# Suspend: events are ignored. Resume: counting starts afresh. Delete: gone, nothing launches.
"$bin/trigctl" schedules suspend default/demo-ingest | grep -q "suspended default/demo-ingest" || fail "suspend"
sleep 1.5  # trigd reloads schedules every second
"$bin/trigctl" events emit partition demo.raw dt=suspended >/dev/null || fail "events emit"
sleep 3
[[ $(kcat -C -b "$TRIGD_KAFKA" -t "${run}.launch.default" -e -q | wc -l) == 1 ]] || fail "a suspended schedule launched"
"$bin/trigctl" schedules resume default/demo-ingest | grep -q "resumed" || fail "resume"
sleep 1.5
"$bin/trigctl" events emit partition demo.raw dt=resumed >/dev/null
wait_for_message 30 "${run}.launch.default" 'dt=resumed' >/dev/null || fail "no launch after resume"
"$bin/trigctl" schedules delete default/demo-ingest | grep -q "deleted" || fail "delete"
"$bin/trigctl" schedules delete default/demo-ingest 2>/dev/null && fail "deleting twice must be refused"
sleep 1.5
"$bin/trigctl" events emit partition demo.raw dt=deleted >/dev/null
sleep 3
kcat -C -b "$TRIGD_KAFKA" -t "${run}.launch.default" -e -q | grep -q 'dt=deleted' && fail "a deleted schedule launched"
echo "skeleton e2e: run $run_id launched once and succeeded; dead letter and offsets as expected"
