#!/usr/bin/env bash
# e2e (issue "Event ingestion" 4 and 6e): daylight saving time through the real engine.
# Two daily cron schedules, catchup all with a 400-day window:
#   dst/berlin   "30 2 * * *" Europe/Berlin
#   dst/newyork  "0 1 * * *"  America/New_York
# With trigd stopped, their time_triggers anchor is set to 2026-03-01T00:00Z (last_fire_time
# NULL, next_fire_at now), as if trigd had been down since then. On start, trigd catches up
# every daily fire time from the anchor to now, including both 2026 transitions of each zone
# (the machine's clock is past 2026-11-01; the test fails, never skips, if it is not). The ticks
# are read from <prefix>events.time and compared with an oracle computed here with Python's
# zoneinfo (independent of engine/core/cron.cc), and with the four instants that
# tests/core/cron_test.cc fixes for the pure code:
#   Berlin 2026-03-29 (spring forward: 02:00 CET -> 03:00 CEST at 01:00Z): 02:30 does not
#     exist; it fires once, at the first valid instant after the gap, 03:00 CEST = 01:00Z.
#   Berlin 2026-10-25 (fall back: 03:00 CEST -> 02:00 CET at 01:00Z): 02:30 happens twice,
#     at 00:30Z (CEST) and 01:30Z (CET); it fires once, at the first occurrence, 00:30Z.
#   New York 2026-03-08 (spring forward at 02:00 EST = 07:00Z): 01:00 is before the gap and
#     exists once, 01:00 EST = 06:00Z.
#   New York 2026-11-01 (fall back: 02:00 EDT -> 01:00 EST at 06:00Z): 01:00 happens twice,
#     at 05:00Z (EDT) and 06:00Z (EST); it fires once, at the first occurrence, 05:00Z.
# Every local day has exactly one fire time, no fire time appears twice, and each fire time
# gives exactly one job.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run dst
port=$(free_port)
export TRIGD_METRICS="127.0.0.1:$port"
tmp=$(mktemp -d)
trigd_pid=
cleanup() { [[ -n $trigd_pid ]] && kill "$trigd_pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- trigd log"; cat "$tmp/trigd.log"; exit 1; }
start=$SECONDS
(( $(date -u +%s) > $(date -u -d 2026-11-02T00:00:00Z +%s) )) || fail "the clock must be past 2026-11-01 for this test"

"$bin/trigctl" topics create >/dev/null
"$bin/trigd" migrate >/dev/null
cat >"$tmp/schedules.json" <<'EOF'
[
 {"namespace": "dst", "name": "berlin", "program": {"name": "dst.berlin"}, "heartbeat_timeout": "1d",
  "trigger": {"time": {"cron": "30 2 * * *", "timezone": "Europe/Berlin", "catchup": "all", "catchup_window": "400d"}}},
 {"namespace": "dst", "name": "newyork", "program": {"name": "dst.newyork"}, "heartbeat_timeout": "1d",
  "trigger": {"time": {"cron": "0 1 * * *", "timezone": "America/New_York", "catchup": "all", "catchup_window": "400d"}}}
]
EOF
"$bin/trigctl" schedules apply -f "$tmp/schedules.json" >/dev/null || fail "apply"
updated=$(psql "$TRIGD_PG" -XAt -c "WITH u AS (UPDATE time_triggers SET anchor = '2026-03-01T00:00:00Z',
  last_fire_time = NULL, next_fire_at = now() RETURNING 1) SELECT count(*) FROM u")
[[ $updated == 2 ]] || fail "expected 2 time_triggers rows, updated $updated"
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & trigd_pid=$!

# Polls until the ticks match the oracle (exit 0), are still arriving (3), or are wrong (1).
check() {
  kcat -C -b "$TRIGD_KAFKA" -t "$run.events.time" -e -q >"$tmp/ticks.jsonl" 2>/dev/null || true
  python3 - "$tmp/ticks.jsonl" "${1:-}" <<'EOF'
import collections, datetime as dt, json, sys
from zoneinfo import ZoneInfo
UTC = dt.timezone.utc
ticks = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
final = sys.argv[2] == "final"
if not ticks:
    sys.exit(3)
def parse(s): return dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
def fmt(t): return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
T = min(parse(t["time"]) for t in ticks)  # the catch-up pass's instant (stamped on its ticks)

def fire(day, hour, minute, zone):
    """The instant a daily local time fires: the earliest instant whose local wall time is at
    or after it. That is the time itself when it exists once, its first occurrence when it
    exists twice, and the end of the gap when it does not exist."""
    naive = dt.datetime(day.year, day.month, day.day, hour, minute)
    cands = sorted({(naive - naive.replace(tzinfo=zone, fold=f).utcoffset()).replace(tzinfo=UTC) for f in (0, 1)})
    valid = [c for c in cands if c.astimezone(zone).replace(tzinfo=None) == naive]
    if valid:
        return valid[0]
    u = cands[0]
    while u.astimezone(zone).replace(tzinfo=None) < naive:
        u += dt.timedelta(minutes=1)
    return u

specs = {"dst/berlin": (2, 30, ZoneInfo("Europe/Berlin")), "dst/newyork": (1, 0, ZoneInfo("America/New_York"))}
anchor = dt.datetime(2026, 3, 1, tzinfo=UTC)
fixed = {"dst/berlin": {"2026-03-29": "2026-03-29T01:00:00Z", "2026-10-25": "2026-10-25T00:30:00Z"},
         "dst/newyork": {"2026-03-08": "2026-03-08T06:00:00Z", "2026-11-01": "2026-11-01T05:00:00Z"}}
ok, missing = True, False
by = collections.defaultdict(list)
for t in ticks:
    p = t["payload"]
    if t["id"] != f"tick:{p['schedule']}:{p['fire_time']}":
        print(f"tick id {t['id']} is not tick:<schedule>:<fire_time>"); ok = False
    by[p["schedule"]].append(p["fire_time"])
for name, (h, m, zone) in specs.items():
    want = []
    day = dt.date(2026, 2, 28)
    while day <= T.date() + dt.timedelta(days=1):
        f = fire(day, h, m, zone)
        if anchor < f <= T:
            want.append(fmt(f))
        day += dt.timedelta(days=1)
    for d, inst in fixed[name].items():
        if inst not in want:
            print(f"oracle disagrees with cron_test.cc: {name} {d} {inst} not in {[w for w in want if w.startswith(d)]}")
            ok = False
    got = sorted(set(by[name]))
    # The pass at T is complete when it holds every fire time up to T; later passes add the
    # next days' fire times only.
    first = sorted(f for f in got if parse(f) <= T)
    resent = len(by[name]) - len(got)
    local_days = collections.Counter(parse(f).astimezone(zone).date() for f in got)
    twice = [str(d) for d, c in local_days.items() if c > 1]
    if first != want or final:
        extra, lost = sorted(set(first) - set(want)), sorted(set(want) - set(first))
        print(f"{name}: {len(want)} fire times expected in (2026-03-01T00:00Z, {fmt(T)}], got {len(first)}; "
              f"unexpected {extra[:6]} missing {lost[:6]}; local days firing twice {twice}; re-sent {resent}")
        for d in fixed[name]:
            print(f"  {name} on {d}: {[f for f in got if f.startswith(d)]}")
    if set(first) - set(want) or twice:
        ok = False
    elif first != want:
        missing = True
sys.exit(1 if not ok else 3 if missing else 0)
EOF
}
deadline=$((SECONDS + 90))
while :; do
  rc=0; check >"$tmp/check.out" || rc=$?
  [[ $rc == 0 ]] && break
  kill -0 "$trigd_pid" 2>/dev/null || fail "trigd exited"
  [[ $rc == 3 ]] || fail "ticks: $(cat "$tmp/check.out")"
  ((SECONDS < deadline)) || fail "ticks did not all arrive: $(cat "$tmp/check.out")"
  sleep 1
done
check final

# Each fire time gives exactly one job, launched, holding that tick alone.
deadline=$((SECONDS + 90))
while :; do
  out=$(psql "$TRIGD_PG" -XAt -c "SELECT count(*) FILTER (WHERE state = 'launched'), count(*),
          count(DISTINCT triggered_by->0->>'id'), max(jsonb_array_length(triggered_by)) FROM jobs")
  IFS='|' read -r launched total distinct longest <<<"$out"
  ticks=$(python3 -c 'import json,sys; print(len({json.loads(l)["id"] for l in open(sys.argv[1]) if l.strip()}))' "$tmp/ticks.jsonl")
  ((launched >= ticks && launched == total)) && break
  ((SECONDS < deadline)) || fail "jobs: $launched launched of $total for $ticks tick ids"
  sleep 1
done
[[ $distinct == "$total" && $longest == 1 ]] || fail "a fire time gave two jobs or a job holds two ticks: $out"
echo "$ticks fire times -> $launched launched jobs, one per fire time"
kill "$trigd_pid"; wait "$trigd_pid" 2>/dev/null || true; trigd_pid=
psql "${TRIGD_PG% dbname=*}" -qc "DROP DATABASE $db" >/dev/null 2>&1 || true
echo "dst e2e passed in $((SECONDS - start))s"
