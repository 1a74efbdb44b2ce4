#!/usr/bin/env bash
# e2e: the nine-program DAG of the job-center design, run for three overlapping cycles with
# correlated joins (SPEC §10), through real trigd, two trigd-workers, Kafka and PostgreSQL.
#   p1 -> p2, p3;  p2 -> p4, p5;  p3 -> p6;  p4 -> p7;  p5 + p6 -> p8 (all);  p7 + p8 -> p9 (all)
# p1 is triggered by a partition event, one per cycle; every other node by program triggers with
# correlate and on_upstream_failure: discard. Every node sleeps a random time (up to 1.2 s), the
# cycles start as soon as the previous one's p1 is launched, so runs of the three cycles
# interleave on the two workers. In cycle 2 p4 exits 3. Checked: cycles 1 and 3 run all nine
# nodes, succeeded; cycle 2 runs exactly the nodes not downstream of p4 (p7 and p9 never), its
# lineage is failed; no launch request's upstream runs belong to another lineage than its own.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run lineage
e2e_tmp
port=$(free_port)
export TRIGD_METRICS="127.0.0.1:$port"
fail() { echo "FAIL: $*"; echo "--- trigd log"; tail -50 "$tmp/trigd.log"; echo "--- worker logs"; tail -30 "$tmp"/worker*.log; exit 1; }
started=$SECONDS

declare -A upstream=([p2]="p1" [p3]="p1" [p4]="p2" [p5]="p2" [p6]="p3" [p7]="p4" [p8]="p5 p6" [p9]="p7 p8")
nodes=(p1 p2 p3 p4 p5 p6 p7 p8 p9)
: >"$tmp/fail"  # the lineage in which p4 fails: cycle 2's, written by its p1
mkdir -p "$tmp/schedules"
for n in "${nodes[@]}"; do
  command="sleep \$(awk -v s=\$\$ 'BEGIN{srand(s); printf \\\"%.2f\\\", rand()*1.2}')"
  [[ $n == p4 ]] && command="$command; if grep -qx \\\"\$TRIGD_LINEAGE\\\" $tmp/fail; then exit 3; fi"
  # p1 of cycle 2 names the failing lineage before any run downstream of it can start.
  [[ $n == p1 ]] && command="if [ {{partitions}} = c2 ]; then echo \\\"\$TRIGD_LINEAGE\\\" >$tmp/fail; fi; $command"
  if [[ $n == p1 ]]; then
    trigger='{"partition": {"dataset": "'$run'.raw"}}'
  else
    leaves=()
    for u in ${upstream[$n]}; do
      leaves+=('{"program": {"name": "dag.'$u'", "correlate": true, "on_upstream_failure": "discard"}}')
    done
    if ((${#leaves[@]} == 1)); then trigger=${leaves[0]}; else trigger='{"all": ['$(IFS=,; echo "${leaves[*]}")']}'; fi
  fi
  cat >"$tmp/schedules/$n.json" <<JSON
{"namespace": "dag", "name": "$n", "program": {"name": "dag.$n", "args": {"command": "$command"}},
 "trigger": $trigger, "timeout": {"after": "10m"}}
JSON
done

"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
"$bin/trigctl" schedules apply -f "$tmp/schedules" >"$tmp/apply.out" || fail "apply: $(cat "$tmp/apply.out")"
[[ $(grep -c applied "$tmp/apply.out") == 9 ]] || fail "expected 9 schedules applied: $(cat "$tmp/apply.out")"
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)
for w in 1 2; do "$bin/trigd-worker" --concurrency 2 >"$tmp/worker$w.log" 2>&1 & pids+=($!); done

q() { psql "$TRIGD_PG" -tAc "$1"; }
p1_runs() { [[ $(q "SELECT count(*) FROM runs WHERE program = 'dag.p1'") -ge $1 ]]; }
lineage=()
for cycle in 1 2 3; do
  echo '{"id":"'$run'-c'$cycle'","type":"partition","time":"2026-11-22T10:00:00Z","payload":{"dataset":"'$run'.raw","partitions":["c'$cycle'"]}}' |
    kcat -P -b "$TRIGD_KAFKA" -t "${run}.events.data" -k "$run.raw"
  wait_until 30 p1_runs "$cycle" || fail "cycle $cycle: p1 not launched"
  lineage[$cycle]=$(q "SELECT lineage FROM runs WHERE program = 'dag.p1' ORDER BY launched_at DESC, run_id DESC LIMIT 1")
  [[ -n ${lineage[$cycle]} ]] || fail "cycle $cycle: p1's run has no lineage"
done
echo "lineages: 1=${lineage[1]} 2=${lineage[2]} 3=${lineage[3]}"

# Settled: every lineage ended (no active run, no open job), 9 + 7 + 9 runs in all.
settled() {
  [[ $(q "SELECT count(*) FROM runs WHERE state IN ('launched','running','retry_wait')") == 0 &&
     $(q "SELECT count(*) FROM runs") == 25 ]]
}
wait_until 75 settled || fail "the cycles did not settle: $(q "SELECT program, state, lineage FROM runs ORDER BY launched_at")"
settled_at=$SECONDS
[[ $(cat "$tmp/fail") == "${lineage[2]}" ]] || fail "p1 of cycle 2 wrote lineage '$(cat "$tmp/fail")', not ${lineage[2]}"

# Runs per lineage, "program state" sorted.
runs_of() { q "SELECT program || ' ' || state FROM runs WHERE lineage = '$1' ORDER BY program"; }
want_whole=$(for n in "${nodes[@]}"; do echo "dag.$n succeeded"; done)
want_failed=$(for n in p1 p2 p3 p4 p5 p6 p8; do [[ $n == p4 ]] && echo "dag.p4 failed" || echo "dag.$n succeeded"; done)
[[ $(runs_of "${lineage[1]}") == "$want_whole" ]] || fail "cycle 1 runs: $(runs_of "${lineage[1]}")"
[[ $(runs_of "${lineage[3]}") == "$want_whole" ]] || fail "cycle 3 runs: $(runs_of "${lineage[3]}")"
[[ $(runs_of "${lineage[2]}") == "$want_failed" ]] || fail "cycle 2 runs: $(runs_of "${lineage[2]}")"

# No join mixes cycles: every upstream run id in a launch request is a run of the request's lineage.
kcat -C -b "$TRIGD_KAFKA" -t "${run}.launch.default" -e -q >"$tmp/launches"
q "SELECT run_id || ' ' || lineage FROM runs" >"$tmp/lineage_of"
python3 - "$tmp/launches" "$tmp/lineage_of" <<'PY' || fail "a launch mixes lineages"
import json, sys
lineage_of = dict(line.split() for line in open(sys.argv[2]) if line.strip())
mixed, checked = 0, 0
for line in open(sys.argv[1]):
    if not line.strip(): continue
    r = json.loads(line)
    for e in r["triggered_by"]:
        if e["type"] != "program": continue
        checked += 1
        up = lineage_of.get(e["payload"]["run_id"])
        if up != r["lineage"] or r["lineage"] != lineage_of[r["run_id"]]:
            mixed += 1
            print("mixed:", r["program"]["name"], r["run_id"], r["lineage"], "upstream", e["payload"]["run_id"], up)
print(f"{checked} upstream runs in launch requests checked, {mixed} of another lineage")
sys.exit(1 if mixed or not checked else 0)
PY

# trigctl: the lineages' states, a lineage shown by a run id in it, the worker on each run.
list_state() { "$bin/trigctl" lineages list --state "$1" --json | python3 -c 'import json,sys; print(" ".join(sorted(r["lineage"] for r in json.load(sys.stdin))))'; }
[[ $(list_state failed) == "${lineage[2]}" ]] || fail "lineages list --state failed: $(list_state failed)"
want_ok=$(printf '%s\n' "${lineage[1]}" "${lineage[3]}" | sort | tr '\n' ' ' | sed 's/ $//')
[[ $(list_state succeeded) == "$want_ok" ]] || fail "lineages list --state succeeded: $(list_state succeeded)"
[[ -z $(list_state running) ]] || fail "lineages still running: $(list_state running)"
p8_run=$(q "SELECT run_id FROM runs WHERE program = 'dag.p8' AND lineage = '${lineage[2]}'")
"$bin/trigctl" lineages show "$p8_run" --json >"$tmp/show.json" || fail "lineages show $p8_run"
python3 - "$tmp/show.json" "${lineage[2]}" <<'PY' || fail "lineages show: $(cat "$tmp/show.json")"
import json, sys
l = json.load(open(sys.argv[1]))
assert l["lineage"] == sys.argv[2] and l["state"] == "failed", (l["lineage"], l["state"])
runs = l["runs"]
assert len(runs) == 7 and runs[0]["program"] == "dag.p1" and runs[0]["depth"] == 0, runs[0]
assert all(r["worker"] and ":" in r["worker"] for r in runs), [r["worker"] for r in runs]
assert all(r["depth"] > 0 for r in runs[1:])
PY
"$bin/trigctl" lineages show "${lineage[2]}" >"$tmp/show.txt"
grep -q '^state  *failed' "$tmp/show.txt" || fail "lineages show (table): $(cat "$tmp/show.txt")"
"$bin/trigctl" runs show "$p8_run" | grep -q '^worker' || fail "runs show prints no worker"
# Each lineage counted once as it ended: two succeeded, one failed.
metric() { curl -sf "http://127.0.0.1:$port/metrics" | awk -v m="trigd_lineages_total{outcome=\"$1\"}" '$1 == m {print $2}'; }
[[ $(metric succeeded) == 2 && $(metric failed) == 1 ]] ||
  fail "trigd_lineages_total: succeeded $(metric succeeded), failed $(metric failed)"
echo "lineage dag e2e: cycles 1 and 3 whole, cycle 2 without p7 and p9 and failed; settled in $((settled_at - started)) s"
