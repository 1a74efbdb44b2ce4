#!/usr/bin/env bash
# e2e: history retention as a user meets it. Three runs end (reported on the program topic);
# two of them are made 40 days old in PostgreSQL. `trigctl history prune --dry-run` counts them
# and deletes nothing; trigd started with TRIGD_RETENTION=30d deletes them (log line, metric)
# and keeps the recent one; `trigctl history prune` deletes the third once it is old too. Bad
# retentions (too short, too long to subtract from now) are refused by trigctl and trigd alike,
# deleting nothing. The audit row of a change made as old goes with them; those of recent ones stay.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run ret
e2e_tmp
fail() { echo "FAIL: $*"; for f in "$tmp"/*.log; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
ctl() { "$bin/trigctl" "$@"; }
json_get() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
sql() { psql "$TRIGD_PG" -qAtc "$1"; }

ctl topics create >/dev/null
"$bin/trigd" migrate >/dev/null

# Refused, with what is wrong named.
expect 1 "trigctl history prune: needs --older-than DURATION (e.g. 90d)" ctl history prune
expect 1 "trigctl history prune: retention must be at least 1d, got 1h" ctl history prune --older-than 1h
expect 1 "trigctl history prune: --older-than needs a value" ctl history prune --older-than
expect 1 "trigctl runs list: unknown flag --dry-run" ctl runs list --dry-run
expect 1 "trigd: retention must be at least 1d (or 0: keep everything), got 12h" env TRIGD_RETENTION=12h "$bin/trigd"
# Too large is said as such (999999999999d wrapped to a negative duration: "at least 1d").
expect 1 "trigd: retention: duration \"999999999999d\" is longer than the maximum of 3650d" \
  env TRIGD_RETENTION=999999999999d "$bin/trigd"
expect 1 "trigd: TRIGD_CHECKERS must be an integer from 1 to 16, got \"1000\"" env TRIGD_CHECKERS=1000 "$bin/trigd"
ctl history prune --older-than x >/dev/null 2>"$tmp/err" && fail "--older-than x accepted"
grep -q "^trigctl history prune: --older-than: " "$tmp/err" || fail "--older-than x: $(cat "$tmp/err")"

# Three runs, ended by their reports.
cat >"$tmp/s.json" <<'DOC'
{"name": "nightly", "program": {"name": "ret.p"}, "trigger": {"partition": {"dataset": "ret.d"}},
 "constraints": {"max_concurrent_runs": 3}}
DOC
ctl schedules apply -f "$tmp/s.json" >/dev/null
TRIGD_METRICS=127.0.0.1:$(free_port) "$bin/trigd" >"$tmp/trigd1.log" 2>&1 & pids+=($!)
for p in p1 p2 p3; do ctl events emit partition ret.d "$p" >/dev/null; done
deadline=$((SECONDS + 30))
until [[ $(ctl runs list --json | json_get 'len(d)') == 3 ]]; do ((SECONDS < deadline)) || fail "3 runs not launched"; sleep 0.3; done
for r in $(ctl runs list --json | json_get '" ".join(x["run_id"] for x in d)'); do
  ctl events emit program ret.p succeeded --run-id "$r" >/dev/null
done
deadline=$((SECONDS + 30))
until [[ $(ctl runs list --json | json_get 'sum(x["state"] == "succeeded" for x in d)') == 3 ]]; do
  ((SECONDS < deadline)) || fail "3 runs not succeeded: $(ctl runs list)"; sleep 0.3
done
# Their launch requests published (a job whose request still waits in the outbox is kept).
deadline=$((SECONDS + 30))
until [[ $(sql "SELECT count(*) FROM outbox") == 0 ]]; do
  ((SECONDS < deadline)) || fail "launch requests still in the outbox"; sleep 0.2
done
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true

# Two of them ended 40 days ago.
mapfile -t old < <(ctl runs list --json | json_get '"\n".join(x["run_id"] for x in d[1:])')
recent=$(ctl runs list --json | json_get 'd[0]["run_id"]')
age() {
  sql "UPDATE runs SET launched_at = launched_at - interval '$2', finished_at = finished_at - interval '$2' WHERE run_id = '$1';
       UPDATE jobs SET opened_at = opened_at - interval '$2', finished_at = finished_at - interval '$2'
        WHERE id = (SELECT job_id FROM runs WHERE run_id = '$1')"
}
for r in "${old[@]}"; do age "$r" "40 days"; done
# The audit goes with the history: the apply's row made as old, a suspend and resume of now kept.
ctl schedules suspend default/nightly >/dev/null
ctl schedules resume default/nightly >/dev/null
sql "UPDATE audit SET at = at - interval '40 days' WHERE action = 'apply'"

# A retention too large to be a time before now is refused and deletes nothing: 213503982336d
# wrapped to 33.6 h, and the prune deleted the two runs of 40 days.
for v in 213503982336d 999999999999d; do
  expect 1 "trigctl history prune: --older-than: duration \"$v\" is longer than the maximum of 3650d" \
    ctl history prune --older-than "$v"
done
[[ $(ctl runs list --json | json_get 'len(d)') == 3 ]] || fail "a refused prune deleted runs: $(ctl runs list)"

ctl history prune --older-than 30d --dry-run >"$tmp/out"
grep -Eqx "would delete 2 jobs and 2 runs that finished before 20[0-9-]+T[0-9:.]+Z, and 1 audit rows of changes before it" \
  "$tmp/out" || fail "dry run: $(cat "$tmp/out")"
[[ $(ctl runs list --json | json_get 'len(d)') == 3 ]] || fail "a dry run deleted runs"
[[ $(ctl audit list --json | json_get 'len(d)') == 3 ]] || fail "a dry run deleted audit rows"

# trigd with a retention prunes by itself (its first pass comes 10 s after it starts).
port=$(free_port)
TRIGD_RETENTION=30d TRIGD_METRICS=127.0.0.1:$port "$bin/trigd" >"$tmp/trigd2.log" 2>&1 & pids+=($!)
deadline=$((SECONDS + 40))
until grep -Eq "retention: deleted 2 jobs and 2 runs that finished before [^ ]+, and 1 audit rows" "$tmp/trigd2.log"; do
  ((SECONDS < deadline)) || fail "trigd did not prune within 40 s"; sleep 0.5
done
grep -q "running: .*, retention 30d" "$tmp/trigd2.log" || fail "start line does not name the retention"
metrics=$(curl -s "http://127.0.0.1:$port/metrics")
grep -qx 'trigd_history_pruned_total{table="runs"} 2' <<<"$metrics" || fail "runs metric: $(grep pruned <<<"$metrics")"
grep -qx 'trigd_history_pruned_total{table="jobs"} 2' <<<"$metrics" || fail "jobs metric: $(grep pruned <<<"$metrics")"
grep -qx 'trigd_history_pruned_total{table="audit"} 1' <<<"$metrics" || fail "audit metric: $(grep pruned <<<"$metrics")"
[[ $(ctl audit list --json | json_get '[x["action"] for x in d]') == "['resume', 'suspend']" ]] ||
  fail "audit rows left: $(ctl audit list)"
[[ $(ctl runs list --json | json_get '[x["run_id"] for x in d]') == "['$recent']" ]] || fail "runs left: $(ctl runs list)"
for r in "${old[@]}"; do expect 1 "trigctl runs show: no run $r" ctl runs show "$r"; done
[[ $(ctl jobs list --schedule default/nightly --json | json_get 'len(d)') == 1 ]] || fail "jobs left: $(ctl jobs list)"

# The schedule still works, and trigctl prunes the third once it is old.
age "$recent" "31 days"
ctl history prune --older-than 30d --json | json_get '(d["dry_run"], d["jobs"], d["runs"])' | grep -qxF "(False, 1, 1)" ||
  fail "trigctl prune of the third"
[[ $(ctl runs list --json | json_get 'len(d)') == 0 ]] || fail "runs left after trigctl prune: $(ctl runs list)"
ctl events emit partition ret.d p4 >/dev/null
deadline=$((SECONDS + 30))
until [[ $(ctl runs list --json | json_get 'len(d)') == 1 ]]; do ((SECONDS < deadline)) || fail "no run after the prune"; sleep 0.3; done
echo "retention e2e: dry run, trigd's hourly pass (log line and metric), trigctl prune, refusals all as expected"
