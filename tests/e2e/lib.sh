# Shared by the e2e scripts: `source "$src/tests/e2e/lib.sh"`.

# N (default 1) distinct loopback ports the kernel reports free right now, one per line. Ports
# drawn at random collided with the ephemeral ports of the tests' own Kafka and PostgreSQL
# connections (32768-60999 on Linux): trigd then could not serve its metrics and the test failed
# for no fault of trigd's.
free_port() {
  python3 - "${1:-1}" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in socks))
PY
}

# wait_until SECONDS CMD...: runs CMD every 0.2 s until it succeeds (0) or SECONDS pass (1).
wait_until() {
  local deadline=$((SECONDS + $1)); shift
  while ((SECONDS < deadline)); do "$@" && return 0; sleep 0.2; done
  return 1
}

# wait_for_message SECONDS TOPIC PATTERN: prints the messages of TOPIC (read from its start)
# that hold PATTERN (a fixed string) once there are any (0), or nothing after SECONDS (1).
wait_for_message() {
  local deadline=$((SECONDS + $1)) out
  while ((SECONDS < deadline)); do
    out=$(kcat -C -b "$TRIGD_KAFKA" -t "$2" -e -q 2>/dev/null | grep -F -- "$3" || true)
    [[ -n $out ]] && { echo "$out"; return 0; }
    sleep 0.2
  done
  return 1
}

# e2e_run NAME: this run's own database and topics on the services tools/services starts.
# Sets run (NAME, the process id and the time) and db (trigd_$run), creates the database, and
# exports TRIGD_PG (pointing at it), TRIGD_TOPIC_PREFIX ("$run."), TRIGD_GROUP ($run) and
# TRIGD_API (any free loopback port).
e2e_run() {
  : "${TRIGD_PG:?TRIGD_PG must point at the PostgreSQL that tools/services starts}"
  : "${TRIGD_KAFKA:?TRIGD_KAFKA must point at the Kafka broker that tools/services starts}"
  run=$1$$$(date +%s)
  db=trigd_$run
  psql "$TRIGD_PG" -qc "CREATE DATABASE $db" >/dev/null
  export TRIGD_PG="$TRIGD_PG dbname=$db" TRIGD_TOPIC_PREFIX="$run." TRIGD_GROUP="$run"
  # Each trigd's HTTP API on a port of its own (any free one): tests run side by side.
  export TRIGD_API=127.0.0.1:0
}

# e2e_tmp: a temporary folder ($tmp) and a list of process ids ($pids, append to it) that are
# killed, and the folder removed, when the script exits.
e2e_tmp() {
  tmp=$(mktemp -d)
  pids=()
  trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
}

# expect RC TEXT CMD...: CMD exits RC and says TEXT on stderr (a line equal to TEXT). Uses the
# script's $tmp (its stdout lands in $tmp/out, its stderr in $tmp/err) and its fail function.
expect() {
  local want_rc=$1 text=$2; shift 2
  local rc=0
  "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [[ $rc == "$want_rc" ]] || fail "$*: exit $rc, expected $want_rc; stderr: $(cat "$tmp/err")"
  grep -qxF -- "$text" "$tmp/err" || fail "$*: stderr does not say \"$text\": $(cat "$tmp/err")"
}
