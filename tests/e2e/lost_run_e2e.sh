#!/usr/bin/env bash
# e2e: a worker killed with -9 mid-run. With heartbeat_timeout 3s and retry (2 attempts), trigd
# must detect the run lost, hold it in retry_wait for the backoff, and publish a second launch
# request with the SAME run id and attempt 2; a second worker (started after the kill, same
# consumer group) resumes after the first worker's committed position, runs attempt 2 (the
# command sleeps only on attempt 1) and the run succeeds. trigd_runs_total counts lost and
# retried. Then the worker's other duties: two new runs go at once on its two slots
# (--concurrency 2), and SIGTERM makes it end both commands and report each run `killed`.
#
# Why the backoff is 12s and not 1s: the killed worker stays a member of the consumer group
# until Kafka's session timeout (10 s) evicts it, and until then nobody can be assigned its
# partitions. A retry published earlier waits unread, and trigd counts a launched run's
# heartbeat_timeout from its launch, so with a 1s backoff attempt 2 is itself lost (and, with
# no attempts left, failed) before the second worker can take it.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run lost
port=$(free_port)
export TRIGD_METRICS="127.0.0.1:$port"
tmp=$(mktemp -d)
pids=(); groups=()
cleanup() {
  for g in "${groups[@]}"; do kill -KILL -- "-$g" 2>/dev/null || true; done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"; echo "--- trigd log"; tail -50 "$tmp/trigd.log"
  for w in "$tmp"/worker*.log; do echo "--- $w"; cat "$w"; done
  "$bin/trigctl" runs list || true
  exit 1
}
started=$SECONDS

cat >"$tmp/lost.json" <<'EOF'
{"namespace": "default", "name": "lost", "program": {"name": "lost.job",
 "args": {"command": "[ \"$TRIGD_ATTEMPT\" = 1 ] && sleep 30; true"}},
 "trigger": {"partition": {"dataset": "lost.raw"}},
 "heartbeat_timeout": "3s", "retry": {"max_attempts": 2, "backoff": "12s"}}
EOF
"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
"$bin/trigctl" schedules apply -f "$tmp/lost.json" >/dev/null || fail "apply"
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)
"$bin/trigd-worker" >"$tmp/worker1.log" 2>&1 & worker1=$!; pids+=($worker1)

"$bin/trigctl" events emit partition lost.raw dt=1 >/dev/null || fail "emit"

run_field() {  # run_field RUN_ID FIELD
  "$bin/trigctl" runs show "$1" --json | python3 -c '
import json, sys
v = json.load(sys.stdin).get(sys.argv[1])
print(v if isinstance(v, str) else json.dumps(v))' "$2"
}
launches() { kcat -C -b "$TRIGD_KAFKA" -t "${run}.launch.default" -e -q 2>/dev/null || true; }
has_launch() { [[ $(launches | wc -l) -ge $1 ]]; }
wait_until 60 has_launch 1 || fail "no launch request"
run_id=$(launches | head -1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["run_id"])')
is_state() { [[ $(run_field "$run_id" state) == "$1" ]]; }
wait_until 30 is_state running || fail "run $run_id never running (state $(run_field "$run_id" state))"
# The command's process group, so the test can end it like a host death would.
child=$(sed -n 's/.*attempt 1 .* started: pid \([0-9]*\).*/\1/p' "$tmp/worker1.log")
[[ -n $child ]] || fail "worker1 did not log its child's pid"
groups+=("$child")
sleep 1  # at least one heartbeat after started
kill -9 "$worker1"; wait "$worker1" 2>/dev/null || true
kill -KILL -- "-$child" 2>/dev/null || true
killed_at=$SECONDS
echo "killed worker1 (run $run_id attempt 1) at $((killed_at - started)) s"
"$bin/trigd-worker" --concurrency 2 >"$tmp/worker2.log" 2>&1 & worker2=$!; pids+=($worker2)

wait_until 30 is_state retry_wait || fail "run $run_id never lost/retry_wait (state $(run_field "$run_id" state))"
echo "run lost, in retry_wait $((SECONDS - killed_at)) s after the kill"
wait_until 30 has_launch 2 || fail "no second launch request"
second=$(launches | sed -n 2p)
python3 - "$second" "$run_id" <<'EOF' || fail "second launch request: $second"
import json, sys
r = json.loads(sys.argv[1])
assert r["run_id"] == sys.argv[2], ("run id changed", r["run_id"])
assert r["attempt"] == 2, ("attempt", r["attempt"])
EOF
succeeded() { is_state succeeded && [[ $(run_field "$run_id" attempt) == 2 ]]; }
wait_until 30 succeeded || fail "run $run_id: state $(run_field "$run_id" state), attempt $(run_field "$run_id" attempt)"
done_at=$SECONDS
# The run's history tells the story: launched, started, lost, launched again, succeeded.
story=$(run_field "$run_id" history | python3 -c '
import json, sys
print(" ".join("%s/%s" % (e.get("status"), e.get("attempt")) for e in json.load(sys.stdin)))')
[[ $story == "launched/1 started/1 lost/1 launched/2 started/2 succeeded/2" ]] || fail "history: $story"
# The second worker resumed after the first one's committed position: it never ran attempt 1.
grep -q "attempt 2 (lost.job) succeeded (exit 0)" "$tmp/worker2.log" || fail "worker2 did not run attempt 2"
grep -q "attempt 1" "$tmp/worker2.log" && fail "worker2 re-ran attempt 1 (launch topic re-read from the start)"
[[ $(launches | wc -l) == 2 ]] || fail "expected exactly 2 launch requests, got $(launches | wc -l)"
metrics=$(curl -sf "http://127.0.0.1:$port/metrics") || fail "no /metrics on $port"
metric() { echo "$metrics" | grep -F "$1" | awk '{print $NF}'; }
lost=$(metric 'trigd_runs_total{outcome="lost"}'); retried=$(metric 'trigd_runs_total{outcome="retried"}')
[[ ${lost:-0} -ge 1 && ${retried:-0} -ge 1 ]] || fail "metrics: lost=$lost retried=$retried"
echo "run $run_id lost and retried as attempt 2, succeeded $((done_at - killed_at)) s after the kill -9"

# Two more runs (attempt 1: each sleeps 30 s) run at once on worker2's two slots.
"$bin/trigctl" events emit partition lost.raw dt=2 >/dev/null || fail "emit dt=2"
"$bin/trigctl" events emit partition lost.raw dt=3 >/dev/null || fail "emit dt=3"
running_runs() {
  "$bin/trigctl" runs list --json | python3 -c '
import json, sys
print(" ".join(sorted(r["run_id"] for r in json.load(sys.stdin) if r["state"] == "running")))'
}
two_running() { [[ $(running_runs | wc -w) == 2 ]]; }
wait_until 30 two_running || fail "two runs were not running at once: [$(running_runs)]"
pair=$(running_runs)
# SIGTERM: both commands end, both runs are reported killed, the worker exits.
kill -TERM "$worker2"

exited() { ! kill -0 "$worker2" 2>/dev/null; }
wait_until 15 exited || fail "worker2 still running 15 s after SIGTERM"
wait "$worker2" 2>/dev/null || fail "worker2 exited non-zero after SIGTERM"
for id in $pair; do
  killed_run() { [[ $(run_field "$1" state) == killed ]]; }
  wait_until 15 killed_run "$id" || fail "run $id: state $(run_field "$id" state) after SIGTERM, expected killed"
  grep -q "run $id attempt 1 (lost.job) killed" "$tmp/worker2.log" || fail "worker2 did not log $id killed"
done
echo "SIGTERM: worker2 exited, runs $pair reported killed"

# A command that fails its first attempt: the failure is retried per `retry`, with the same run
# id, and the second attempt succeeds (docs/adr/0011-worker-failures-are-retried.md).
cat >"$tmp/flaky.json" <<'EOF'
{"namespace": "default", "name": "flaky", "program": {"name": "flaky.job",
 "args": {"command": "[ \"$TRIGD_ATTEMPT\" = 1 ] && exit 3; true"}},
 "trigger": {"partition": {"dataset": "flaky.raw"}}, "retry": {"max_attempts": 2, "backoff": "1s"}}
EOF
"$bin/trigctl" schedules apply -f "$tmp/flaky.json" >/dev/null || fail "apply flaky"
"$bin/trigd-worker" >"$tmp/worker3.log" 2>&1 & worker3=$!; pids+=($worker3)
"$bin/trigctl" events emit partition flaky.raw dt=1 >/dev/null || fail "emit flaky.raw"
first_run() {  # first_run SCHEDULE: the run id of its newest run, or nothing
  "$bin/trigctl" runs list --schedule "$1" --json | python3 -c '
import json, sys
runs = json.load(sys.stdin)
print(runs[0]["run_id"] if runs else "")'
}
flaky_run() { first_run default/flaky; }
flaky_done() { local id; id=$(flaky_run); [[ -n $id && $(run_field "$id" state) == succeeded ]]; }
wait_until 30 flaky_done || fail "flaky run: $("$bin/trigctl" runs list --schedule default/flaky)"
flaky=$(flaky_run)
story=$(run_field "$flaky" history | python3 -c '
import json, sys
print(" ".join("%s/%s" % (e.get("status"), e.get("attempt")) for e in json.load(sys.stdin)))')
[[ $story == "launched/1 started/1 failed/1 launched/2 started/2 succeeded/2" ]] || fail "flaky history: $story"
echo "failed attempt retried: run $flaky $story"

# A schedule deleted while its failed run waits for a retry: the run is killed, and no further
# attempt is launched (docs/adr/0020-delete-kills-and-announces.md).
cat >"$tmp/doomed.json" <<'EOF'
{"namespace": "default", "name": "doomed", "program": {"name": "doomed.job", "args": {"command": "exit 1"}},
 "trigger": {"partition": {"dataset": "doomed.raw"}}, "retry": {"max_attempts": 2, "backoff": "8s", "jitter": "0%"}}
EOF
"$bin/trigctl" schedules apply -f "$tmp/doomed.json" >/dev/null || fail "apply doomed"
"$bin/trigctl" events emit partition doomed.raw dt=1 >/dev/null || fail "emit doomed.raw"
doomed_run() { first_run default/doomed; }
doomed_waits() { local id; id=$(doomed_run); [[ -n $id && $(run_field "$id" state) == retry_wait ]]; }
# The one retry waits 8 s: time enough for the polls below on a loaded machine to see the wait
# and delete within it (a poll later than the backoff would see attempt 2 instead).
wait_until 30 doomed_waits || fail "doomed run never waited for a retry: $("$bin/trigctl" runs list --schedule default/doomed)"
waiting_since=$SECONDS
doomed=$(doomed_run)
"$bin/trigctl" schedules delete default/doomed >/dev/null || fail "delete doomed"
[[ $(run_field "$doomed" state) == killed ]] || fail "doomed run $doomed: $(run_field "$doomed" state) after delete, expected killed"
((SECONDS - waiting_since < 8)) || fail "the delete came after the 8 s backoff: the machine is too slow for this check"
sleep $((waiting_since + 10 - SECONDS))  # past the backoff
attempts=$(launches | grep -c "\"run_id\":\"$doomed\"")
[[ $attempts == 1 ]] || fail "doomed run $doomed launched $attempts times, expected once (no retry after the delete)"
[[ $(run_field "$doomed" state) == killed ]] || fail "doomed run $doomed: $(run_field "$doomed" state) 5 s after delete"
echo "schedule deleted during a retry wait: run $doomed killed, not launched again"
# trigd stopped for longer than a running run's heartbeat_timeout while the worker goes on
# heartbeating: back, trigd reads those heartbeats before it counts the run silent, so the
# healthy run is not declared lost and its command runs once
# (docs/adr/0013-lost-runs-wait-for-the-program-topic.md).
cat >"$tmp/steady.json" <<'EOF'
{"namespace": "default", "name": "steady", "program": {"name": "steady.job", "args": {"command": "sleep 16"}},
 "trigger": {"partition": {"dataset": "steady.raw"}}, "heartbeat_timeout": "3s", "retry": {"max_attempts": 2, "backoff": "1s"}}
EOF
"$bin/trigctl" schedules apply -f "$tmp/steady.json" >/dev/null || fail "apply steady"
"$bin/trigctl" events emit partition steady.raw dt=1 >/dev/null || fail "emit steady.raw"
steady_run() { first_run default/steady; }
steady_is() { local id; id=$(steady_run); [[ -n $id && $(run_field "$id" state) == "$1" ]]; }
wait_until 30 steady_is running || fail "steady run never running: $("$bin/trigctl" runs list --schedule default/steady)"
steady=$(steady_run)
kill -TERM "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true
sleep 8  # the worker heartbeats every second meanwhile; trigd reads none
"$bin/trigd" >>"$tmp/trigd.log" 2>&1 & pids[0]=$!
wait_until 40 steady_is succeeded || fail "steady run $steady: state $(run_field "$steady" state) after trigd's return"
story=$(run_field "$steady" history | python3 -c '
import json, sys
print(" ".join("%s/%s" % (e.get("status"), e.get("attempt")) for e in json.load(sys.stdin)))')
[[ $story == "launched/1 started/1 succeeded/1" ]] || fail "steady run $steady across trigd's stop: $story"
attempts=$(launches | grep -c "\"run_id\":\"$steady\"")
[[ $attempts == 1 ]] || fail "steady run $steady launched $attempts times across trigd's stop, expected once"
echo "trigd stopped 8 s under a 3 s heartbeat_timeout: run $steady $story, launched once"
# A launch request the worker cannot run (its command is not a string) is reported failed at
# once, not skipped (the run would fail as lost only 10 minutes later).
cat >"$tmp/badcmd.json" <<'EOF'
{"namespace": "default", "name": "badcmd", "program": {"name": "badcmd.job", "args": {"command": ["echo", "hi"]}},
 "trigger": {"partition": {"dataset": "badcmd.raw"}}}
EOF
"$bin/trigctl" schedules apply -f "$tmp/badcmd.json" >/dev/null || fail "apply badcmd"
"$bin/trigctl" events emit partition badcmd.raw dt=1 >/dev/null || fail "emit badcmd.raw"
badcmd_failed() { local id; id=$(first_run default/badcmd); [[ -n $id && $(run_field "$id" state) == failed ]]; }
wait_until 20 badcmd_failed || fail "unrunnable request: $("$bin/trigctl" runs list --schedule default/badcmd)"
grep -q "cannot run: program.args.command is not a string; reported failed" "$tmp/worker3.log" || fail "worker3 did not say why it cannot run"
echo "unrunnable launch request: run $(first_run default/badcmd) failed at once"
echo "lost run e2e: passed in $((SECONDS - started)) s"
