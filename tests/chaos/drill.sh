#!/usr/bin/env bash
# A failure drill of docs/production.md, short form for CI (label chaos): its own replicated
# services (tools/services start --cluster: three brokers, a PostgreSQL primary and standby),
# two trigd instances, a stream of events, one fault in mid-stream (tools/chaos kill-loop
# --fault), then every job, run and launch request counted: exit 0 only with 0 lost and 0
# launched twice. The full size: tools/chaos kill-loop --kills 0 --fault F --events 10000.
# Usage: drill.sh SRC BIN FAULT(broker|pg-failover) MODE(sync|async) PORT_BASE [KILL-LOOP ARGS...]
# (default --events 600 --rate 20 --lanes 2; the full size: --events 10000 --rate 100 --lanes 200,
# 1,000 schedules).
set -euo pipefail
src=$1; bin=$2; fault=$3; mode=$4; base=$5
shift 5
(($#)) || set -- --events 600 --rate 20 --lanes 2
# Ports PORT_BASE to +2 (brokers), +10 to +12 (controllers), +20 and +21 (PostgreSQL). Data under
# /var/tmp (PostgreSQL runs as the postgres user, which must reach it), one folder per base: a
# drill killed by ctest's timeout leaves its services, which the next drill on that base stops.
export TRIGD_SERVICES_DIR=/var/tmp/trigd-drill-$base TRIGD_KAFKA_PORT=$base TRIGD_KAFKA_CONTROLLER_PORT=$((base + 10)) \
  TRIGD_PG_PORT=$((base + 20))
cleanup() {
  "$src/tools/services" stop-cluster >/dev/null 2>&1 || true
  rm -rf "$TRIGD_SERVICES_DIR"
}
cleanup
trap cleanup EXIT
# Not eval "$(…)" alone: a failed start would go unnoticed and the drill run on other services.
exports=$("$src/tools/services" start --cluster "--$mode")
eval "$exports"
export TRIGD_PG TRIGD_KAFKA
python3 "$src/tools/chaos" kill-loop --kills 0 --fault "$fault" --fault-down 10 --instances 2 --bin "$bin" "$@"
