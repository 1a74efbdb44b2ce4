#!/usr/bin/env bash
# e2e: what-if replay (SPEC §12, issue 36) agrees with the real engine. Schedules of every trigger
# kind (partition count, program, all, any, every, quiet, silence) and constraint kind (max_concurrent_runs,
# concurrency_group, delay, time_window, min_since_last_run, max_runs_per, timeout) run through
# real trigd and trigd-worker; then `trigctl schedules replay --compare` replays the same
# documents over the same range: for each schedule the simulated launches equal the recorded runs
# (count and triggered_by event ids, times within 5 s). The replays write nothing to PostgreSQL
# (row and tuple counts) and publish nothing (every topic's end offsets). Then the bad inputs.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run whatif
e2e_tmp
export TRIGD_METRICS="127.0.0.1:$(free_port)"
fail() { echo "FAIL: $*"; echo "--- trigd log"; tail -40 "$tmp/trigd.log" || true; exit 1; }
started=$SECONDS
now_ms() { date +%s%3N; }
# RFC 3339 of epoch milliseconds, as trigd formats instants (".mmm" only when not zero).
iso() { python3 -c '
import sys, datetime
ms = int(sys.argv[1])
t = datetime.datetime.fromtimestamp(ms // 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
print(t + ("" if ms % 1000 == 0 else ".%03d" % (ms % 1000)) + "Z")' "$1"; }
# wait_until SECONDS CMD...: polls CMD every 0.2 s until it succeeds, fails after SECONDS.

# A window closed now: it opens two hours from now (UTC) for an hour.
closed_start=$(date -u -d '+2 hours' +%H:00)
closed_end=$(date -u -d '+3 hours' +%H:00)
mkdir -p "$tmp/schedules"
doc() { echo "{\"namespace\": \"wi\", \"name\": \"$1\", \"program\": {\"name\": \"wi.$1\", \"args\": {\"command\": \"true\"}}, $2}" >"$tmp/schedules/$1.json"; }
doc a '"trigger": {"partition": {"dataset": "'$run'.a", "count": 2}}, "constraints": {"max_concurrent_runs": 1}'
doc b '"trigger": {"program": {"name": "wi.a", "status": ["succeeded"]}}, "constraints": {"delay": "2s"}'
doc c '"trigger": {"all": [{"partition": {"dataset": "'$run'.c"}}, {"program": {"name": "wi.a"}}]}, "constraints": {"concurrency_group": {"name": "g", "max": 1}}'
doc d '"trigger": {"any": [{"partition": {"dataset": "'$run'.d"}}, {"partition": {"dataset": "'$run'.d2"}}]}, "constraints": {"min_since_last_run": {"duration": "1h", "on_unmet": "skip"}}'
doc e '"trigger": {"time": {"every": "6s"}}, "constraints": {"max_runs_per": {"count": 2, "period": "1h", "on_unmet": "skip"}}'
doc f '"trigger": {"partition": {"dataset": "'$run'.a"}}, "constraints": {"time_window": {"start": "'$closed_start'", "end": "'$closed_end'", "timezone": "UTC"}}'
doc g '"trigger": {"partition": {"dataset": "'$run'.g", "count": 3}}, "timeout": {"after": "3s", "action": "run"}'
# SPEC §11: a quiet period (two partitions, one launch 2 s after the last) and a silence armed at
# apply (no arrival: one launch 10 s after the apply, once).
doc h '"trigger": {"partition": {"dataset": "'$run'.h", "quiet": "2s"}}'
doc i '"trigger": {"silence": {"dataset": "'$run'.i", "for": "10s"}}'
names=(a b c d e f g h i)
declare -A want=([a]=2 [b]=2 [c]=1 [d]=1 [e]=2 [f]=0 [g]=1 [h]=1 [i]=1)

"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
"$bin/trigctl" schedules apply -f "$tmp/schedules" >/dev/null
# The replay's range starts at the every trigger's anchor (the apply), so fire times agree.
from_ms=$(psql "$TRIGD_PG" -tAc "SELECT floor(extract(epoch from anchor) * 1000)::bigint FROM time_triggers")
from=$(iso "$from_ms")
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)
trigd_pid=$!
"$bin/trigd-worker" >"$tmp/worker.log" 2>&1 & pids+=($!)
worker_pid=$!

emit() { "$bin/trigctl" events emit partition "$run.$1" "$2" >/dev/null; }
# Launched runs of schedule wi/NAME (any state), and runs not finished yet.
runs_json() { "$bin/trigctl" runs list --json --limit 1000; }
count_runs() { runs_json | python3 -c 'import json, sys; print(sum(1 for r in json.load(sys.stdin) if r["schedule"] == sys.argv[1]))' "wi/$1"; }
has_runs() { [[ $(count_runs "$1") -ge $2 ]]; }
all_finished() { runs_json | python3 -c 'import json, sys; sys.exit(any(r["state"] not in ("succeeded", "failed", "killed") for r in json.load(sys.stdin)))'; }

# Events are emitted once trigd consumes, one after another where their order matters: trigd takes
# a backlog partition by partition, the replay in event time.
assigned() { grep -q 'consumer: assigned' "$tmp/trigd.log"; }
wait_until 60 assigned || fail "trigd was not assigned its partitions"
emit c c1; emit d d1; emit g g1; emit h h1; emit h h2; emit a p1; emit a p2
wait_until 30 has_runs d 1 || fail "d did not launch"
emit d2 x1
wait_until 30 has_runs a 1 || fail "a did not launch"
wait_until 30 all_finished || fail "a's first run did not end"
emit a p3; emit a p4
for n in "${names[@]}"; do
  [[ ${want[$n]} == 0 ]] && continue
  wait_until 40 has_runs "$n" "${want[$n]}" || fail "wi/$n: $(count_runs "$n") runs, expected ${want[$n]}"
done
wait_until 30 all_finished || fail "runs did not end: $(runs_json)"
# The outcome events are on the log once every run ended; e's third fire time is skipped.
to_ms=$(now_ms)
to=$(iso "$to_ms")
kill "$trigd_pid" "$worker_pid"; wait "$trigd_pid" "$worker_pid" 2>/dev/null || true
for n in "${names[@]}"; do
  got=$(count_runs "$n")
  [[ $got == "${want[$n]}" ]] || fail "wi/$n: trigd launched $got runs, expected ${want[$n]}"
done
echo "real runs as expected at $((SECONDS - started)) s"

# What PostgreSQL and Kafka hold: rows and tuple counters per table, end offsets per partition.
pg_state() {
  psql "$TRIGD_PG" -tAc "SELECT string_agg(relname || ':' || n_tup_ins || '/' || n_tup_upd || '/' || n_tup_del, ' ' ORDER BY relname) FROM pg_stat_user_tables"
  psql "$TRIGD_PG" -tAc "SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM runs), (SELECT count(*) FROM seen_events), (SELECT count(*) FROM schedules)"
}
kafka_state() {
  kcat -L -J -b "$TRIGD_KAFKA" | python3 -c '
import json, subprocess, sys
prefix = sys.argv[1]; broker = sys.argv[2]
for t in sorted(json.load(sys.stdin)["topics"], key=lambda t: t["topic"]):
    if not t["topic"].startswith(prefix): continue
    for p in t["partitions"]:
        out = subprocess.run(["kcat", "-Q", "-b", broker, "-t", "%s:%d:-1" % (t["topic"], p["partition"])], capture_output=True, text=True).stdout
        print(out.strip())' "$run." "$TRIGD_KAFKA"
}
# Counters of the stopped processes reach pg_stat once flushed: wait until they hold still.
stable_pg() { pg_state >"$tmp/pg.next"; if cmp -s "$tmp/pg.next" "$tmp/pg.before"; then return 0; fi; cp "$tmp/pg.next" "$tmp/pg.before"; return 1; }
pg_state >"$tmp/pg.before"
wait_until 20 stable_pg || fail "PostgreSQL counters do not settle"
kafka_state >"$tmp/kafka.before"
[[ -s $tmp/kafka.before ]] || fail "no end offsets read"

# Agreement, one schedule at a time beside its recorded runs.
for n in "${names[@]}"; do
  "$bin/trigctl" --json schedules replay -f "$tmp/schedules" --from "$from" --to "$to" --compare "wi/$n" \
    >"$tmp/replay.$n.json" 2>"$tmp/replay.$n.err" || fail "replay --compare wi/$n: $(cat "$tmp/replay.$n.err")"
  python3 - "$tmp/replay.$n.json" "wi/$n" "${want[$n]}" <<'PY' || fail "wi/$n: replay and trigd differ: $(cat "$tmp/replay.$n.json")"
import json, sys
out = json.load(open(sys.argv[1])); name = sys.argv[2]; want = int(sys.argv[3])
c = out["compare"]
assert c["schedule"] == name, c
print(name, "recorded", c["recorded"], "simulated", c["simulated"], "agree", c["agree"],
      "deltas_ms", [m["delta_ms"] for m in c["matched"]], "outcome outside", c["outcome_outside_range"])
assert c["recorded"] == want and c["simulated"] == want, c
assert c["agree"] and not c["only_simulated"] and not c["only_recorded"], c
assert all(abs(m["delta_ms"]) <= 5000 for m in c["matched"]), c
assert name == "wi/i" or all(m["triggered_by"] for m in c["matched"]), c  # a silence: no arrival
s = [x for x in out["schedules"] if x["schedule"] == name][0]
whats = {step["what"] for step in s["timeline"]}
if want: assert {"launch"} <= whats, whats
PY
done
# The timeline says why: f waits for its window, d's second job and e's fire times past two are
# skipped, g launches by timeout.
python3 - "$tmp/replay.a.json" <<'PY' || fail "timeline: $(cat "$tmp/replay.a.json")"
import json, sys
out = json.load(open(sys.argv[1]))
by = {s["schedule"]: s for s in out["schedules"]}
f = by["wi/f"]; assert f["waiting_at_end"] >= 1 and any(st["what"] == "wait" and "outside window" in st["detail"] for st in f["timeline"]), f
d = by["wi/d"]; assert d["discarded"] == 1 and any(st["what"] == "discard" and "min_since_last_run" in st["detail"] for st in d["timeline"]), d
g = by["wi/g"]; assert g["launches"][0]["forced"], g
e = by["wi/e"]; assert out["fire_times"] >= 2 and e["discarded"] == out["fire_times"] - 2, e  # past 2 an hour: skipped
PY
# The human form, once.
"$bin/trigctl" schedules replay -f "$tmp/schedules" --from "$from" --to "$to" --run-duration 1s >"$tmp/human.out" ||
  fail "replay (human): $(cat "$tmp/human.out")"
grep -q '^wi/a$' "$tmp/human.out" && grep -q 'summary: 2 run(s) would launch' "$tmp/human.out" || fail "human output: $(cat "$tmp/human.out")"

# Nothing written, nothing published.
pg_state >"$tmp/pg.after"
cmp -s "$tmp/pg.before" "$tmp/pg.after" || fail "replay wrote to PostgreSQL: $(diff "$tmp/pg.before" "$tmp/pg.after")"
kafka_state >"$tmp/kafka.after"
cmp -s "$tmp/kafka.before" "$tmp/kafka.after" || fail "replay published: $(diff "$tmp/kafka.before" "$tmp/kafka.after")"

# Bad input: each a message and its exit code.
expect 1 "trigctl schedules replay: no events on $run.events.data, $run.events.program or $run.events.time between 2020-01-01T00:00:00Z and 2020-01-02T00:00:00Z; nothing to replay" \
  "$bin/trigctl" schedules replay -f "$tmp/schedules" --from 2020-01-01T00:00:00Z --to 2020-01-02T00:00:00Z
echo '{"name": "bad", "program": {"name": "p"}, "trigger": {"program": {"name": "x", "status": ["done"]}}}' >"$tmp/bad.json"
expect 1 "$tmp/bad.json: trigger.program.status: unknown status \"done\" (expected started, heartbeat, succeeded, failed or killed)" \
  "$bin/trigctl" schedules replay -f "$tmp/bad.json" --from "$from"
expect 1 "trigctl schedules replay: --from: expected RFC 3339 (2026-11-22T10:00:00Z) or a duration ago (24h), got \"yesterday\"" \
  "$bin/trigctl" schedules replay -f "$tmp/schedules" --from yesterday
expect 1 "trigctl schedules replay: --from $to is not before --to $from" \
  "$bin/trigctl" schedules replay -f "$tmp/schedules" --from "$to" --to "$from"
rc=0; TRIGD_TOPIC_PREFIX=nosuch$run. "$bin/trigctl" schedules replay -f "$tmp/schedules" --from "$from" >"$tmp/out" 2>"$tmp/err" || rc=$?
[[ $rc == 1 ]] && grep -q "nosuch$run.events.data" "$tmp/err" || fail "missing topic: exit $rc: $(cat "$tmp/err")"
echo "PASS whatif ($((SECONDS - started)) s)"
