#!/usr/bin/env bash
# e2e: trigd as production connects it. A secure pair of its own (tools/services start --secure:
# Kafka on SASL_SSL with SCRAM users and ACLs, PostgreSQL on TLS with sslmode=verify-full),
# each principal granted exactly the ACLs docs/security.md lists and nothing more (no super
# user). The walking skeleton and a two-node DAG run through it: apply, event, launch, worker,
# succeeded, downstream launched. Then the failures a user meets first, each within 30 s with
# the cause named: a wrong password, an unknown CA, a plaintext client on the TLS port, a wrong
# PostgreSQL root certificate, and a worker's principal emitting a partition event. No secret
# appears in any output, librdkafka's debug logs included.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_tmp
svc=$tmp/services
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/*.log; do echo "--- $f"; tail -30 "$f"; done
  exit 1
}
mapfile -t ports < <(free_port 3)
export TRIGD_SERVICES_DIR=$svc TRIGD_PG_PORT=${ports[0]} TRIGD_KAFKA_PORT=${ports[1]}
export TRIGD_KAFKA_CONTROLLER_PORT=${ports[2]}
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true
  "$src/tools/services" stop 2>/dev/null || true; rm -rf "$tmp"' EXIT
chmod 755 "$tmp"  # PostgreSQL runs as postgres, which must reach its data under it
env_lines=$("$src/tools/services" start --secure 2>"$tmp/services.log") || fail "tools/services start --secure"
eval "$env_lines"
tls=$svc/tls
e2e_run sec
P=$TRIGD_TOPIC_PREFIX G=$TRIGD_GROUP
port=$(free_port)
export TRIGD_METRICS="127.0.0.1:$port" TRIGD_API=off
admin_kcat() { kcat -F "$tls/admin.properties" -b "$TRIGD_KAFKA" "$@"; }

# The topics, made by the operator principal; then exactly the ACLs of docs/security.md.
"$src/tools/services" kafka-admin <<ACLS || fail "granting the ACLs"
allow User:operator DESCRIBE TOPIC PREFIXED $P
allow User:operator CREATE TOPIC PREFIXED $P
allow User:trigd DESCRIBE TOPIC PREFIXED $P
allow User:trigd READ TOPIC PREFIXED ${P}events.
allow User:trigd WRITE TOPIC PREFIXED ${P}launch.
allow User:trigd CREATE TOPIC PREFIXED ${P}launch.
allow User:trigd WRITE TOPIC LITERAL ${P}events.time
allow User:trigd WRITE TOPIC LITERAL ${P}control
allow User:trigd WRITE TOPIC LITERAL ${P}dead
allow User:trigd READ GROUP LITERAL $G
allow User:worker DESCRIBE TOPIC LITERAL ${P}launch.default
allow User:worker READ TOPIC LITERAL ${P}launch.default
allow User:worker READ GROUP LITERAL $G-worker-default
allow User:worker DESCRIBE TOPIC LITERAL ${P}control
allow User:worker READ TOPIC LITERAL ${P}control
allow User:worker DESCRIBE TOPIC LITERAL ${P}events.program
allow User:worker WRITE TOPIC LITERAL ${P}events.program
allow User:producer DESCRIBE TOPIC LITERAL ${P}events.data
allow User:producer WRITE TOPIC LITERAL ${P}events.data
ACLS
TRIGD_KAFKA_CONFIG=$tls/operator.properties "$bin/trigctl" topics create >/dev/null || fail "topics create as operator"
"$bin/trigd" migrate >/dev/null || fail "migrate over TLS"
cat >"$tmp/dag.json" <<'DOC'
[{"namespace": "sec", "name": "a", "program": {"name": "sec.a", "args": {"command": "echo a {{partitions}}"}},
  "trigger": {"partition": {"dataset": "demo.raw"}}},
 {"namespace": "sec", "name": "b", "program": {"name": "sec.b", "args": {"command": "echo b"}},
  "trigger": {"program": {"name": "sec.a", "status": ["succeeded"]}}}]
DOC
"$bin/trigctl" schedules apply -f "$tmp/dag.json" >/dev/null || fail "apply"
# trigd with librdkafka's debug logs on: they must not show the password either.
{ cat "$tls/trigd.properties"; echo "debug=security,broker"; } >"$tmp/trigd-debug.properties"
chmod 600 "$tmp/trigd-debug.properties"
TRIGD_KAFKA_CONFIG=$tmp/trigd-debug.properties "$bin/trigd" >"$tmp/trigd.log" 2>&1 & pids+=($!)
TRIGD_KAFKA_CONFIG=$tls/worker.properties "$bin/trigd-worker" >"$tmp/worker.log" 2>&1 & pids+=($!)
TRIGD_KAFKA_CONFIG=$tls/producer.properties "$bin/trigctl" events emit partition demo.raw dt=2026-12-01 \
  >"$tmp/emit.log" 2>&1 || fail "events emit as the producer"

wait_launch() {
  local deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    admin_kcat -C -t "${P}launch.default" -e -q 2>/dev/null | grep -qF "\"schedule\":\"$1\"" && return 0
    sleep 0.3
  done
  return 1
}
wait_launch sec/a 60 || fail "no launch request for sec/a"
wait_launch sec/b 60 || fail "no downstream launch request for sec/b"
succeeded() { (($(admin_kcat -C -t "${P}events.program" -e -q 2>/dev/null | grep -c '"status":"succeeded"') >= 2)); }
wait_until 30 succeeded || fail "both runs did not succeed"
runs=$("$bin/trigctl" runs list --json | python3 -c 'import json,sys; print(" ".join(sorted(r["schedule"]+"="+r["state"] for r in json.load(sys.stdin))))')
[[ $runs == "sec/a=succeeded sec/b=succeeded" ]] || fail "runs: $runs"

# A worker's principal may not emit a partition event: the authorization error is what it says.
start=$SECONDS
rc=0
TRIGD_KAFKA_CONFIG=$tls/worker.properties "$bin/trigctl" events emit partition demo.raw dt=forged >"$tmp/out" 2>"$tmp/forged.log" || rc=$?
[[ $rc != 0 ]] || fail "a worker emitted a partition event"
grep -q "Topic authorization failed" "$tmp/forged.log" || fail "forged emit: $(cat "$tmp/forged.log")"
((SECONDS - start < 30)) || fail "forged emit took $((SECONDS - start)) s"

# Each failure: exit non-zero within 30 s, saying why (PATTERN).
refused() {
  local what=$1 pattern=$2; shift 2
  local start=$SECONDS rc=0
  timeout 60 "$@" >"$tmp/refused.log" 2>&1 || rc=$?
  [[ $rc != 0 && $rc != 124 ]] || fail "$what: exit $rc"
  ((SECONDS - start < 30)) || fail "$what took $((SECONDS - start)) s"
  grep -qF -- "$pattern" "$tmp/refused.log" || fail "$what: $(cat "$tmp/refused.log")"
  cat "$tmp/refused.log" >>"$tmp/refusals.log"
}
sed 's/^sasl.password=.*/sasl.password=not-the-password/' "$tls/trigd.properties" >"$tmp/wrong.properties"
(cd "$tmp" && openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other-ca.crt -days 1 \
  -subj "/CN=another CA" 2>/dev/null)
sed "s|^ssl.ca.location=.*|ssl.ca.location=$tmp/other-ca.crt|" "$tls/trigd.properties" >"$tmp/unknown-ca.properties"
chmod 600 "$tmp"/*.properties
TRIGD_METRICS=127.0.0.1:0
refused "wrong password" "Kafka refused the credentials" env TRIGD_KAFKA_CONFIG="$tmp/wrong.properties" "$bin/trigd"
refused "unknown CA" "certificate verify failed" env TRIGD_KAFKA_CONFIG="$tmp/unknown-ca.properties" "$bin/trigd-worker"
refused "plaintext client" "security.protocol" env -u TRIGD_KAFKA_CONFIG "$bin/trigd"
refused "wrong PostgreSQL root certificate" "certificate verify failed" \
  env TRIGD_PG="${TRIGD_PG/sslrootcert=$tls\/ca.crt/sslrootcert=$tmp/other-ca.crt}" "$bin/trigctl" schedules list

# HTTPS for the API: trigctl verifies the server against --cacert, and a renewed certificate is
# served without a restart.
api_port=$(free_port)
cp "$tls/server.crt" "$tmp/api.crt"; cp "$tls/server.key" "$tmp/api.key"
TRIGD_KAFKA_CONFIG=$tls/trigd.properties TRIGD_API=127.0.0.1:$api_port TRIGD_API_CERT=$tmp/api.crt \
  TRIGD_API_KEY=$tmp/api.key TRIGD_METRICS=127.0.0.1:$(free_port) "$bin/trigd" >"$tmp/trigd-https.log" 2>&1 & pids+=($!)
api="https://127.0.0.1:$api_port"
wait_until 30 "$bin/trigctl" --api "$api" --cacert "$tls/ca.crt" schedules list >/dev/null ||
  fail "trigctl over HTTPS with --cacert"
"$bin/trigctl" --api "$api" --cacert "$tmp/other-ca.crt" schedules list >/dev/null 2>"$tmp/https-other.log" &&
  fail "trigctl trusted a certificate from an unknown CA"
grep -q "does not verify" "$tmp/https-other.log" || fail "unknown CA over HTTPS: $(cat "$tmp/https-other.log")"
serial() { openssl s_client -connect "127.0.0.1:$api_port" </dev/null 2>/dev/null | openssl x509 -noout -serial; }
before=$(serial)
(cd "$tls" && openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out "$tmp/renewed.crt" \
  -days 30 -extfile server.ext 2>/dev/null)
mv "$tmp/renewed.crt" "$tmp/api.crt"
renewed() { [[ $(serial) != "$before" ]]; }
wait_until 10 renewed || fail "the renewed certificate was not served"
"$bin/trigctl" --api "$api" --cacert "$tls/ca.crt" schedules list >/dev/null || fail "trigctl after renewal"
refused "plain HTTP off loopback" "tokens would travel in clear text" \
  env TRIGD_API=0.0.0.0:0 TRIGD_TOKENS=/dev/null "$bin/trigd"

# No secret anywhere: logs (debug included), errors, the processes' command lines.
for u in trigd worker producer operator admin; do
  secret=$(cat "$tls/$u.password")
  grep -rqF -- "$secret" "$tmp"/*.log && fail "the password of $u is in $(grep -rlF -- "$secret" "$tmp"/*.log)"
  for p in "${pids[@]}"; do tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF -- "$secret" && fail "password of $u in ps"; done
done
grep -q "sasl" "$tmp/trigd.log" || fail "librdkafka's debug logs did not reach trigd's log"
echo "secure e2e: DAG sec/a -> sec/b over SASL_SSL and verify-full; refusals named within 30 s; no secret shown"
