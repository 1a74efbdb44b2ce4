#!/usr/bin/env bash
# A failure drill of docs/production.md, short form for CI (label chaos): its own replicated
# services (tools/services start --cluster: three brokers, a PostgreSQL primary and standby),
# two trigd instances, a stream of events, one fault in mid-stream (tools/chaos kill-loop
# --fault), then every job, run and launch request counted: exit 0 only with 0 lost and 0
# launched twice. The full size: tools/chaos kill-loop --kills 0 --fault F --events 10000.
# Usage: drill.sh SRC BIN FAULT(broker|pg-failover) MODE(sync|async) PORT_BASE [EVENTS]
set -euo pipefail
src=$1; bin=$2; fault=$3; mode=$4; base=$5; events=${6:-600}
# Under /var/tmp: PostgreSQL runs as the postgres user, which must reach its data folder.
TRIGD_SERVICES_DIR=$(mktemp -d /var/tmp/trigd-drill-XXXXXX)
export TRIGD_SERVICES_DIR TRIGD_PG_PORT=$((base + 432)) TRIGD_KAFKA_PORT=$((base + 92)) \
  TRIGD_KAFKA_CONTROLLER_PORT=$((base + 192))
cleanup() {
  "$src/tools/services" stop-cluster >/dev/null 2>&1 || true
  rm -rf "$TRIGD_SERVICES_DIR"
}
trap cleanup EXIT
eval "$("$src/tools/services" start --cluster "--$mode")"
export TRIGD_PG TRIGD_KAFKA
python3 "$src/tools/chaos" kill-loop --kills 0 --fault "$fault" --fault-down 10 --events "$events" --rate 20 \
  --lanes 2 --instances 2 --bin "$bin"
