#!/usr/bin/env bash
# e2e: PostgreSQL gone back in time (a restore, or a failover that lost commits) is noticed
# before anything is consumed again (docs/adr/0235-a-store-behind-the-group-stops-consumption.md).
# 1. trigd launches 20 events' runs and copies its positions to the Kafka group.
# 2. The database's positions are set back to 0, as a restore of an older backup leaves them.
# 3. trigd started again exits 1 naming the partitions and `trigctl positions resolve`, having
#    launched nothing again (the launch topic still holds 20 requests).
# 4. `trigctl positions resolve --skip` takes the group's positions; trigd then runs, launches
#    new events, and none of the first 20 a second time.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run rewind
e2e_tmp
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/trigd-*.log; do echo "--- $f"; tail -n 30 "$f"; done
  exit 1
}
launched() { psql "$TRIGD_PG" -Atc "SELECT count(*) FROM jobs WHERE state = 'launched'"; }
requests() { kcat -C -b "$TRIGD_KAFKA" -t "$run.launch.default" -e -q 2>/dev/null | wc -l; }
wait_launched() {  # wait_launched N SECONDS
  local deadline=$((SECONDS + $2))
  until [[ $(launched) -ge $1 ]]; do ((SECONDS < deadline)) || fail "$1 launched jobs expected, $(launched) found"; sleep 0.2; done
}
send() {  # send N FIRST: N partition events with ids e<FIRST>..
  for ((i = $2; i < $2 + $1; i++)); do
    echo "rw.d	{\"id\": \"e$i\", \"type\": \"partition\", \"time\": \"2026-11-24T00:00:00Z\", \"payload\": {\"dataset\": \"rw.d\", \"partitions\": [\"p$i\"]}}"
  done | kcat -P -b "$TRIGD_KAFKA" -t "$run.events.data" -K $'\t'
}
"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
echo '{"namespace": "rw", "name": "s", "program": {"name": "rw.out"}, "heartbeat_timeout": "1d",
       "trigger": {"partition": {"dataset": "rw.d"}}}' >"$tmp/s.json"
"$bin/trigctl" schedules apply -f "$tmp/s.json" >/dev/null || fail "apply"

# 1.
"$bin/trigd" >>"$tmp/trigd-0.log" 2>&1 &
pids+=($!)
send 20 0
wait_launched 20 60
wait_until 30 bash -c "[[ \$(kcat -C -b '$TRIGD_KAFKA' -t '$run.launch.default' -e -q 2>/dev/null | wc -l) -ge 20 ]]" ||
  fail "20 launch requests expected"
sleep 2  # the positions are copied to the group at most once a second
kill -TERM "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true

# 2.
psql "$TRIGD_PG" -qc "UPDATE consumer_offsets SET next_offset = 0"

# 3.
rc=0; timeout 90 "$bin/trigd" >"$tmp/trigd-1.log" 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "trigd over a rewound store: exit $rc, expected 1"
grep -q "PostgreSQL's consumed positions are behind those copied to Kafka group $run" "$tmp/trigd-1.log" ||
  fail "trigd did not say why it stopped"
grep -q "trigctl positions resolve --skip" "$tmp/trigd-1.log" || fail "trigd did not name the command"
[[ $(requests) == 20 ]] || fail "launch requests: $(requests), expected 20 (launched again)"
[[ $(launched) == 20 ]] || fail "launched jobs: $(launched), expected 20"

# 4.
"$bin/trigctl" positions resolve --skip >"$tmp/resolve.out" || fail "resolve --skip: $(cat "$tmp/resolve.out")"
grep -q "^skipped  $run.events.data\[" "$tmp/resolve.out" || fail "resolve printed: $(cat "$tmp/resolve.out")"
[[ $("$bin/trigctl" positions resolve --skip) == "positions agree: PostgreSQL is not behind group $run" ]] ||
  fail "a second resolve found positions behind"
"$bin/trigd" >>"$tmp/trigd-2.log" 2>&1 &
pids+=($!)
send 5 100
wait_launched 25 60
sleep 2
kill -0 "${pids[1]}" 2>/dev/null || fail "trigd stopped after the resolve"
[[ $(requests) == 25 ]] || fail "launch requests: $(requests), expected 25"
echo "OK: a rewound store stopped trigd with nothing launched again; resolved, it went on"
