#!/usr/bin/env bash
# e2e: trigd-worker under a backlog of launch requests (no trigd: the requests are produced
# straight onto the launch topic, without a command, so each run succeeds at once).
# 1. One worker (--concurrency 8) drains 20,000 requests and keeps its partitions throughout.
#    A commit of each request's offset on its own (about 1,000 commits a second) would crowd
#    out the group heartbeats on the coordinator connection: the worker would lose its
#    partitions a session timeout after the assignment and then hold none for 30-90 s
#    (docs/adr/0032-worker-commits-through-librdkafka.md).
# 2. A second worker joins the group of a fresh pair mid-backlog: the partitions handed over
#    were committed up to what the first had taken, so no request runs twice (with commits
#    sent by the worker itself, one refused during the rebalance would make librdkafka drop
#    the assignment as lost, and thousands of requests run twice).
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run backlog
e2e_tmp
fail() {
  echo "FAIL: $*"
  for w in "$tmp"/*.log; do echo "--- $w"; grep -v ' succeeded$' "$w" | tail -20; done
  exit 1
}
n=20000
topic="${run}.launch.default"
"$bin/trigctl" topics create >/dev/null
python3 - "$n" >"$tmp/requests" <<'PY'
import json, sys
for i in range(int(sys.argv[1])):
    program = f"backlog.p{i % 16}"
    print(program + "\t" + json.dumps({
        "run_id": f"backlog-{i:06d}", "schedule": "default/backlog", "schedule_version": 1,
        "program": {"name": program, "args": {}, "target": "default"}, "attempt": 1,
        "heartbeat_timeout": "2m", "launched_at": "2026-11-25T10:00:00Z", "triggered_by": []}))
PY
kcat -P -b "$TRIGD_KAFKA" -t "$topic" -K $'\t' -l "$tmp/requests" || fail "produce"

done_runs() { cat "$@" | sed -n 's/^[^ ]* trigd-worker: run \([^ ]*\) .* succeeded$/\1/p'; }
wait_drained() {  # wait_drained SECONDS LOG...: until every request ran
  local deadline=$((SECONDS + $1)); shift
  while ((SECONDS < deadline)); do
    (($(done_runs "$@" | sort -u | wc -l) >= n)) && return 0
    sleep 0.5
  done
  return 1
}

# 1. One worker, the whole backlog.
started=$SECONDS
"$bin/trigd-worker" --concurrency 8 >"$tmp/one.log" 2>&1 & one=$!; pids+=($one)
wait_drained 60 "$tmp/one.log" || fail "one worker ran $(done_runs "$tmp/one.log" | sort -u | wc -l) of $n requests in 60 s"
echo "one worker drained $n requests in $((SECONDS - started)) s"
kill -TERM "$one"; wait "$one" || fail "worker exit $?"
# Assigned once, revoked only by its own shutdown (after "stopped").
(($(grep -c 'consumer: assigned' "$tmp/one.log") == 1)) || fail "the worker's partitions moved while it drained"
(($(sed '/^[^ ]* trigd-worker: stopped/q' "$tmp/one.log" | grep -c 'consumer: revoked') == 0)) ||
  fail "the worker lost its partitions while it drained"
# Its commits are all in: a worker restarted in the group finds nothing left to run.
"$bin/trigd-worker" --concurrency 8 >"$tmp/again.log" 2>&1 & again=$!; pids+=($again)
sleep 5
kill -TERM "$again"; wait "$again" || true
[[ $(done_runs "$tmp/again.log" | wc -l) == 0 ]] || fail "a restarted worker ran $(done_runs "$tmp/again.log" | wc -l) requests again"

# 2. Two workers of a fresh group, the second joining while the first drains.
"$bin/trigd-worker" --concurrency 8 --group-id "$run-pair" >"$tmp/first.log" 2>&1 & first=$!; pids+=($first)
sleep 3
"$bin/trigd-worker" --concurrency 8 --group-id "$run-pair" >"$tmp/second.log" 2>&1 & second=$!; pids+=($second)
wait_drained 60 "$tmp/first.log" "$tmp/second.log" || fail "two workers did not drain $n requests in 60 s"
kill -TERM "$first" "$second"; wait "$first" "$second" || true
grep -q 'consumer: assigned .*\[' "$tmp/second.log" || fail "the second worker was given no partition"
twice=$(done_runs "$tmp/first.log" "$tmp/second.log" | sort | uniq -d | wc -l)
echo "two workers: first ran $(done_runs "$tmp/first.log" | wc -l), second $(done_runs "$tmp/second.log" | wc -l), $twice twice"
((twice == 0)) || fail "$twice requests ran twice after the hand-over"
echo "PASS"
