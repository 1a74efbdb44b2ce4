#!/usr/bin/env bash
# e2e: 10,000 events for 10,000 different schedules are applied in a few ingest transactions,
# not 10,000 (SPEC §5, issue "Event ingestion" point 7), and 10,000 events that reach no
# schedule open nothing. Prints the apply time of 10,000 schedules and the transaction count.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
n=${BATCH_SCHEDULES:-10000}
e2e_run bat
port=$(free_port)
export TRIGD_METRICS="127.0.0.1:$port"
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; tail -20 "$tmp/trigd.log"; exit 1; }
"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
python3 - "$n" >"$tmp/schedules.json" <<'PY'
import json, sys
n = int(sys.argv[1])
print(json.dumps([{"name": f"b{i}", "program": {"name": f"b.p{i}"},
                   "trigger": {"partition": {"dataset": f"b.d{i}"}}} for i in range(n)]))
PY
start=$(date +%s.%N)
"$bin/trigctl" schedules apply -f "$tmp/schedules.json" >/dev/null || fail "apply"
echo "applied $n schedules in one transaction in $(python3 -c "print(round($(date +%s.%N) - $start, 2))") s"
python3 - "$n" >"$tmp/events" <<'PY'
import json, sys
n = int(sys.argv[1])
for i in range(n):
    print(json.dumps({"id": f"be{i}", "type": "partition", "time": "2026-11-22T10:00:00Z",
                      "payload": {"dataset": f"b.d{i}", "partitions": ["p"]}}))
for i in range(n):
    print(json.dumps({"id": f"bn{i}", "type": "partition", "time": "2026-11-22T10:00:00Z",
                      "payload": {"dataset": f"nobody.d{i}", "partitions": ["p"]}}))
PY
# Produced before trigd starts, so it finds a full backlog: the batching under test.
kcat -P -b "$TRIGD_KAFKA" -t "$run.events.data" -p 0 -l "$tmp/events"
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)
metric() { curl -sf "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
deadline=$((SECONDS + 180))
while ((SECONDS < deadline)); do
  jobs=$(psql "$TRIGD_PG" -tAc "SELECT count(*) FROM jobs")
  [[ $jobs == "$n" ]] && [[ $(metric 'trigd_events_total{outcome="no_match",type="partition"}') == "$n" ]] && break
  sleep 1
done
[[ $jobs == "$n" ]] || fail "expected $n jobs, got $jobs"
tx=$(metric trigd_ingest_transactions_total)
nomatch=$(metric 'trigd_events_total{outcome="no_match",type="partition"}')
echo "$((2 * n)) events ($n for $n schedules, $n reaching none): $jobs jobs in $tx ingest transactions; no_match $nomatch"
[[ $nomatch == "$n" ]] || fail "expected $n no_match events, got $nomatch"
python3 -c "import sys; sys.exit(0 if float('$tx') <= 20 else 1)" || fail "$tx ingest transactions for $((2 * n)) events: not batched"
[[ $(psql "$TRIGD_PG" -tAc "SELECT count(*) FROM seen_events WHERE id LIKE 'bn%'") == 0 ]] || fail "unmatched events were recorded"
