#!/usr/bin/env bash
# e2e (issue "Event ingestion" 4 and 6d): trigd down across three fire times of a cron
# schedule, then started, for each catchup policy, through the real engine.
#
# Waiting for real minutes is slow, so the downtime is written into time_triggers while trigd
# is stopped (it has not run yet): last_fire_time (and anchor) 3.5 minutes ago, next_fire_at
# 3 minutes ago, as if trigd had last ticked then. On start, trigd's first tick pass decides
# every schedule in one transaction at one instant T, and stamps T on every tick it produces
# (the envelope's `time`). The test reads T from the ticks and computes the exact expected fire
# times from the minute boundaries in (last, T], independently of engine/core/cron.cc:
#   all     -> every boundary in (last, T]: 3 or 4 (4 when T is less than 30 s past a minute)
#   latest  -> only the newest boundary
#   none    -> only boundaries not older than the 60 s grace (the current minute's): 0 missed
#   window  -> catchup all with catchup_window 2m: the boundaries older than T - 2m are dropped
# and, for "*/5 * * * *" with 16 minutes of downtime (three missed fire times), latest5 fires
# the newest one while none5 fires it only if it is within the grace (so latest and none differ
# whenever the newest fire time is more than a minute old).
# Each tick's id must be tick:<schedule>:<fire_time>, and each fire time must give one job,
# launched.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run catchup
port=$(free_port)
export TRIGD_METRICS="127.0.0.1:$port"
tmp=$(mktemp -d)
trigd_pid=
cleanup() { [[ -n $trigd_pid ]] && kill "$trigd_pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- trigd log"; cat "$tmp/trigd.log"; exit 1; }
start=$SECONDS

"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
python3 - >"$tmp/schedules.json" <<'EOF'
import json
def s(name, cron, catchup, window="1d"):
    return {"namespace": "cu", "name": name, "program": {"name": f"cu.{name}"}, "heartbeat_timeout": "1d",
            "trigger": {"time": {"cron": cron, "timezone": "UTC", "catchup": catchup, "catchup_window": window}}}
print(json.dumps([s("all", "* * * * *", "all"), s("latest", "* * * * *", "latest"),
                  s("none", "* * * * *", "none"), s("window", "* * * * *", "all", "2m"),
                  s("latest5", "*/5 * * * *", "latest"), s("none5", "*/5 * * * *", "none")]))
EOF
"$bin/trigctl" schedules apply -f "$tmp/schedules.json" >/dev/null || fail "apply"

# The downtime, written while trigd is stopped. `last` per schedule is read back exactly.
psql "$TRIGD_PG" -qc "
  UPDATE time_triggers t SET anchor = now() - interval '210 seconds', last_fire_time = now() - interval '210 seconds',
         next_fire_at = now() - interval '180 seconds'
    FROM schedules s WHERE s.id = t.schedule_id AND s.name IN ('cu/all', 'cu/latest', 'cu/none', 'cu/window');
  UPDATE time_triggers t SET anchor = now() - interval '16 minutes', last_fire_time = now() - interval '16 minutes',
         next_fire_at = now() - interval '15 minutes'
    FROM schedules s WHERE s.id = t.schedule_id AND s.name IN ('cu/latest5', 'cu/none5');"
psql "$TRIGD_PG" -XAt -F $'\t' -c "SELECT s.name, (extract(epoch from t.last_fire_time) * 1000)::bigint
  FROM time_triggers t JOIN schedules s ON s.id = t.schedule_id" >"$tmp/last.tsv"
[[ $(wc -l <"$tmp/last.tsv") == 6 ]] || fail "expected 6 time_triggers rows: $(cat "$tmp/last.tsv")"

export TRIGD_METRICS=127.0.0.1:$(free_port)
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & trigd_pid=$!

# Compares the first tick pass with the expectation; exit 0 when equal, 3 when ticks are still
# missing (poll again), 1 on a definite mismatch.
check() {
  kcat -C -b "$TRIGD_KAFKA" -t "$run.events.time" -e -q >"$tmp/ticks.jsonl" 2>/dev/null || true
  python3 - "$tmp/last.tsv" "$tmp/ticks.jsonl" "${1:-}" <<'EOF'
import collections, datetime as dt, json, sys
last = {n: int(ms) for n, ms in (l.split("\t") for l in open(sys.argv[1]) if l.strip())}
ticks = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
final = sys.argv[3] == "final"
if not ticks:
    sys.exit(3)
def parse(s): return dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
def fmt(t): return t.strftime("%Y-%m-%dT%H:%M:%SZ")
T = min(parse(t["time"]) for t in ticks)  # the first pass's instant: it stamps every tick it makes
first = collections.defaultdict(list)
for t in ticks:
    p = t["payload"]
    if t["id"] != f"tick:{p['schedule']}:{p['fire_time']}":
        print(f"tick id {t['id']} is not tick:<schedule>:<fire_time>"); sys.exit(1)
    if parse(t["time"]) == T:
        first[p["schedule"]].append(p["fire_time"])
step = {"cu/all": 1, "cu/latest": 1, "cu/none": 1, "cu/window": 1, "cu/latest5": 5, "cu/none5": 5}
window = {"cu/window": dt.timedelta(minutes=2)}
grace = dt.timedelta(seconds=60)
ok = True
missing = False
wants = {}
for name in sorted(step):
    lo = dt.datetime.fromtimestamp(last[name] / 1000, dt.timezone.utc)
    m = lo.replace(second=0, microsecond=0)
    due = []
    while m <= T:
        if m > lo and m.minute % step[name] == 0:
            due.append(m)
        m += dt.timedelta(minutes=1)
    if name in window:
        due = [t for t in due if t >= T - window[name]]
    policy = name.removeprefix("cu/").rstrip("5")
    if policy == "latest":
        due = due[-1:]
    elif policy == "none":
        due = [t for t in due if T - t <= grace]
    want = [fmt(t) for t in due]
    wants[name] = want
    got = sorted(set(first[name]))
    dups = len(first[name]) - len(got)
    if final or got != want:
        print(f"{name:12} last {fmt(lo)} T {T.isoformat()} expected {want} got {got}" + (f" ({dups} re-sent)" if dups else ""))
    if set(got) - set(want):
        ok = False
    elif got != want:
        missing = True
    if name == "cu/all" and len(want) < 3:  # 3 or 4, more only if trigd took > 30 s to start
        print("cu/all must catch up at least 3 missed fire times"); ok = False
if not len(wants["cu/window"]) < len(wants["cu/all"]):
    print("cu/window must drop the fire times older than its window"); ok = False
sys.exit(1 if not ok else 3 if missing else 0)
EOF
}
deadline=$((SECONDS + 60))
while :; do
  rc=0; check >"$tmp/check.out" || rc=$?
  [[ $rc == 0 ]] && break
  kill -0 "$trigd_pid" 2>/dev/null || fail "trigd exited"
  [[ $rc == 3 ]] || fail "ticks after the downtime: $(cat "$tmp/check.out")"
  ((SECONDS < deadline)) || fail "ticks of the first pass did not all arrive: $(cat "$tmp/check.out")"
  sleep 0.5
done
check final
# The fire times passed over (latest, none, outside the window) are counted.
skipped=$(curl -s "http://$TRIGD_METRICS/metrics" | awk '/^trigd_fire_times_skipped_total/ {print int($2)}')
[[ ${skipped:-0} -gt 0 ]] || fail "trigd_fire_times_skipped_total is ${skipped:-absent} after catch-up with latest and none"

# Every tick gives exactly one job, launched, holding that tick alone.
deadline=$((SECONDS + 60))
while :; do
  psql "$TRIGD_PG" -XAt -F $'\t' -c "SELECT state, triggered_by::text FROM jobs" >"$tmp/jobs.tsv"
  rc=0
  python3 - "$tmp/ticks.jsonl" "$tmp/jobs.tsv" >"$tmp/jobs.out" <<'EOF' || rc=$?
import collections, json, sys
ticks = {json.loads(l)["id"] for l in open(sys.argv[1]) if l.strip()}
jobs = [l.rstrip("\n").split("\t", 1) for l in open(sys.argv[2]) if l.strip()]
per_tick = collections.Counter(e["id"] for _, t in jobs for e in json.loads(t))
bad = [t for _, t in jobs if len(json.loads(t)) != 1]
twice = [i for i, c in per_tick.items() if c > 1]
launched = {json.loads(t)[0]["id"] for s, t in jobs if s == "launched" and len(json.loads(t)) == 1}
print(f"{len(ticks)} tick ids, {len(jobs)} jobs, {len(launched)} launched; jobs with other than one tick {len(bad)}; "
      f"fire times with two jobs {twice}; ticks without a launched job {sorted(ticks - launched)[:5]}")
sys.exit(1 if bad or twice else 0 if ticks <= launched else 3)
EOF
  [[ $rc == 0 ]] && break
  kill -0 "$trigd_pid" 2>/dev/null || fail "trigd exited"
  [[ $rc == 3 ]] || fail "jobs: $(cat "$tmp/jobs.out")"
  ((SECONDS < deadline)) || fail "jobs: $(cat "$tmp/jobs.out")"
  sleep 0.5
done
cat "$tmp/jobs.out"

# A fire time has one identity (SPEC §5), whoever sends its tick. A user's ticks with ids of
# their own (kcat), then trigctl's: for a fire time trigd produced (a duplicate, no job), for one
# the catch-up policy skipped (a backfill: a job), the same again (none), and a run forced now
# (a job). Ingestion keeps a partition's order (the key is the schedule), so once the forced
# run's job is there, the ticks before it have been applied.
read -r produced skipped_one < <(python3 - "$tmp/ticks.jsonl" <<'EOF'
import json, sys
ticks = [json.loads(l)["payload"] for l in open(sys.argv[1]) if l.strip()]
fired = lambda s: sorted(t["fire_time"] for t in ticks if t["schedule"] == s)
print(fired("cu/latest")[-1], sorted(set(fired("cu/all")) - set(fired("cu/latest")))[0])
EOF
)
user_tick() {  # id fire_time
  echo "cu/latest|{\"id\":\"$1\",\"type\":\"tick\",\"time\":\"$produced\",\"payload\":{\"schedule\":\"cu/latest\",\"fire_time\":\"$2\"}}"
}
{ user_tick user-dup "$produced"; user_tick user-fill "$skipped_one"; } |
  kcat -P -b "$TRIGD_KAFKA" -t "$run.events.time" -K '|'
"$bin/trigctl" events emit tick cu/latest --fire-time "$skipped_one" >/dev/null || fail "trigctl events emit tick --fire-time"
# A tick that would reach no time trigger is refused, not reported "emitted".
rc=0; "$bin/trigctl" events emit tick cu/no-such 2>"$tmp/emit.err" || rc=$?
[[ $rc == 1 ]] && grep -q "no schedule cu/no-such" "$tmp/emit.err" || fail "tick for an unknown schedule: rc $rc, $(cat "$tmp/emit.err")"
forced=$("$bin/trigctl" --json events emit tick cu/latest | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') ||
  fail "trigctl events emit tick"
user_jobs() {
  psql "$TRIGD_PG" -XAt -c "SELECT string_agg(triggered_by->0->>'id', ' ' ORDER BY id) FROM jobs
                            WHERE schedule_name = 'cu/latest' AND triggered_by->0->>'id' NOT LIKE 'tick:%'"
}
deadline=$((SECONDS + 30))
until [[ $(user_jobs) == *"$forced"* ]]; do
  ((SECONDS < deadline)) || fail "the forced run's tick ($forced) gave no job: jobs from user ticks: '$(user_jobs)'"
  sleep 0.5
done
[[ $(user_jobs) == "user-fill $forced" ]] ||
  fail "user ticks (produced $produced, skipped $skipped_one): jobs from '$(user_jobs)', expected 'user-fill $forced'"
echo "user ticks: produced $produced -> duplicate; skipped $skipped_one -> one job (backfill), its repeat by trigctl none; trigctl's run now -> one job"
kill "$trigd_pid"; wait "$trigd_pid" 2>/dev/null || true; trigd_pid=
psql "${TRIGD_PG% dbname=*}" -qc "DROP DATABASE $db" >/dev/null 2>&1 || true
echo "catchup e2e passed in $((SECONDS - start))s"
