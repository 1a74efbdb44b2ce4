#!/usr/bin/env bash
# e2e: time windows and max_concurrent_runs through real trigd, trigd-worker, Kafka, PostgreSQL.
# 1. A schedule whose UTC time_window opens at the first minute boundary at least 60 s from
#    now (and closes 2 minutes later). Its job becomes ready at once but waits: `jobs why`
#    says it is outside the window and the next check is the window's start; it then launches
#    inside the window (launched_at >= window start) and succeeds.
# 2. Meanwhile a schedule with max_concurrent_runs 1 and a `sleep 3` command gets three
#    trigger completions while a worker with three slots is running: its three runs never
#    overlap (each launches at or after the previous one finished).
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run window
port=$(free_port)
export TRIGD_METRICS="127.0.0.1:$port"
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- trigd log"; tail -50 "$tmp/trigd.log"; echo "--- worker log"; cat "$tmp/worker.log"; "$bin/trigctl" runs list || true; exit 1; }
started=$SECONDS

# The window: the first UTC minute boundary >= 60 s ahead, for 2 minutes (wraps past midnight).
now=$(date -u +%s)
open_at=$(( (now + 60 + 59) / 60 * 60 ))
start_hm=$(date -u -d "@$open_at" +%H:%M)
end_hm=$(date -u -d "@$((open_at + 120))" +%H:%M)
open_iso=$(date -u -d "@$open_at" +%Y-%m-%dT%H:%M:%SZ)
echo "window $start_hm-$end_hm UTC opens in $((open_at - now)) s ($open_iso)"

cat >"$tmp/windowed.json" <<EOF
{"namespace": "default", "name": "windowed", "program": {"name": "windowed.job", "args": {"command": "true"}},
 "trigger": {"partition": {"dataset": "windowed.raw"}},
 "constraints": {"time_window": {"start": "$start_hm", "end": "$end_hm", "timezone": "UTC"}}}
EOF
cat >"$tmp/serial.json" <<'EOF'
{"namespace": "default", "name": "serial", "program": {"name": "serial.job", "args": {"command": "sleep 3"}},
 "trigger": {"program": {"name": "serial.upstream", "status": ["succeeded"]}},
 "constraints": {"max_concurrent_runs": 1}}
EOF
"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
"$bin/trigctl" schedules apply -f "$tmp" >/dev/null || fail "apply"
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)
"$bin/trigd-worker" --concurrency 3 >"$tmp/worker.log" 2>&1 & pids+=($!)
sleep 1.5  # the running trigd picks the schedules up within a second
"$bin/trigctl" events emit partition windowed.raw dt=1 >/dev/null || fail "emit partition"
for i in 1 2 3; do "$bin/trigctl" events emit program serial.upstream succeeded >/dev/null || fail "emit program $i"; done

# 1. The windowed job is ready and waits for the window.
deadline=$((SECONDS + 30)); job=
while ((SECONDS < deadline)); do
  job=$("$bin/trigctl" jobs list --schedule default/windowed --state pending_constraint --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(j[0]["id"] if j else "")')
  [[ -n $job ]] && break
  sleep 0.2
done
[[ -n $job ]] || fail "the windowed job is not waiting on its constraints"
why=$("$bin/trigctl" jobs why "$job" --json)
python3 - "$why" "$open_iso" <<'EOF' || fail "jobs why: $why"
import json, sys
w, opens = json.loads(sys.argv[1]), sys.argv[2]
win = [c for c in w["constraints"] if c["constraint"] == "time_window"]
assert win and win[0]["result"] == "wait", w["constraints"]
assert win[0]["reason"].startswith("outside window"), win[0]["reason"]
assert win[0]["next_check_at"] == opens, (win[0]["next_check_at"], opens)
assert w["next_check_at"] == opens, (w["next_check_at"], opens)
assert w["decision_now"] == "wait"
EOF
"$bin/trigctl" jobs why "$job" | grep -q "next check: $open_iso" || fail "human jobs why lacks the next check"

# 2. The serial runs, while the window is still shut.
serial_done() {
  "$bin/trigctl" runs list --schedule default/serial --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
sys.exit(0 if len(r) == 3 and all(x["state"] == "succeeded" for x in r) else 1)'
}
deadline=$((SECONDS + 60))
until serial_done; do ((SECONDS < deadline)) || fail "three serial runs did not all succeed"; sleep 0.5; done
"$bin/trigctl" runs list --schedule default/serial --json | python3 -c '
import json, sys
from datetime import datetime
t = lambda s: datetime.fromisoformat(s)
runs = sorted(json.load(sys.stdin), key=lambda r: t(r["launched_at"]))
for a, b in zip(runs, runs[1:]):
    assert t(b["launched_at"]) >= t(a["finished_at"]), ("overlap", a, b)
print("serial runs:", ", ".join("%s-%s" % (r["launched_at"][11:23], r["finished_at"][11:23]) for r in runs))' ||
  fail "serial runs overlapped"
(( $(date -u +%s) < open_at )) || fail "the serial part ran past the window's start; the window check below proves less"
[[ $("$bin/trigctl" runs list --schedule default/windowed --json) == "[]" ]] || fail "the windowed job launched before its window"

# 1, continued: the job launches once the window opens, not before.
deadline=$((open_at - $(date -u +%s) + SECONDS + 30))
launched=
while ((SECONDS < deadline)); do
  launched=$("$bin/trigctl" runs list --schedule default/windowed --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r[0]["launched_at"] if r and r[0]["state"] == "succeeded" else "")')
  [[ -n $launched ]] && break
  sleep 0.5
done
[[ -n $launched ]] || fail "the windowed job did not launch and succeed within 30 s of the window opening"
python3 - "$launched" "$open_iso" <<'EOF' || fail "launched at $launched, before the window opened at $open_iso"
import sys
from datetime import datetime
launched = datetime.fromisoformat(sys.argv[1])
opens = datetime.fromisoformat(sys.argv[2].replace("Z", "+00:00"))
assert launched >= opens, (launched, opens)
print("windowed job launched %.3f s after the window opened" % (launched - opens).total_seconds())
EOF
request=$(kcat -C -b "$TRIGD_KAFKA" -t "${run}.launch.default" -e -q | grep -F '"schedule":"default/windowed"') ||
  fail "no launch request for the windowed job"
[[ $(echo "$request" | wc -l) == 1 ]] || fail "more than one launch request for the windowed job"
echo "time window e2e: passed in $((SECONDS - started)) s"
