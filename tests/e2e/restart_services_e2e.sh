#!/usr/bin/env bash
# e2e: PostgreSQL and then the Kafka broker restart in the middle of a stream of events; trigd
# recovers by itself (it is never restarted) and every event yields exactly one job and one
# run: nothing lost, nothing applied twice. Runs its own PostgreSQL + Kafka pair on free ports
# (TRIGD_SERVICES_DIR), so restarting them does not disturb other tests.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
n=${RESTART_EVENTS:-600}
export TRIGD_SERVICES_DIR=/var/tmp/trigd-restart-$$
read -r -d "" TRIGD_PG_PORT TRIGD_KAFKA_PORT TRIGD_KAFKA_CONTROLLER_PORT < <(free_port 3) || true
export TRIGD_PG_PORT TRIGD_KAFKA_PORT TRIGD_KAFKA_CONTROLLER_PORT
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$src/tools/services" stop >/dev/null 2>&1 || true
  rm -rf "$TRIGD_SERVICES_DIR" "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- trigd log"; tail -50 "$tmp/trigd.log"; exit 1; }
eval "$("$src/tools/services" start)"
export TRIGD_PG TRIGD_KAFKA TRIGD_METRICS=127.0.0.1:$(free_port) TRIGD_API=127.0.0.1:0
"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
cat >"$tmp/s.json" <<'DOC'
{"name": "restart", "program": {"name": "restart.p"}, "trigger": {"partition": {"dataset": "restart.d"}}}
DOC
"$bin/trigctl" schedules apply -f "$tmp/s.json" >/dev/null
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)
trigd_pid=$!
"$bin/trigd-worker" >"$tmp/worker.log" 2>&1 & pids+=($!)

# The stream: batches of 20 events, re-sent whole when kcat fails (ids make re-sends harmless).
produce() {
  local i=0 b
  while ((i < n)); do
    b=""
    for ((k = i; k < i + 20 && k < n; k++)); do
      b+="{\"id\":\"r-$k\",\"type\":\"partition\",\"time\":\"2026-11-22T10:00:00Z\",\"payload\":{\"dataset\":\"restart.d\",\"partitions\":[\"p=$k\"]}}"$'\n'
    done
    if printf '%s' "$b" | timeout 60 kcat -P -b "$TRIGD_KAFKA" -t trigd.events.data -k restart.d -X message.timeout.ms=50000 2>/dev/null; then
      i=$((i + 20))
    else
      sleep 1
    fi
    sleep 0.1
  done
}
produce & producer=$!
pids+=($producer)

sleep 3
echo "restarting PostgreSQL mid-stream"
"$src/tools/services" restart-pg 2>&1 | sed 's/^/  /'
sleep 4
echo "restarting Kafka mid-stream"
"$src/tools/services" restart-kafka 2>&1 | sed 's/^/  /'
wait "$producer" || fail "producer"
kill -0 "$trigd_pid" 2>/dev/null || fail "trigd exited"

q() { psql "$TRIGD_PG" -tAc "$1" 2>/dev/null || echo -1; }
deadline=$((SECONDS + 120))
while ((SECONDS < deadline)); do
  launched=$(q "SELECT count(*) FROM jobs WHERE state='launched'")
  [[ $launched == "$n" ]] && break
  sleep 1
done
kill -0 "$trigd_pid" 2>/dev/null || fail "trigd exited"
jobs=$(q "SELECT count(*) FROM jobs")
distinct=$(q "SELECT count(DISTINCT triggered_by->0->>'id') FROM jobs")
runs=$(q "SELECT count(DISTINCT run_id) FROM runs")
per_job=$(q "SELECT coalesce(max(c), 0) FROM (SELECT count(*) c FROM runs GROUP BY job_id) x")
requests=$(kcat -C -b "$TRIGD_KAFKA" -t trigd.launch.default -e -q 2>/dev/null | python3 -c '
import json, sys
ids = set(json.loads(l)["run_id"] for l in sys.stdin if l.strip())
print(len(ids))')
echo "events $n, jobs $jobs (distinct triggering events $distinct), launched $launched, runs $runs, launch requests (distinct run ids) $requests"
[[ $jobs == "$n" && $distinct == "$n" ]] || fail "expected $n jobs for $n distinct events, got $jobs ($distinct distinct)"
[[ $launched == "$n" ]] || fail "expected $n launched jobs, got $launched"
[[ $runs == "$n" && $per_job == 1 ]] || fail "expected one run per job, got $runs runs, max $per_job per job"
[[ $requests == "$n" ]] || fail "expected $n distinct run ids on the launch topic, got $requests"
grep -q "PostgreSQL" "$tmp/trigd.log" || fail "trigd never noticed PostgreSQL going away (the restart did not bite)"
echo "restart e2e: 0 lost, 0 duplicated across a PostgreSQL and a Kafka restart"
