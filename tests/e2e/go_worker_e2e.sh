#!/usr/bin/env bash
# e2e: the Go example worker (tools/examples/go-worker, franz-go) against a real trigd and
# Kafka: a run whose command exits 0 ends succeeded, one that exits 3 ends failed, and a run
# whose command outlives a third of its heartbeat_timeout heartbeats (it is not declared lost),
# and requests of an attempt trigd ended or past their start_by are not started.
set -euo pipefail
src=$1; bin=$2
source "$src/tests/e2e/lib.sh"
e2e_run goworker
e2e_tmp
export TRIGD_METRICS="127.0.0.1:$(free_port)"
fail() { echo "FAIL: $*"; echo "--- trigd log"; cat "$tmp/trigd.log"; echo "--- worker log"; cat "$tmp/worker.log"; exit 1; }

# Built from the module cache tools/setup filled (go.sum pins it): no network here. Go is the
# one on PATH, else the one tools/setup fetched.
go=$(command -v go || echo "$src/.local/go/bin/go")
(cd "$src/tools/examples/go-worker" && GOFLAGS=-mod=readonly GOPROXY=off "$go" build -o "$tmp/go-worker" .) ||
  fail "go build"
label="go worker"
worker=("$tmp/go-worker")
source "$src/tests/e2e/example_worker_checks.sh"
