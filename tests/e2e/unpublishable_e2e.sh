#!/usr/bin/env bash
# e2e: a launch request the broker refuses for good (larger than its launch topic's
# max.message.bytes) is not re-sent forever: after a bounded number of sends its run ends
# `failed` with reason `unpublishable`, a `failed` program event tells downstream schedules,
# and the relay goes on publishing the other schedules' requests.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run unpub
e2e_tmp
port=$(free_port)
export TRIGD_METRICS="127.0.0.1:$port"
fail() {
  echo "FAIL: $*"; echo "--- trigd log"; tail -30 "$tmp/trigd.log"
  "$bin/trigctl" runs list || true
  exit 1
}
# The usual topics, and a launch topic for target `small` that takes messages of 2,000 bytes at most.
mkdir "$tmp/topics"
cp "$src"/topics/*.json "$tmp/topics/"
echo '[{"name": "launch.small", "partitions": 1, "config": {"max.message.bytes": "2000"}}]' >"$tmp/topics/small.json"
TRIGD_TOPICS_DIR="$tmp/topics" "$bin/trigctl" topics create >/dev/null
big=$(python3 -c 'print("x" * 3000)')
cat >"$tmp/schedules.json" <<JSON
[{"namespace": "default", "name": "big", "program": {"name": "big.job", "target": "small", "args": {"blob": "$big"}},
  "trigger": {"partition": {"dataset": "big.raw"}}, "retry": {"max_attempts": 3, "backoff": "1s"}},
 {"namespace": "default", "name": "after-big", "program": {"name": "after.job"},
  "trigger": {"program": {"name": "big.job", "status": ["failed"]}}},
 {"namespace": "default", "name": "other", "program": {"name": "other.job"},
  "trigger": {"partition": {"dataset": "other.raw"}}}]
JSON
"$bin/trigd" migrate >/dev/null
"$bin/trigctl" schedules apply -f "$tmp/schedules.json" >/dev/null || fail "apply"
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)

state_of() {  # state_of SCHEDULE: "state reason attempt" of its runs
  "$bin/trigctl" runs list --schedule "$1" --json | python3 -c '
import json, sys
for r in json.load(sys.stdin): print(r["state"], r.get("reason") or "-", r["attempt"])'
}
"$bin/trigctl" events emit partition big.raw dt=1 >/dev/null || fail "emit big"
unpublishable() { [[ $(state_of default/big) == "failed unpublishable 1" ]]; }
wait_until 60 unpublishable || fail "the big run is not failed as unpublishable: $(state_of default/big)"
grep -q 'runs failed as unpublishable' "$tmp/trigd.log" || fail "no log line for the unpublishable run"
# Downstream sees the failure: a run of default/after-big is launched.
after_launched() { [[ -n $(state_of default/after-big) ]]; }
wait_until 60 after_launched || fail "the failed program event did not reach default/after-big"
events=$(kcat -C -b "$TRIGD_KAFKA" -t "${run}.events.program" -e -q 2>/dev/null)
grep -q '"reason":"unpublishable"' <<<"$events" || fail "no failed program event with reason unpublishable: $events"
# The relay is not stuck: another schedule's request is published, and no launch request of big
# is left in the outbox to be sent again.
"$bin/trigctl" events emit partition other.raw dt=1 >/dev/null || fail "emit other"
other_published() { kcat -C -b "$TRIGD_KAFKA" -t "${run}.launch.default" -e -q 2>/dev/null | grep -q '"other.job"'; }
wait_until 60 other_published || fail "the other schedule's request was not published"
left=$(psql "$TRIGD_PG" -tAc "SELECT count(*) FROM outbox WHERE topic = '${run}.launch.small'")
[[ $left == 0 ]] || fail "$left launch requests of big still in the outbox"
resends=$(grep -c 'not confirmed by Kafka' "$tmp/trigd.log" || true)
((resends <= 5)) || fail "the refused request was sent $((resends + 1)) times"
echo "ok: failed as unpublishable after $((resends + 1)) sends; downstream launched; relay not stuck"
