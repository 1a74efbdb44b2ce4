#!/usr/bin/env bash
# e2e: the example worker of docs/worker.md (tools/examples/worker.py) against a real trigd and
# Kafka: a run whose command exits 0 ends succeeded, one that exits 3 ends failed, and a run
# whose command outlives a third of its heartbeat_timeout heartbeats (it is not declared lost),
# and requests of an attempt trigd ended or past their start_by are not started.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run pyworker
e2e_tmp
export TRIGD_METRICS="127.0.0.1:$(free_port)"
fail() { echo "FAIL: $*"; echo "--- trigd log"; cat "$tmp/trigd.log"; echo "--- worker log"; cat "$tmp/worker.log"; exit 1; }

label="python worker"
worker=(python3 "$src/tools/examples/worker.py")
source "$src/tests/e2e/example_worker_checks.sh"
