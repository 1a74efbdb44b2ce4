#!/usr/bin/env bash
# e2e: trigd's metrics as a real Prometheus server sees them. Starts trigd and a worker on a
# private database, topic prefix, consumer group and metrics port, and Debian's Prometheus
# scraping that port every second; drives 3 partition events and 1 garbage message through;
# then expects, through Prometheus's HTTP API, the applied events, the dead letter and the
# launch, checks the exposition with `promtool check metrics`, and runs every query of
# tools/grafana/trigd-dashboard.json against the server (valid PromQL, data where trigd
# exposes the metric).
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
: "${TRIGD_PG:?TRIGD_PG must point at the PostgreSQL that tools/services starts}"
: "${TRIGD_KAFKA:?TRIGD_KAFKA must point at the Kafka broker that tools/services starts}"
prometheus=$(command -v prometheus || true)
[[ -n $prometheus ]] || { echo "FAIL: no prometheus binary (tools/setup installs Debian's prometheus package)"; exit 1; }
command -v promtool >/dev/null || { echo "FAIL: no promtool (Debian's prometheus package)"; exit 1; }

run=prom$$$(date +%s)
db=trigd_$run
admin_pg=$TRIGD_PG
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  psql "$admin_pg" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in trigd worker prometheus; do echo "--- $f log"; tail -50 "$tmp/$f.log" 2>/dev/null || true; done
  exit 1
}
# Free loopback ports picked by the kernel, so parallel runs and other tests do not collide.
read -r -d "" metrics_port prom_port < <(free_port 2) || true
prom="http://127.0.0.1:$prom_port"

psql "$admin_pg" -qc "CREATE DATABASE $db" >/dev/null
export TRIGD_PG="$TRIGD_PG dbname=$db" TRIGD_TOPIC_PREFIX="$run." TRIGD_GROUP="$run"
export TRIGD_METRICS="127.0.0.1:$metrics_port" TRIGD_API=127.0.0.1:0

cat >"$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: trigd
    static_configs:
      - targets: ["127.0.0.1:$metrics_port"]
YML
promtool check config "$tmp/prometheus.yml" >/dev/null || fail "promtool rejects the generated config"
"$prometheus" --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
  --web.listen-address="127.0.0.1:$prom_port" >"$tmp/prometheus.log" 2>&1 & pids+=($!)

"$bin/trigctl" topics create >/dev/null || fail "topics create"
"$bin/trigd" migrate >/dev/null || fail "migrate"
"$bin/trigctl" schedules apply -f "$src/tools/examples/demo-ingest.json" | grep -q "applied" || fail "apply"
"$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)
"$bin/trigd-worker" >"$tmp/worker.log" 2>&1 & pids+=($!)

ready=0
for _ in $(seq 1 60); do
  curl -sf "$prom/-/ready" >/dev/null 2>&1 && { ready=1; break; }
  sleep 0.5
done
((ready)) || fail "Prometheus not ready on $prom within 30 s"

for dt in dt=2026-11-20 dt=2026-11-21 dt=2026-11-22; do
  "$bin/trigctl" events emit partition demo.raw "$dt" >/dev/null || fail "events emit $dt"
done
echo 'not json' | kcat -P -b "$TRIGD_KAFKA" -t "${run}.events.data" -k junk || fail "kcat"

# value EXPR -> the sum of an instant query's samples (0 when it has none); fails on API errors.
value() {
  curl -sf --get --data-urlencode "query=$1" "$prom/api/v1/query" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["status"]=="success", r; print(sum(float(s["value"][1]) for s in r["data"]["result"]))'
}
at_least() { python3 -c "import sys; sys.exit(0 if float('$1') >= float('$2') else 1)"; }
declare -A want=(
  ['up{job="trigd"}']=1
  ['trigd_events_total{type="partition",outcome="applied"}']=3
  ['trigd_dead_letters_total']=1
  ['trigd_jobs_total{transition="launched"}']=1
  ['trigd_event_to_launch_seconds_count']=1
  ['trigd_runs_total{outcome="succeeded"}']=1
)
deadline=$((SECONDS + 60))
while :; do
  missing=()
  for q in "${!want[@]}"; do
    v=$(value "sum($q)") || fail "Prometheus API error on sum($q)"
    at_least "$v" "${want[$q]}" || missing+=("sum($q)=$v, want >= ${want[$q]}")
  done
  ((${#missing[@]} == 0)) && break
  ((SECONDS < deadline)) || fail "within 60 s Prometheus did not see: ${missing[*]}"
  sleep 1
done

curl -sf "http://127.0.0.1:$metrics_port/metrics" >"$tmp/exposition.txt" || fail "no /metrics on $metrics_port"
promtool check metrics <"$tmp/exposition.txt" || fail "promtool check metrics"

# Every dashboard query, with Grafana's variables given a value, must be valid PromQL, and must
# return data whenever every trigd metric it reads has at least one series in Prometheus. A
# rate() needs two samples of the newest counters: on a busy machine a scrape can come late, so
# queries without data yet are asked again for up to 30 s (invalid PromQL fails at once).
python3 - "$src" "$prom" <<'PY' || fail "dashboard queries"
import json, sys, time, urllib.parse, urllib.request
sys.path.insert(0, sys.argv[1] + "/tests/e2e")
from compose_check import dashboard_targets, promql_parts, strip_grafana_variables

prom = sys.argv[2]
def query(expr):
    url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:  # 400 carries the parse error in its body
        return json.load(e)

dashboard = json.load(open(sys.argv[1] + "/tools/grafana/trigd-dashboard.json"))
targets = list(dashboard_targets(dashboard))
deadline = time.monotonic() + 30
while True:
    invalid, empty = [], []
    for panel, target in targets:
        expr = strip_grafana_variables(target["expr"])
        r = query(expr)
        if r.get("status") != "success":
            invalid.append(f"FAIL '{panel['title']}': {expr}: {r.get('error')}")
            continue
        metrics, _, _ = promql_parts(target["expr"])
        exposed = all(query(f'count({{__name__="{m}"}})')["data"]["result"] for m in metrics)
        if exposed and not r["data"]["result"]:
            empty.append(f"FAIL '{panel['title']}': {expr} returned no data although trigd exposes {sorted(metrics)}")
    if invalid or not empty or time.monotonic() > deadline:
        break
    time.sleep(1)
for line in invalid + empty:
    print(line)
failed = len(invalid) + len(empty)
print(f"dashboard: {len(targets) - failed} of {len(targets)} queries valid on Prometheus")
sys.exit(1 if failed else 0)
PY

echo "prometheus e2e: Prometheus on $prom saw 3 applied partition events, a dead letter, a launch and a succeeded run; exposition passes promtool"
