#!/usr/bin/env bash
# e2e: a PostgreSQL that accepts TCP and never answers, and SIGTERM
# (docs/adr/0056-connect-timeout-and-stop-grace.md).
# - trigctl fails within its connect timeout (TRIGD_PG_CONNECT_TIMEOUT, and 10 s by default)
#   with exit 2 and a message naming the timeout; a bad TRIGD_PG_CONNECT_TIMEOUT is refused.
# - trigd, trigctl and trigd-worker stop within 2 s of SIGTERM: trigd held in its connect, trigd
#   running against the real services, trigctl held in its connect, the worker polling Kafka.
# Times are measured with timestamps around each process.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run unresp
e2e_tmp
fail() { echo "FAIL: $*"; for f in "$tmp"/*.log; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
now() { date +%s.%N; }
# elapsed START: seconds since START, 2 decimals.
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$(now)"; }
# within LOW HIGH SECONDS: LOW <= SECONDS <= HIGH.
within() { python3 -c "import sys; l, h, s = map(float, sys.argv[1:]); sys.exit(0 if l <= s <= h else 1)" "$@"; }

# The silent endpoint: accepts every connection and never says a word.
python3 -u - >"$tmp/silent.log" <<'PY' & pids+=($!)
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1])
held = []
while True:
    c, _ = s.accept()
    held.append(c)
    print("accepted")
PY
deadline=$((SECONDS + 10))
until [[ -s "$tmp/silent.log" ]]; do ((SECONDS < deadline)) || fail "silent listener did not start"; sleep 0.1; done
silent="host=127.0.0.1 port=$(head -1 "$tmp/silent.log") user=trigd dbname=trigd"
accepted() { grep -c accepted "$tmp/silent.log" || true; }

# trigctl: the connect timeout, set and by default.
for setting in 3s default; do
  limit=${setting%s}; [[ $setting == default ]] && limit=10
  start=$(now); rc=0
  if [[ $setting == default ]]; then
    TRIGD_PG=$silent "$bin/trigctl" schedules list >"$tmp/out" 2>"$tmp/err" || rc=$?
  else
    TRIGD_PG=$silent TRIGD_PG_CONNECT_TIMEOUT=$setting "$bin/trigctl" schedules list >"$tmp/out" 2>"$tmp/err" || rc=$?
  fi
  took=$(elapsed "$start")
  [[ $rc == 2 ]] || fail "trigctl ($setting): exit $rc, expected 2: $(cat "$tmp/err")"
  within "$((limit - 1))" "$((limit + 3))" "$took" || fail "trigctl ($setting): failed after ${took}s, expected about ${limit}s"
  grep -qF "timeout expired (no answer within the connect timeout of ${limit}s;" "$tmp/err" ||
    fail "trigctl ($setting) does not name the timeout: $(cat "$tmp/err")"
  echo "trigctl against a silent PostgreSQL ($setting): exit 2 after ${took}s"
done
# connect_timeout in TRIGD_PG is honoured, and a bad TRIGD_PG_CONNECT_TIMEOUT refused.
start=$(now); rc=0
TRIGD_PG="$silent connect_timeout=2" TRIGD_PG_CONNECT_TIMEOUT=30s "$bin/trigctl" schedules list >"$tmp/out" 2>"$tmp/err" || rc=$?
took=$(elapsed "$start")
[[ $rc == 2 ]] && within 1 5 "$took" || fail "connect_timeout=2 in TRIGD_PG: exit $rc after ${took}s"
expect 1 "trigctl: TRIGD_PG_CONNECT_TIMEOUT: expected a whole number of seconds from 2s to 1h (e.g. 10s), got 1s" \
  env TRIGD_PG_CONNECT_TIMEOUT=1s "$bin/trigctl" schedules list

# SIGTERM: trigctl held in its connect (default timeout, 10 s).
before=$(accepted)
TRIGD_PG=$silent "$bin/trigctl" schedules list >/dev/null 2>&1 & ctl=$!; pids+=($ctl)
deadline=$((SECONDS + 10))
until (($(accepted) > before)); do ((SECONDS < deadline)) || fail "trigctl never connected"; sleep 0.05; done
start=$(now); kill -TERM "$ctl"; wait "$ctl" || true; took=$(elapsed "$start")
within 0 2 "$took" || fail "trigctl stopped ${took}s after SIGTERM (held in its connect)"
echo "trigctl held in its connect: stopped ${took}s after SIGTERM"

# SIGTERM: trigd held in its first connect (migrations), 10 s timeout.
before=$(accepted)
TRIGD_PG=$silent TRIGD_METRICS=127.0.0.1:$(free_port) "$bin/trigd" >"$tmp/trigd-silent.log" 2>&1 & d=$!; pids+=($d)
deadline=$((SECONDS + 10))
until (($(accepted) > before)); do ((SECONDS < deadline)) || fail "trigd never connected"; sleep 0.05; done
start=$(now); kill -TERM "$d"; rc=0; wait "$d" || rc=$?; took=$(elapsed "$start")
within 0 2 "$took" || fail "trigd stopped ${took}s after SIGTERM (held in its connect)"
[[ $rc == 0 ]] || fail "trigd held in its connect: exit $rc after SIGTERM"
grep -q "still stopping 1200 ms after Terminated; exiting now" "$tmp/trigd-silent.log" || fail "trigd did not say why it exited"
echo "trigd held in its connect: stopped ${took}s after SIGTERM"

# SIGTERM: trigd running on the real services, and a worker polling its launch topic.
"$bin/trigctl" topics create >/dev/null
TRIGD_METRICS=127.0.0.1:$(free_port) "$bin/trigd" >"$tmp/trigd.log" 2>&1 & d=$!; pids+=($d)
"$bin/trigd-worker" --target unresp >"$tmp/worker.log" 2>&1 & w=$!; pids+=($w)
deadline=$((SECONDS + 60))
until grep -qs "running: kafka" "$tmp/trigd.log"; do ((SECONDS < deadline)) || fail "trigd did not start"; sleep 0.2; done
sleep 2  # both in their loops (the consumer joined, the worker polling)
for p in "trigd:$d" "trigd-worker:$w"; do
  start=$(now); kill -TERM "${p#*:}"; rc=0; wait "${p#*:}" || rc=$?; took=$(elapsed "$start")
  within 0 2 "$took" || fail "${p%%:*} stopped ${took}s after SIGTERM (running)"
  echo "${p%%:*} running: stopped ${took}s after SIGTERM (exit $rc)"
done
echo "PASS"
