#!/usr/bin/env bash
# e2e: Kafka static membership (--instance-id), as a user runs it.
# 1. trigd with --instance-id consumes and launches; killed with SIGKILL and restarted with the
#    same id, it takes its partitions back and launches the events sent while it was down. (That
#    no rebalance happens is what ConsumerTest.RestartedStaticMemberTakesItsPartitionsBack...
#    checks; here, that the flag reaches the consumer and a restart resumes.)
# 2. A second trigd started with the same id fences the first: the first stops by itself with
#    exit code 1 and a message naming --instance-id (it does not poll a dead consumer forever).
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run iid
ports=($(free_port 3))
e2e_tmp
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/trigd-*.log; do echo "--- $f"; tail -n 30 "$f"; done
  exit 1
}
launched() { psql "$TRIGD_PG" -Atc "SELECT count(*) FROM jobs WHERE state = 'launched'"; }
wait_launched() {  # wait_launched N SECONDS
  local deadline=$((SECONDS + $2))
  until [[ $(launched) -ge $1 ]]; do ((SECONDS < deadline)) || fail "$1 launched jobs expected, $(launched) found"; sleep 0.2; done
}
cat >"$tmp/gen.py" <<'EOF'
import json, sys
n, first = int(sys.argv[1]), int(sys.argv[2])
for i in range(first, first + n):
    e = {"id": f"e{i}", "type": "partition", "time": "2026-11-24T00:00:00Z",
         "payload": {"dataset": "iid.d", "partitions": [f"p{i}"]}}
    print(f"iid.d\t{json.dumps(e)}")
EOF
send() {  # send N FIRST: N partition events with ids e<FIRST>..
  python3 "$tmp/gen.py" "$1" "$2" | kcat -P -b "$TRIGD_KAFKA" -t "$run.events.data" -K $'\t'
}

"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
echo '{"namespace": "iid", "name": "s", "program": {"name": "iid.out"}, "heartbeat_timeout": "1d",
       "trigger": {"partition": {"dataset": "iid.d"}}}' >"$tmp/s.json"
"$bin/trigctl" schedules apply -f "$tmp/s.json" >/dev/null || fail "apply"

start_trigd() {  # start_trigd INDEX: trigd with --instance-id iid-a, metrics on ports[INDEX]
  TRIGD_METRICS="127.0.0.1:${ports[$1]}" "$bin/trigd" --instance-id iid-a >>"$tmp/trigd-$1.log" 2>&1 &
  pids+=($!)
}

# 1. Killed and restarted with the same id.
start_trigd 0
send 20 0
wait_launched 20 60
kill -9 "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true
send 20 20
start_trigd 1
wait_launched 40 60
grep -q "trigd: consumer: assigned" "$tmp/trigd-1.log" || fail "the restarted trigd logged no assignment"

# 2. A second process with the same id fences the first, which exits 1 naming --instance-id.
first=${pids[1]}
start_trigd 2
deadline=$((SECONDS + 60))
while kill -0 "$first" 2>/dev/null; do ((SECONDS < deadline)) || fail "the fenced trigd did not stop"; sleep 0.2; done
rc=0; wait "$first" || rc=$?
[[ $rc == 1 ]] || fail "the fenced trigd exited with $rc, expected 1"
grep -q "is another trigd running with --instance-id iid-a" "$tmp/trigd-1.log" || fail "no message naming --instance-id"
# The newer one goes on consuming.
send 5 40
wait_launched 45 60
echo "instance id e2e: restart with the same id resumed (45 jobs launched), a duplicate id stopped the older process with exit 1"
