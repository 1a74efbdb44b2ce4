#!/usr/bin/env bash
# e2e (issue "Event ingestion" 6a): replaying the same events changes nothing.
# 200 events with known ids (151 partition events, 49 program events) reach three schedules
# (partition count 1, partition count 3, program). Then the same 200 are produced again, and
# then, with trigd stopped, the group's positions in PostgreSQL are rewound to 0 and trigd is
# restarted, so it consumes all 400 messages once more. Jobs, runs and launch requests must be
# exactly what the first pass produced, and the restarted trigd must count all 400 as duplicates
# (proof that the replay really happened).
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run replay
port=$(free_port)
export TRIGD_METRICS="127.0.0.1:$port"
tmp=$(mktemp -d)
trigd_pid=
cleanup() { [[ -n $trigd_pid ]] && kill "$trigd_pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- trigd log"; cat "$tmp/trigd.log"; exit 1; }
start=$SECONDS

"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
cat >"$tmp/schedules.json" <<'EOF'
[
 {"namespace": "replay", "name": "p1", "program": {"name": "replay.p1"}, "heartbeat_timeout": "1d",
  "trigger": {"partition": {"dataset": "replay.d"}}},
 {"namespace": "replay", "name": "p3", "program": {"name": "replay.p3"}, "heartbeat_timeout": "1d",
  "trigger": {"partition": {"dataset": "replay.d", "count": 3}}},
 {"namespace": "replay", "name": "prog", "program": {"name": "replay.prog"}, "heartbeat_timeout": "1d",
  "trigger": {"program": {"name": "replay.up", "status": ["succeeded"]}}}
]
EOF
"$bin/trigctl" schedules apply -f "$tmp/schedules.json" >/dev/null || fail "apply"

start_trigd() { "$bin/trigd" >>"$tmp/trigd.log" 2>&1 & trigd_pid=$!; }
stop_trigd() { kill "$trigd_pid"; wait "$trigd_pid" || true; trigd_pid=; }

# The 200 events, produced with kcat in one go (so batches hold many events, some of them
# completing a stored count-3 job and opening the next one in the same transaction).
python3 - "$run" "$tmp" <<'EOF'
import json, sys
run, tmp = sys.argv[1], sys.argv[2]
with open(f"{tmp}/data.txt", "w") as d, open(f"{tmp}/program.txt", "w") as p:
    for i in range(151):
        e = {"id": f"{run}-d{i}", "type": "partition", "time": "2026-11-22T10:00:00Z",
             "payload": {"dataset": "replay.d", "partitions": [f"p={i}"]}}
        d.write("replay.d\t" + json.dumps(e) + "\n")
    for i in range(49):
        e = {"id": f"{run}-p{i}", "type": "program", "time": "2026-11-22T10:00:00Z",
             "payload": {"program": "replay.up", "run_id": f"up-{i}", "status": "succeeded", "attempt": 1}}
        p.write("replay.up\t" + json.dumps(e) + "\n")
EOF
produce() {
  kcat -P -b "$TRIGD_KAFKA" -t "$run.events.data" -K $'\t' <"$tmp/data.txt"
  kcat -P -b "$TRIGD_KAFKA" -t "$run.events.program" -K $'\t' <"$tmp/program.txt"
}

total_lag() { "$bin/trigctl" --json lag | python3 -c 'import json,sys; print(sum(r["lag"] for r in json.load(sys.stdin)))'; }
busy() { psql "$TRIGD_PG" -tAc "SELECT (SELECT count(*) FROM outbox) + (SELECT count(*) FROM jobs WHERE state = 'pending_constraint')"; }
# Waits until every message is consumed and nothing is left to launch or publish.
settle() {
  local deadline=$((SECONDS + $1)) quiet=0
  while ((SECONDS < deadline)); do
    if [[ $(total_lag) == 0 && $(busy) == 0 ]]; then
      ((++quiet >= 2)) && return 0
    else
      quiet=0
    fi
    sleep 0.5
  done
  return 1
}
# Jobs per schedule and state, runs, launch requests and their distinct run ids.
snapshot() {
  psql "$TRIGD_PG" -tAc "SELECT string_agg(schedule_name || ':' || state || '=' || n, ' ' ORDER BY schedule_name, state)
                         FROM (SELECT schedule_name, state, count(*) n FROM jobs GROUP BY 1, 2) x"
  psql "$TRIGD_PG" -tAc "SELECT 'runs=' || count(*) FROM runs"
  kcat -C -b "$TRIGD_KAFKA" -t "$run.launch.default" -e -q |
    python3 -c 'import json,sys; r=[json.loads(l)["run_id"] for l in sys.stdin if l.strip()]; print(f"launches={len(r)} run_ids={len(set(r))}")'
}
duplicates() {  # trigd_events_total{outcome="duplicate"} summed over types
  curl -sf "http://127.0.0.1:$port/metrics" | awk '/^trigd_events_total\{.*outcome="duplicate"/ {s += $NF} END {print s + 0}'
}

start_trigd
# First pass: one partition event alone, so a count-3 job is stored open with one partition;
# then the other 150 at once, so a batch completes that stored job and leaves the next one open
# in the same transaction (inserting the new open job before updating the old one violated
# jobs_one_open on every retry and stalled ingestion for good; 151 = 1 + 2 + 49 * 3 + 1 leaves
# one job open at the end, whatever the batch boundaries).
head -n 1 "$tmp/data.txt" | kcat -P -b "$TRIGD_KAFKA" -t "$run.events.data" -K $'\t'
deadline=$((SECONDS + 60))
until [[ $(psql "$TRIGD_PG" -tAc "SELECT count(*) FROM jobs WHERE schedule_name = 'replay/p3' AND state = 'pending_trigger'") == 1 ]]; do
  ((SECONDS < deadline)) || fail "the first event did not open a count-3 job"
  sleep 0.2
done
tail -n +2 "$tmp/data.txt" | kcat -P -b "$TRIGD_KAFKA" -t "$run.events.data" -K $'\t'
kcat -P -b "$TRIGD_KAFKA" -t "$run.events.program" -K $'\t' <"$tmp/program.txt"
settle 90 || fail "first pass did not settle (lag $(total_lag), busy $(busy))"
first=$(snapshot)
expected="replay/p1:launched=151 replay/p3:launched=50 replay/p3:pending_trigger=1 replay/prog:launched=49
runs=250
launches=250 run_ids=250"
[[ $first == "$expected" ]] || fail "first pass: got
$first
expected
$expected"
echo "first pass ($((SECONDS - start))s): $(echo $first)"

# Pass 2: the same 200 ids again, consumed by the running trigd.
produce
settle 60 || fail "second pass did not settle"
[[ $(duplicates) == 200 ]] || fail "second pass: expected 200 duplicates, metrics say $(duplicates)"
second=$(snapshot)
[[ $second == "$first" ]] || fail "re-sent events changed something: $second"
echo "re-sent 200 ids: 200 duplicates counted, nothing changed"

# Pass 3: trigd stopped, positions rewound to 0, trigd restarted: all 400 messages again.
stop_trigd
rewound=$(psql "$TRIGD_PG" -tAc "WITH u AS (UPDATE consumer_offsets SET next_offset = 0 WHERE group_id = '$run' RETURNING 1) SELECT count(*) FROM u")
((rewound > 0)) || fail "no stored positions to rewind"
# A deliberate rewind: the group's copy of the positions follows (else trigd stops, seeing the
# store behind the group, docs/adr/0235-a-store-behind-the-group-stops-consumption.md).
"$bin/trigctl" positions resolve --replay >/dev/null || fail "positions resolve --replay"
[[ $(total_lag) == 400 ]] || fail "after rewinding, lag should be the 400 messages, is $(total_lag)"
start_trigd
settle 90 || fail "replay after rewind did not settle"
[[ $(duplicates) == 400 ]] || fail "replay: expected 400 duplicates from the fresh trigd, metrics say $(duplicates)"
third=$(snapshot)
[[ $third == "$first" ]] || fail "replaying from offset 0 changed something: $third"
echo "rewound $rewound positions to 0 and restarted: 400 messages replayed as duplicates, nothing changed"
stop_trigd
psql "${TRIGD_PG% dbname=*}" -qc "DROP DATABASE $db" >/dev/null 2>&1 || true
echo "replay e2e passed in $((SECONDS - start))s"
