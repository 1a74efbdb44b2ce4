#!/usr/bin/env bash
# e2e: a nine-program DAG through real trigd, trigd-worker, Kafka and PostgreSQL.
#   p1 -> p2, p3;  p2 -> p4, p5;  p3 -> p6;  p4 -> p7;  p5 + p6 -> p8 (all);  p7 -> p9
# p1 is triggered by a partition event; every other node by program triggers with
# on_upstream_failure: discard. Every command is `true` except p4's `exit 3`. Which nodes must
# succeed is computed from the graph: p4 fails, every node downstream of it is never launched
# and trigd publishes `killed` (reason upstream_failed) for it; every other node succeeds.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run dag
port=$(free_port)
export TRIGD_METRICS="127.0.0.1:$port"
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- trigd log"; tail -50 "$tmp/trigd.log"; echo "--- worker log"; cat "$tmp/worker.log"; exit 1; }
started=$SECONDS

# The graph: node -> its upstream nodes (p8 waits for all of them).
declare -A upstream=([p2]="p1" [p3]="p1" [p4]="p2" [p5]="p2" [p6]="p3" [p7]="p4" [p8]="p5 p6" [p9]="p7")
failing=p4
nodes=(p1 p2 p3 p4 p5 p6 p7 p8 p9)
mkdir -p "$tmp/schedules"
for n in "${nodes[@]}"; do
  command=true; [[ $n == "$failing" ]] && command="exit 3"
  if [[ $n == p1 ]]; then
    trigger='{"partition": {"dataset": "'$run'.raw"}}'
  else
    leaves=()
    for u in ${upstream[$n]}; do
      leaves+=('{"program": {"name": "dag.'$u'", "status": ["succeeded"], "on_upstream_failure": "discard"}}')
    done
    if ((${#leaves[@]} == 1)); then trigger=${leaves[0]}; else trigger='{"all": ['$(IFS=,; echo "${leaves[*]}")']}'; fi
  fi
  cat >"$tmp/schedules/$n.json" <<EOF
{"namespace": "dag", "name": "$n", "program": {"name": "dag.$n", "args": {"command": "$command"}},
 "trigger": $trigger}
EOF
done

# Expected outcome by the graph: the failing node's descendants are killed, the rest succeed.
declare -A expect=([$failing]=failed)
changed=1
while ((changed)); do
  changed=0
  for n in "${nodes[@]}"; do
    [[ -n ${expect[$n]:-} ]] && continue
    for u in ${upstream[$n]:-}; do
      if [[ ${expect[$u]:-} == failed || ${expect[$u]:-} == killed ]]; then expect[$n]=killed; changed=1; fi
    done
  done
done
succeeding=(); killed=()
for n in "${nodes[@]}"; do
  case ${expect[$n]:-succeeded} in succeeded) succeeding+=("$n") ;; killed) killed+=("$n") ;; esac
done
echo "expect succeeded: ${succeeding[*]}; failed: $failing; killed as upstream_failed: ${killed[*]}"
[[ ${#succeeding[@]} == 6 && ${#killed[@]} == 2 ]] || fail "graph bookkeeping: ${succeeding[*]} / ${killed[*]}"

"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
"$bin/trigctl" schedules apply -f "$tmp/schedules" >"$tmp/apply.out" || fail "apply: $(cat "$tmp/apply.out")"
[[ $(grep -c applied "$tmp/apply.out") == 9 ]] || fail "expected 9 schedules applied: $(cat "$tmp/apply.out")"
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)
"$bin/trigd-worker" --concurrency 2 >"$tmp/worker.log" 2>&1 & pids+=($!)

echo '{"id":"'$run'-p1","type":"partition","time":"2026-11-22T10:00:00Z","payload":{"dataset":"'$run'.raw","partitions":["dt=2026-11-22"]}}' |
  kcat -P -b "$TRIGD_KAFKA" -t "${run}.events.data" -k "$run.raw"

# Runs by program: "program state" lines, from trigctl as a user would read them.
runs() { "$bin/trigctl" runs list --json --limit 1000 | python3 -c '
import json, sys
for r in json.load(sys.stdin): print(r["program"], r["state"])'; }
killed_events() {
  kcat -C -b "$TRIGD_KAFKA" -t "${run}.events.program" -e -q 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    try: p = json.loads(line)["payload"]
    except Exception: continue
    if p.get("status") == "killed" and p.get("reason") == "upstream_failed": print(p["program"])' | sort -u
}
want_runs=$( (for n in "${succeeding[@]}"; do echo "dag.$n succeeded"; done; echo "dag.$failing failed") | sort)
want_killed=$(for n in "${killed[@]}"; do echo "dag.$n"; done | sort)
deadline=$((SECONDS + 90))
while ((SECONDS < deadline)); do
  got_runs=$(runs | sort); got_killed=$(killed_events)
  [[ $got_runs == "$want_runs" && $got_killed == "$want_killed" ]] && break
  sleep 0.5
done
[[ $got_runs == "$want_runs" ]] || fail "runs: got
$got_runs
want
$want_runs"
[[ $got_killed == "$want_killed" ]] || fail "killed upstream_failed events: got [$got_killed] want [$want_killed]"
settled=$SECONDS

# Nothing more happens: no late launch of a killed node, no second run of any node.
sleep 3
got_runs=$(runs | sort)
[[ $got_runs == "$want_runs" ]] || fail "runs changed after the DAG settled: $got_runs"
launched=$(kcat -C -b "$TRIGD_KAFKA" -t "${run}.launch.default" -e -q | python3 -c '
import json, sys
print("\n".join(sorted(json.loads(l)["program"]["name"] for l in sys.stdin if l.strip())))')
want_launched=$( (for n in "${succeeding[@]}" "$failing"; do echo "dag.$n"; done) | sort)
[[ $launched == "$want_launched" ]] || fail "launch requests: got [$launched] want [$want_launched]"
for n in "${killed[@]}"; do
  # Each killed node's event names the failed upstream that caused it.
  kcat -C -b "$TRIGD_KAFKA" -t "${run}.events.program" -e -q | grep -F "\"program\":\"dag.$n\"" |
    grep -q '"status":"killed"' || fail "no killed event for dag.$n"
done
# The failing node's downstream job (if it had one open) was discarded, never launched.
[[ $(psql "$TRIGD_PG" -tAc "SELECT count(*) FROM jobs WHERE schedule_name IN ('dag/p7','dag/p9') AND state <> 'discarded'") == 0 ]] ||
  fail "p7/p9 have jobs that are not discarded"
grep -q "(dag.p4) failed (exit 3)" "$tmp/worker.log" || fail "worker did not report p4's exit 3"
metrics=$(curl -sf "http://127.0.0.1:$port/metrics") || fail "no /metrics on $port"
metric() { echo "$metrics" | grep -F "$1" | awk '{print $NF}'; }
[[ $(metric 'trigd_runs_total{outcome="succeeded"}') == 6 ]] || fail "runs succeeded metric: $(metric 'trigd_runs_total{outcome="succeeded"}')"
[[ $(metric 'trigd_runs_total{outcome="failed"}') == 1 ]] || fail "runs failed metric"
echo "dag e2e: ${#succeeding[@]} succeeded, $failing failed, ${killed[*]} killed as upstream_failed; settled in $((settled - started)) s"
