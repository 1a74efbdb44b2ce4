#!/usr/bin/env bash
# e2e: a schedule with a 4s delay. An event makes its job ready; `trigctl jobs why` shows the
# delay holding it; the schedule is deleted about 2 s later, before the delay ends. Nothing of
# it may launch afterwards: 6 s past the delay's end there is still no launch request and no
# run, and the job is discarded with reason "schedule deleted".
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run delay
port=$(free_port)
export TRIGD_METRICS="127.0.0.1:$port"
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- trigd log"; tail -50 "$tmp/trigd.log"; echo "--- worker log"; cat "$tmp/worker.log"; exit 1; }

"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)
"$bin/trigd-worker" >"$tmp/worker.log" 2>&1 & pids+=($!)

# One try of the scenario with schedule default/delayed-N. Returns 0 when it passed, 2 when the
# machine was too slow to delete before the delay ended (nothing proven; try again), and fails
# the test on a real violation.
scenario() {
  local n=$1 name=default/delayed-$1 job= why delay_ends left shown wait_s launches
  cat >"$tmp/delayed-$n.json" <<EOF
{"namespace": "default", "name": "delayed-$n", "program": {"name": "delayed.job", "args": {"command": "true"}},
 "trigger": {"partition": {"dataset": "delayed-$n.raw"}}, "constraints": {"delay": "4s"}}
EOF
  "$bin/trigctl" schedules apply -f "$tmp/delayed-$n.json" >/dev/null || fail "apply"
  sleep 1.5  # the running trigd picks the schedule up within a second
  "$bin/trigctl" events emit partition "delayed-$n.raw" dt=1 >/dev/null || fail "emit"

  # The job becomes ready and waits on its delay. The steps from here to the delete are few
  # and cheap (no python): the delete must land before the delay ends on a loaded machine too.
  local deadline=$((SECONDS + 30))
  while ((SECONDS < deadline)); do
    job=$("$bin/trigctl" jobs list --schedule "$name" --state pending_constraint --json | grep -o '"id":[0-9]*' | head -1 | cut -d: -f2 || true)
    [[ -n $job ]] && break
    sleep 0.2
  done
  [[ -n $job ]] || fail "no job of $name waiting on its constraints"
  why=$("$bin/trigctl" jobs why "$job" --json)
  # The delay's end is the job's next check; delete about 2 s after readiness (2 s before it).
  delay_ends=$(echo "$why" | grep -o '"next_check_at":"[^"]*"' | tail -1 | cut -d'"' -f4 || true)
  [[ -n $delay_ends ]] || fail "jobs why shows no next check: $why"
  left_ms=$(( $(date -d "$delay_ends" +%s%3N) - $(date +%s%3N) - 2200 ))
  ((left_ms <= 0)) || sleep "$((left_ms / 1000)).$(printf %03d $((left_ms % 1000)))"
  "$bin/trigctl" schedules delete "$name" | grep -q deleted || fail "delete"

  local rc=0
  python3 - "$why" "$delay_ends" <<'EOF' || rc=$?
import json, sys
w = json.loads(sys.argv[1])
if w["state"] != "pending_constraint":
    sys.exit(2)  # asked after the delay ended: too slow
assert w["next_check_at"] == sys.argv[2], (w["next_check_at"], sys.argv[2])
delay = [c for c in w["constraints"] if c["constraint"] == "delay"]
assert delay and delay[0]["result"] == "wait", w["constraints"]
assert "delay until" in delay[0]["reason"], delay[0]
assert w["decision_now"] == "wait", w["decision_now"]
assert "delay" in w["summary"], w["summary"]
assert w["next_check_at"] == delay[0]["next_check_at"], (w["next_check_at"], delay[0]["next_check_at"])
EOF
  ((rc != 2)) || { echo "try $n: too slow, jobs why came after the delay ended"; return 2; }
  ((rc == 0)) || fail "jobs why did not show the delay wait: $why"

  # finished_at: when the delete discarded the job (or the relay launched it).
  shown=$("$bin/trigctl" jobs show "$job" --json)
  python3 - "$shown" "$delay_ends" <<'EOF' || { echo "try $n: too slow, the delete came after the delay ended: $shown"; return 2; }
import json, sys
from datetime import datetime, timedelta
j = json.loads(sys.argv[1])
ready, discarded = datetime.fromisoformat(j["ready_at"]), datetime.fromisoformat(j["finished_at"])
ends = datetime.fromisoformat(sys.argv[2].replace("Z", "+00:00"))
assert abs(ends - ready - timedelta(seconds=4)) < timedelta(milliseconds=2), ("delay end", ready, ends)
assert discarded < ends and j["state"] == "discarded"
print("deleted the schedule %.2f s after the job became ready, %.2f s before its delay ended" %
      ((discarded - ready).total_seconds(), (ends - discarded).total_seconds()))
EOF

  # 6 s past the delay's end, by the database's clock: nothing launched, the job discarded.
  wait_s=$(psql "$TRIGD_PG" -tAc "SELECT greatest(0, extract(epoch FROM ready_at + interval '10 seconds' - now())) FROM jobs WHERE id=$job")
  sleep "$wait_s"
  launches=$(kcat -C -b "$TRIGD_KAFKA" -t "${run}.launch.default" -e -q 2>/dev/null | grep -cF "\"schedule\":\"$name\"" || true)
  [[ $launches == 0 ]] || fail "$launches launch request(s) of $name after the delete"
  [[ $(psql "$TRIGD_PG" -tAc "SELECT count(*) FROM runs WHERE schedule_name='$name'") == 0 ]] || fail "a run of $name exists"
  shown=$("$bin/trigctl" jobs show "$job" --json)
  python3 - "$shown" <<'EOF' || fail "job not discarded as schedule deleted: $shown"
import json, sys
j = json.loads(sys.argv[1])
assert j["state"] == "discarded", j["state"]
assert j["discard_reason"] == "schedule deleted", j["discard_reason"]
EOF
  echo "delay delete e2e: job $job of $name discarded (schedule deleted), no launch request"
  return 0
}

for n in 1 2 3; do
  rc=0; scenario "$n" || rc=$?
  ((rc == 0)) && break
  ((n < 3)) || fail "three tries were too slow to delete before the delay ended"
done
# Only a too-slow try may have run something (its delay ended before the delete).
((n > 1)) || ! grep -q "^[^ ]* trigd-worker: run " "$tmp/worker.log" || fail "the worker ran something"
