#!/usr/bin/env bash
# e2e: trigctl as a user drives it. Schedules: apply (file and folder, all or nothing with every
# problem named), list, show, exit codes; two running trigd instances see an applied, updated
# and deleted schedule within a second. Inspection: jobs list/show/why (unmet branches, failing
# constraints, next check, history), runs list/show, lag, --json everywhere; an event emitted the
# moment apply returns meets the new schedule.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run ctl
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*.log; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
ctl() { "$bin/trigctl" "$@"; }
json_get() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

ctl topics create >/dev/null
"$bin/trigd" migrate >/dev/null

# Exit code 2: PostgreSQL or Kafka unreachable.
set +e
ctl --pg "host=127.0.0.1 port=1 user=trigd dbname=x connect_timeout=2" schedules list >/dev/null 2>&1; rc_pg=$?
ctl --kafka 127.0.0.1:1 lag >/dev/null 2>&1; rc_kafka=$?
set -e
[[ $rc_pg == 2 ]] || fail "unreachable PostgreSQL: exit $rc_pg, expected 2"
[[ $rc_kafka == 2 ]] || fail "unreachable Kafka: exit $rc_kafka, expected 2"
# Exit code 1: input refused, not replaced or ignored; help asked for is no error.
set +e
ctl jobs list --state bogus >/dev/null 2>&1; rc_state=$?
ctl runs list --limit 0 >/dev/null 2>&1; rc_limit=$?
ctl schedules list --state launched >/dev/null 2>&1; rc_flag=$?
ctl --help >/dev/null 2>&1; rc_help=$?
set -e
[[ $rc_state == 1 && $rc_limit == 1 && $rc_flag == 1 ]] || fail "bad input: exits $rc_state $rc_limit $rc_flag, expected 1 1 1"
[[ $rc_help == 0 ]] || fail "--help: exit $rc_help, expected 0"
ctl jobs list --state=launched --limit=5 >/dev/null || fail "--flag=value refused"

# Help asked for: usage on stdout, nothing on stderr, exit 0; an unknown argument is named.
for b in trigd trigd-worker trigctl; do
  for h in --help -h; do
    "$bin/$b" $h >"$tmp/out" 2>"$tmp/err" || fail "$b $h: exit $?"
    grep -q "^usage: $b " "$tmp/out" && [[ ! -s "$tmp/err" ]] || fail "$b $h: usage not on stdout alone"
  done
done
expect 1 "trigd: unknown argument --bogus" "$bin/trigd" --bogus
# A mistyped topic prefix is refused before trigd reads or publishes anything (it took the real
# instances' fire times and published their launches where no worker reads).
expect 1 "trigd: invalid: topics nosuch.events.data, nosuch.events.program, nosuch.events.time, nosuch.dead, nosuch.control do not exist at $TRIGD_KAFKA (create them with trigctl topics create, or check --topic-prefix)" \
  "$bin/trigd" --topic-prefix nosuch. --metrics "127.0.0.1:$(free_port)"
expect 1 "trigd: unknown argument extra" "$bin/trigd" migrate extra
# A metrics address trigd cannot listen on is named with the usual causes (it printed
# prometheus-cpp's "null context when constructing CivetServer").
expect 2 "trigd: unavailable: cannot serve metrics on notanaddr: not a HOST:PORT this machine can listen on, or the port is in use (--metrics, TRIGD_METRICS)" \
  "$bin/trigd" --metrics notanaddr
# A group with no positions is said to be one, not shown as a backlog alone.
ctl --group nosuchgroup lag >/dev/null 2>"$tmp/lag.err" || fail "lag of an unknown group: $(cat "$tmp/lag.err")"
grep -q "^trigctl lag: group nosuchgroup has no positions in PostgreSQL" "$tmp/lag.err" || fail "lag of an unknown group: $(cat "$tmp/lag.err")"
expect 1 "trigd-worker: unknown argument --bogus" "$bin/trigd-worker" --bogus
# A flag without its value says so (at the end, or followed by another flag), in every binary.
for f in --kafka --pg --metrics --topic-prefix --group --instance-id; do
  # trigd's own flags are refused by trigctl whatever follows them.
  case $f in
    --metrics|--instance-id) want="trigctl: $f is a flag of trigd, not of trigctl" ;;
    *) want="trigctl lag: $f needs a value" ;;
  esac
  # Named with the command, before or after it.
  expect 1 "$want" ctl lag $f
  expect 1 "$want" ctl $f --json lag
  expect 1 "trigd: $f needs a value" "$bin/trigd" $f
  expect 1 "trigd-worker: $f needs a value" "$bin/trigd-worker" $f
done
for f in --target --group-id --concurrency; do
  expect 1 "trigd-worker: $f needs a value" "$bin/trigd-worker" $f
  expect 1 "trigd-worker: $f needs a value" "$bin/trigd-worker" $f --kafka 127.0.0.1:9092
done
# A target no schedule can name (a launch topic no request reaches) is refused, with the rule.
expect 1 "trigd-worker: --target: invalid target \"Bad/Target\": use 1 to 128 lowercase letters, digits, '.', '_' or '-'" \
  "$bin/trigd-worker" --target Bad/Target
expect 1 "trigctl schedules apply: -f needs a value" ctl schedules apply -f
expect 1 "trigctl jobs list: --state needs a value" ctl jobs list --state
expect 1 "trigctl runs list: --schedule needs a value" ctl runs list --schedule --limit 3
expect 1 "trigctl runs list: --limit needs a value" ctl runs list --limit
expect 1 "trigctl events emit partition: --bytes needs a value" ctl events emit partition d p --bytes
expect 1 "trigctl events emit program: --run-id needs a value" ctl events emit program p succeeded --run-id
expect 1 "trigctl events emit program: --attempt needs a value" ctl events emit program p succeeded --attempt
expect 1 "trigctl events emit tick: --fire-time needs a value" ctl events emit tick default/x --fire-time
expect 1 'trigctl events emit: --fire-time: invalid time "yesterday": expected RFC 3339, e.g. 2026-11-22T10:00:00Z' ctl events emit tick default/x --fire-time yesterday
# A flag given twice is refused (it took the first value in silence), except -f, which applies
# every file given; an unknown flag is named with its command; a noun alone lists its verbs.
expect 1 "trigctl jobs list: --state given more than once" ctl jobs list --state launched --state discarded
expect 1 "trigctl jobs list: --limit given more than once" ctl jobs list --limit=1 --limit 2
expect 1 "trigctl lag: --pg given more than once" ctl --pg x lag --pg y
expect 1 "trigctl runs list: unknown flag --bogus" ctl runs list --bogus
expect 1 "trigctl schedules: needs a verb: apply, list, show, next, backfill, delete, suspend, resume, replay or from-crontab" ctl schedules
expect 1 "trigctl schedules: unknown verb lst (apply, list, show, next, backfill, delete, suspend, resume, replay or from-crontab)" ctl schedules lst
expect 1 "trigctl: unknown command: jbos list" ctl jbos list
expect 1 "trigctl jobs show: unexpected argument 2" ctl jobs show 1 2
expect 1 "trigctl schedules apply: unexpected b.json (each file or folder takes its own -f: -f a.json -f b.json)" ctl schedules apply -f a.json b.json
expect 1 "trigctl: --metrics is a flag of trigd, not of trigctl" ctl --metrics 127.0.0.1:1 lag
expect 1 "trigctl events emit partition: needs DATASET PARTITION... (one partition at least)" ctl events emit partition d
expect 1 "trigctl events emit: payload.status: unknown status \"done\" (expected started, heartbeat, succeeded, failed or killed)" ctl events emit program p done
echo '[]' >"$tmp/empty.json"
expect 1 "$tmp/empty.json: no schedule documents (an empty array)" ctl schedules apply -f "$tmp/empty.json"
# Errors name the command, noun and verb; not-found is refused input (1), unreachable is 2.
nopg="host=127.0.0.1 port=1 user=trigd dbname=x connect_timeout=2"
expect 1 "trigctl schedules show: no schedule default/nope" ctl schedules show default/nope
expect 1 "trigctl jobs show: no job 999999999" ctl jobs show 999999999
expect 1 "trigctl runs show: no run nope" ctl runs show nope
expect 1 "trigctl jobs list: --limit must be a positive integer, got \"0\"" ctl jobs list --limit 0
expect 1 "trigctl jobs show: job id must be a number, got \"x\"" ctl jobs show x
# A list of a schedule that does not exist and never did is refused as `schedules show` refuses it
# (an empty table read as "no jobs yet"); a name without its namespace is told the form.
expect 1 "trigctl jobs list: no schedule named default/nope" ctl jobs list --schedule default/nope
expect 1 "trigctl runs list: no schedule named nope (names are namespace/name, e.g. default/nope)" ctl runs list --schedule nope
expect 1 "trigctl schedules list: --limit must be a positive integer, got \"0\"" ctl schedules list --limit 0
for c in "schedules show x" "jobs show 1" "jobs why 1" "runs show x" "runs list" "schedules delete x"; do
  set +e; ctl --pg "$nopg" $c >/dev/null 2>"$tmp/err"; rc=$?; set -e
  [[ $rc == 2 ]] && grep -q "^trigctl $(cut -d' ' -f1-2 <<<"$c"): cannot connect to PostgreSQL" "$tmp/err" ||
    fail "$c with PostgreSQL unreachable: exit $rc, $(cat "$tmp/err")"
done
# Topics that do not exist (a wrong --topic-prefix) are named at once, not waited for.
start=$SECONDS
expect 1 "trigctl events emit: topic nosuch$run.events.data does not exist at $TRIGD_KAFKA (create it with trigctl topics create, or check --topic-prefix)" \
  ctl --topic-prefix "nosuch$run." events emit partition zz p1
((SECONDS - start < 5)) || fail "events emit to a missing topic took $((SECONDS - start)) s"
expect 1 "trigctl lag: topics nosuch$run.events.data, nosuch$run.events.program, nosuch$run.events.time do not exist at $TRIGD_KAFKA (create them with trigctl topics create, or check --topic-prefix)" \
  ctl --topic-prefix "nosuch$run." lag

# A folder with one bad document is refused whole, with every problem named.
mkdir -p "$tmp/bad"
cp "$src/tools/examples/demo-ingest.json" "$tmp/bad/a.json"
cat >"$tmp/bad/b.json" <<'DOC'
{"name": "broken", "program": {"name": "p"},
 "trigger": {"all": [{"partition": {"dataset": "d"}}, {"program": {"name": "up", "status": ["done"]}}]},
 "constraints": {"time_window": {"start": "22:00", "end": "06:00", "timezone": "Europe/Berln"}, "max_concurent_runs": 1}}
DOC
set +e
out=$(ctl schedules apply -f "$tmp/bad" 2>&1); rc=$?
set -e
[[ $rc == 1 ]] || fail "invalid folder: exit $rc, expected 1"
echo "$out" | grep -qF 'trigger.all[1].program.status: unknown status "done"' || fail "status error not named: $out"
echo "$out" | grep -qF 'constraints.time_window.timezone: unknown time zone "Europe/Berln"' || fail "timezone error not named: $out"
echo "$out" | grep -qF 'constraints.max_concurent_runs: unknown field' || fail "typo not named: $out"
[[ $(ctl schedules list --json | json_get 'len(d)') == 0 ]] || fail "a refused folder applied something"

# Two instances running; schedules applied afterwards are seen within a second.
for i in 1 2; do
  TRIGD_METRICS=127.0.0.1:$(free_port) "$bin/trigd" >"$tmp/trigd$i.log" 2>&1 & pids+=($!)
done
sleep 2
cat >"$tmp/watch.json" <<'DOC'
{"name": "watch", "program": {"name": "watch.p", "args": {"since": "2026-11-22T10:00:00+01:00"}},
 "trigger": {"all": [{"partition": {"dataset": "watch.d", "count": 2}}, {"program": {"name": "watch.up"}}]},
 "constraints": {"max_concurrent_runs": 1, "delay": "1h"}, "priority": 7}
DOC
ctl schedules apply -f "$tmp/watch.json" | grep -q "applied    default/watch v1" || fail "apply"
ctl schedules apply -f "$tmp/watch.json" | grep -q "unchanged  default/watch v1" || fail "re-apply changed the version"
sleep 1
ctl events emit partition watch.d p1 >/dev/null
deadline=$((SECONDS + 20))
until [[ $(ctl jobs list --json | json_get 'len(d)') == 1 ]]; do ((SECONDS < deadline)) || fail "no job opened 1 s after apply"; sleep 0.3; done
job=$(ctl jobs list --json | json_get 'd[0]["id"]')
why=$(ctl jobs why "$job")
echo "$why" | grep -qF "[met]   trigger.all[0].partition: 1 of 2" && fail "1 of 2 partitions shown as met"
echo "$why" | grep -qF "[unmet] trigger.all[0].partition: 1 of 2 partitions of watch.d" || fail "jobs why (open): $why"
echo "$why" | grep -qF "[unmet] trigger.all[1].program" || fail "jobs why (program branch): $why"
# A job still collecting events waits for events, not for a run, and its trigger is no constraint.
echo "$why" | grep -qxF "next check: on an event for an unmet trigger branch" || fail "jobs why (next check of an open job): $why"
echo "$why" | grep -qF "] trigger: " && fail "jobs why lists the trigger among the constraints: $why"
ctl events emit partition watch.d p2 >/dev/null
ctl events emit program watch.up succeeded >/dev/null
deadline=$((SECONDS + 20))
until [[ $(ctl jobs show "$job" --json | json_get 'd["state"]') == pending_constraint ]]; do ((SECONDS < deadline)) || fail "job not ready"; sleep 0.3; done
why=$(ctl jobs why "$job" --json)
echo "$why" | json_get '[c for c in d["constraints"] if c["constraint"]=="delay"][0]["result"]' | grep -qx wait || fail "delay not waiting: $why"
echo "$why" | json_get 'd["next_check_at"]' | grep -q "T" || fail "no next check time: $why"
echo "$why" | json_get 'all(t["satisfied"] for t in d["trigger"])' | grep -qx True || fail "trigger not met: $why"
ctl jobs why "$job" | grep -q "^history:" || fail "no history"
ctl jobs list --state pending_constraint --schedule default/watch | grep -q "default/watch" || fail "jobs list filters"
ctl jobs show "$job" | grep -Eq '^schedule_name: +default/watch$' || fail "jobs show: $(ctl jobs show "$job")"

# Update: within a second both instances follow the new definition (count 1: one event fires).
sed 's/"count": 2/"count": 1/; s/"delay": "1h"/"delay": "0s"/' "$tmp/watch.json" | python3 -c 'import json,sys; d=json.load(sys.stdin); d["trigger"]=d["trigger"]["all"][0]; print(json.dumps(d))' >"$tmp/watch2.json"
ctl schedules apply -f "$tmp/watch2.json" | grep -q "applied    default/watch v2" || fail "update"
[[ $(ctl jobs show "$job" --json | json_get 'd["state"]') == discarded ]] || fail "update did not discard the waiting job"
sleep 1
ctl events emit partition watch.d p3 >/dev/null
deadline=$((SECONDS + 20))
until [[ $(ctl runs list --json | json_get 'len(d)') == 1 ]]; do ((SECONDS < deadline)) || fail "no run under v2"; sleep 0.3; done
run_id=$(ctl runs list --json | json_get 'd[0]["run_id"]')
# Times as trigd writes them everywhere (UTC, milliseconds, Z), in lists and in shown rows.
ctl runs list --json | json_get 'd[0]["launched_at"]' | grep -Eqx '[0-9-]{10}T[0-9:]{8}\.[0-9]{3}Z' || fail "runs list time: $(ctl runs list)"
ctl runs show "$run_id" --json | json_get '[h["at"] for h in d["history"]]' | grep -q '+00:00' && fail "runs show history time: $(ctl runs show "$run_id")"
ctl runs show "$run_id" --json | json_get 'd["schedule_name"]' | grep -qx default/watch || fail "runs show"
ctl runs list --schedule default/watch | grep -q "$run_id" || fail "runs list --schedule"
ctl schedules show default/watch --json | json_get 'd["version"]' | grep -qx 2 || fail "schedules show version"
# A user's own value that looks like one of PostgreSQL's times is shown as written.
ctl schedules show default/watch --json | json_get 'd["document"]["program"]["args"]["since"]' | grep -qxF 2026-11-22T10:00:00+01:00 ||
  fail "schedules show rewrote an arg: $(ctl schedules show default/watch)"
ctl schedules list | grep -q "default/watch" || fail "schedules list"
launched_job=$(ctl runs show "$run_id" --json | json_get 'd["job_id"]')
ctl jobs why "$launched_job" | grep -q "launched" || fail "jobs why for a launched job"

# Lag: committed positions reach the ends of the partitions.
deadline=$((SECONDS + 20))
until ctl lag | grep -q "total lag: 0"; do ((SECONDS < deadline)) || fail "lag never reached 0: $(ctl lag)"; sleep 0.5; done
ctl lag --json | json_get 'sum(r["end"] for r in d)' | grep -qx 4 || fail "lag --json end offsets: $(ctl lag --json)"

# Delete: within a second no instance opens a job for it.
ctl schedules delete default/watch | grep -q "deleted default/watch" || fail "delete"
expect 1 "trigctl schedules show: no schedule default/watch" ctl schedules show default/watch
sleep 1
before=$(ctl jobs list --json | json_get 'len(d)')
ctl events emit partition watch.d p4 >/dev/null
sleep 2
[[ $(ctl jobs list --json | json_get 'len(d)') == "$before" ]] || fail "an event opened a job of a deleted schedule"
# A deleted name still lists its jobs and runs, and so does it once applied again (a new row, a
# new id): those of every incarnation.
ctl runs list --schedule default/watch | grep -q "$run_id" || fail "runs list --schedule of a deleted schedule"
ctl schedules apply -f "$tmp/watch2.json" | grep -q "applied    default/watch v3" || fail "apply after delete"
ctl runs list --schedule default/watch | grep -q "$run_id" || fail "runs list --schedule after delete and apply"
ctl jobs list --schedule default/watch --json | json_get 'sorted(set(r["version"] for r in d))' | grep -qxF "[1, 2]" ||
  fail "jobs list --schedule after delete and apply: $(ctl jobs list --schedule default/watch)"
# An event produced right after `apply` returned meets the new schedule (not no_match while
# trigd has not refreshed its index yet): three new schedules, no pause.
for k in 1 2 3; do
  cat >"$tmp/now$k.json" <<DOC
{"name": "now$k", "program": {"name": "now.p$k"}, "trigger": {"partition": {"dataset": "now.d$k", "count": 5}}}
DOC
  ctl schedules apply -f "$tmp/now$k.json" >/dev/null && ctl events emit partition "now.d$k" p1 >/dev/null
done
for k in 1 2 3; do
  deadline=$((SECONDS + 20))
  until [[ $(ctl jobs list --schedule "default/now$k" --json | json_get 'len(d)') == 1 ]]; do
    ((SECONDS < deadline)) || fail "the event emitted right after applying default/now$k opened no job"; sleep 0.3
  done
done
# schedules list --limit N: the first N by name.
[[ $(ctl schedules list --limit 2 --json | json_get '[r["name"] for r in d]') == "['default/now1', 'default/now2']" ]] ||
  fail "schedules list --limit 2: $(ctl schedules list --limit 2)"
[[ $(ctl schedules list --json | json_get 'len(d)') == 4 ]] || fail "schedules list without --limit: $(ctl schedules list)"

# apply of a large folder: every change named, the unchanged ones only when few, then a count;
# --json lists every schedule.
mkdir -p "$tmp/bulk"
for k in $(seq -w 0 24); do
  echo "{\"name\": \"b$k\", \"program\": {\"name\": \"bulk.p\"}, \"trigger\": {\"partition\": {\"dataset\": \"bulk.d$k\"}}}" >"$tmp/bulk/b$k.json"
done
ctl schedules apply -f "$tmp/bulk" >"$tmp/apply.out"
[[ $(grep -c applied "$tmp/apply.out") == 25 && $(tail -1 "$tmp/apply.out") == "25 schedules: 25 changed, 0 unchanged" ]] ||
  fail "first apply of 25: $(cat "$tmp/apply.out")"
ctl schedules apply -f "$tmp/bulk" >"$tmp/apply.out"
[[ $(cat "$tmp/apply.out") == "25 schedules: 0 changed, 25 unchanged (not listed; --json lists every schedule)" ]] ||
  fail "re-apply of 25: $(cat "$tmp/apply.out")"
sed -i 's/bulk.d07/bulk.d07x/' "$tmp/bulk/b07.json"
ctl schedules apply -f "$tmp/bulk" >"$tmp/apply.out"
[[ $(cat "$tmp/apply.out") == $'applied    default/b07 v2\n25 schedules: 1 changed, 24 unchanged (not listed; --json lists every schedule)' ]] ||
  fail "apply of 1 change in 25: $(cat "$tmp/apply.out")"
ctl schedules apply -f "$tmp/bulk" --json | json_get '(len(d), sum(r["changed"] for r in d), [r["version"] for r in d if r["schedule"] == "default/b07"])' |
  grep -qxF "(25, 0, [2])" || fail "apply --json: $(ctl schedules apply -f "$tmp/bulk" --json)"
# A file given twice is read once; -f - reads standard input (as kubectl apply -f -).
[[ $(ctl schedules apply -f "$tmp/bulk/b00.json" -f "$tmp/bulk/b00.json") == "unchanged  default/b00 v1" ]] ||
  fail "apply of one file twice: $(ctl schedules apply -f "$tmp/bulk/b00.json" -f "$tmp/bulk/b00.json" 2>&1)"
ctl schedules apply -f - <"$tmp/bulk/b01.json" | grep -q "unchanged  default/b01 v1" || fail "apply -f -: $(ctl schedules apply -f - <"$tmp/bulk/b01.json" 2>&1)"
# Several -f: every file applied, in one transaction.
[[ $(ctl schedules apply -f "$tmp/bulk/b00.json" -f "$tmp/bulk/b01.json" --json | json_get 'sorted(r["schedule"] for r in d)') == "['default/b00', 'default/b01']" ]] ||
  fail "apply with two -f: $(ctl schedules apply -f "$tmp/bulk/b00.json" -f "$tmp/bulk/b01.json")"
# A few unchanged ones are listed.
mkdir -p "$tmp/few" && cp "$tmp/bulk/b0"[0-2].json "$tmp/few/"
[[ $(ctl schedules apply -f "$tmp/few") == $'unchanged  default/b00 v1\nunchanged  default/b01 v1\nunchanged  default/b02 v1\n3 schedules: 0 changed, 3 unchanged' ]] ||
  fail "re-apply of 3: $(ctl schedules apply -f "$tmp/few")"
echo "trigctl e2e: validation, exit codes, reload within 1 s on two instances, events right after apply, jobs why, runs, lag all as expected"
