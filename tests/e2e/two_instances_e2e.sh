#!/usr/bin/env bash
# e2e (issue "Event ingestion" 5 and 6c): two trigd instances in one consumer group share the
# event partitions; one is killed with SIGKILL in the middle of a stream and not restarted; the
# other takes over its partitions within seconds, and nothing is lost or applied twice.
# - Sharing: each instance's own trigd_events_total must be > 0 before the kill (events go to
#   all four partitions of events.data, one dataset per partition, and a few to all four of
#   events.program). Cooperative-sticky balances the count of partitions over all event topics,
#   not each topic: when one instance had the group to itself first, the other takes the first
#   six in topic order, all of events.data. Every instance holds at least two partitions of
#   events.data or events.program either way, and the victim is the one holding most of
#   events.data, so its data partitions are what the survivor must take over.
# - Takeover time: from the kill until the stored position of every events.data partition has
#   moved past where it was at the kill (the stream goes on to every partition; the killed
#   instance's partitions can only move once the group gave them to the survivor, which takes
#   the consumer session timeout, 10 s, plus a rebalance).
# - Nothing lost or doubled: every partition event gives exactly one launched job with one
#   run id and one launch request (re-sends of the same run id are reported, not failed).
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run two
ports=($(free_port 2))
tmp=$(mktemp -d)
pids=("" "") producer=
cleanup() {
  for p in "${pids[@]}" $producer; do [[ -n $p ]] && kill "$p" 2>/dev/null; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for i in 0 1; do echo "--- trigd $i log"; tail -n 40 "$tmp/trigd-$i.log"; done
  exit 1
}
start=$SECONDS
events=6000 rate=200

"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
python3 - >"$tmp/schedules.json" <<'EOF'
import json
print(json.dumps([{"namespace": "two", "name": f"p{k}", "program": {"name": f"two.out{k}"},
                   "heartbeat_timeout": "1d", "trigger": {"partition": {"dataset": f"two.d{k}"}}}
                  for k in range(4)]))
EOF
"$bin/trigctl" schedules apply -f "$tmp/schedules.json" >/dev/null || fail "apply"
for i in 0 1; do
  TRIGD_METRICS="127.0.0.1:${ports[$i]}" "$bin/trigd" >"$tmp/trigd-$i.log" 2>&1 &
  pids[$i]=$!
done

# The stream: event i is for dataset two.d(i%4), produced to partition i%4, paced at $rate/s.
python3 - "$run" "$TRIGD_KAFKA" "$events" "$rate" >"$tmp/producer.log" 2>&1 <<'EOF' &
import json, subprocess, sys, time
run, kafka, n, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
procs = [subprocess.Popen(["kcat", "-P", "-b", kafka, "-t", f"{run}.events.{topic}", "-p", str(p), "-K", "\t"],
                          stdin=subprocess.PIPE, text=True) for topic in ("data", "program") for p in range(4)]
t0 = time.time()
for i in range(n):
    e = {"id": f"{run}-{i}", "type": "partition", "time": "2026-11-22T10:00:00Z",
         "payload": {"dataset": f"two.d{i % 4}", "partitions": [f"p={i}"]}}
    procs[i % 4].stdin.write(f"two.d{i % 4}\t{json.dumps(e)}\n")
    if i % 10 == 9:
        # One status of a program no schedule follows, on each events.program partition.
        for p in range(4):
            e = {"id": f"{run}-p{i}-{p}", "type": "program", "time": "2026-11-22T10:00:00Z",
                 "payload": {"program": "two.none", "run_id": f"none-{i}-{p}", "status": "succeeded", "attempt": 1}}
            procs[4 + p].stdin.write(f"two.none\t{json.dumps(e)}\n")
        for p in procs:
            p.stdin.flush()
        time.sleep(max(0.0, t0 + (i + 1) / rate - time.time()))
rc = 0
for p in procs:
    p.stdin.close()
    rc |= p.wait()
sys.exit(rc)
EOF
producer=$!

applied() {  # this instance's trigd_events_total, all types and outcomes
  curl -sf "http://127.0.0.1:${ports[$1]}/metrics" | awk '/^trigd_events_total\{/ {s += $NF} END {print s + 0}'
}
lag_json() { "$bin/trigctl" --json lag; }

# Both instances consume before the kill (bounded wait: the group forms within seconds).
deadline=$((SECONDS + 30))
until (( $(applied 0) > 0 && $(applied 1) > 0 )); do
  ((SECONDS < deadline)) || fail "both instances should consume: events applied $(applied 0) and $(applied 1)"
  kill -0 "$producer" 2>/dev/null || fail "the stream ended before both instances consumed"
  sleep 0.5
done
sleep 2
before=("$(applied 0)" "$(applied 1)")
echo "before the kill: instance 0 counted ${before[0]} events, instance 1 counted ${before[1]}"
kill -0 "$producer" 2>/dev/null || fail "the stream ended before the kill; slow the producer"

# Kill the instance that holds most events.data partitions (its log's assignments) mid-stream;
# note every data partition's stored position at that moment.
data_held() {
  python3 - "$1" <<'EOF'
import re, sys
held = set()
for line in open(sys.argv[1]):
    m = re.search(r"consumer: (assigned|revoked) (.*) \(\d+ held\)$", line)
    if not m or m.group(2) == "no partitions":
        continue
    parts = set(m.group(2).split(", "))
    held = held | parts if m.group(1) == "assigned" else held - parts
print(sum(1 for p in held if ".events.data[" in p))
EOF
}
held=("$(data_held "$tmp/trigd-0.log")" "$(data_held "$tmp/trigd-1.log")")
victim=0 survivor=1
if ((held[1] > held[0])); then victim=1 survivor=0; fi
echo "instance $victim holds ${held[$victim]} of 4 events.data partitions: killing it"
kill -9 "${pids[$victim]}"; wait "${pids[$victim]}" 2>/dev/null || true; pids[$victim]=
killed_at=$(date +%s.%N)
at_kill=$(lag_json | python3 -c 'import json,sys; print(json.dumps({str(r["partition"]): r["committed"] for r in json.load(sys.stdin) if r["topic"].endswith(".events.data")}))')
deadline=$((SECONDS + 60))
while :; do
  caught_up=$(lag_json | python3 -c '
import json, sys
at_kill = json.loads(sys.argv[1])
rows = [r for r in json.load(sys.stdin) if r["topic"].endswith(".events.data")]
print(int(len(rows) == 4 and all(r["committed"] > at_kill[str(r["partition"])] for r in rows)))' "$at_kill")
  [[ $caught_up == 1 ]] && break
  kill -0 "$producer" 2>/dev/null || fail "the stream ended before every partition moved after the kill (positions at the kill $at_kill, now $(lag_json))"
  ((SECONDS < deadline)) || fail "the survivor did not take over within 60 s (positions at the kill $at_kill, now $(lag_json))"
  sleep 0.2
done
takeover=$(python3 -c "import sys,time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$killed_at")
echo "takeover: every events.data partition moved again ${takeover}s after kill -9 of instance $victim"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 30 else 1)" "$takeover" || fail "takeover took ${takeover}s (> 30 s)"

wait "$producer" || fail "producer failed: $(cat "$tmp/producer.log")"
producer=

# Drain: everything consumed, nothing waiting to launch or publish.
deadline=$((SECONDS + 90)) quiet=0
while ((quiet < 2)); do
  ((SECONDS < deadline)) || fail "did not drain: $(lag_json)"
  lag=$(lag_json | python3 -c 'import json,sys; print(sum(r["lag"] for r in json.load(sys.stdin)))')
  busy=$(psql "$TRIGD_PG" -tAc "SELECT (SELECT count(*) FROM outbox) + (SELECT count(*) FROM jobs WHERE state <> 'launched')")
  if [[ $lag == 0 && $busy == 0 ]]; then ((++quiet)); else quiet=0; fi
  sleep 0.5
done
after=$(applied $survivor)
echo "survivor counted $after events in all ($((after - ${before[$survivor]})) after the kill)"

# Count: one job per event, each event in exactly one job, one run id per job, a launch request
# for every run; nothing else.
psql "$TRIGD_PG" -XAt -F $'\t' -c "SELECT j.id, j.schedule_name, j.state, coalesce(r.run_id, ''),
    (SELECT string_agg(t->>'id', ',') FROM jsonb_array_elements(j.triggered_by) t) FROM jobs j LEFT JOIN runs r ON r.job_id = j.id" >"$tmp/jobs.tsv"
kcat -C -b "$TRIGD_KAFKA" -t "$run.launch.default" -e -q >"$tmp/launches.jsonl"
python3 - "$run" "$events" "$tmp/jobs.tsv" "$tmp/launches.jsonl" <<'EOF' || fail "counts"
import collections, json, sys
run, n, jobs_path, launches_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
jobs = [l.rstrip("\n").split("\t") for l in open(jobs_path) if l.strip()]
per_event = collections.Counter(e for j in jobs for e in j[4].split(",") if e)
want = {f"{run}-{i}" for i in range(n)}
lost = len(want - set(per_event)) + sum(1 for j in jobs if j[2] != "launched" or not j[3])
dup = sum(c - 1 for c in per_event.values() if c > 1) + len(set(per_event) - want) + max(0, len(jobs) - n)
runs = {j[3] for j in jobs if j[3]}
launches = collections.Counter(json.loads(l)["run_id"] for l in open(launches_path) if l.strip())
lost += len(runs - set(launches))
dup += sum(c for r, c in launches.items() if r not in runs)
resent = sum(c - 1 for c in launches.values() if c > 1)
print(f"events {n}, jobs {len(jobs)}, runs {len(runs)}, launch requests {sum(launches.values())} "
      f"({resent} re-sends of the same run id), lost {lost}, duplicated {dup}")
sys.exit(0 if lost == 0 and dup == 0 else 1)
EOF
echo "{\"takeover_seconds\":$takeover,\"events\":$events,\"seconds\":$((SECONDS - start))}"
kill "${pids[$survivor]}"; wait "${pids[$survivor]}" 2>/dev/null || true; pids[$survivor]=
psql "${TRIGD_PG% dbname=*}" -qc "DROP DATABASE $db" >/dev/null 2>&1 || true
echo "two instances e2e passed in $((SECONDS - start))s"
