#!/usr/bin/env bash
# load.sh — HTTP ingest under load: builds bin/otelcol-dsh and bench/load,
# then runs the load generator against a collector it starts on loopback
# (session_event over HTTP → turn_state → debug/prometheus exporters).
#
# Usage: bench/load.sh [flags of bench/load]
#   -sessions N   sessions posted (default 200)
#   -events M     events per session (default 10000)
#   -workers C    concurrent HTTP clients (default 32)
#   -rows R       rows per request (default 500)
#   -timeout D    overall time limit (default 15m)
#   -keep         keep the temp dir with the config and the collector log
#   -storage      file_storage for the receiver's dedup state and turn_state's
#                 journal, as deploy/collector configures them
#   GO            the go command (default go)
#
# Prints a table (wall time, events/s, request latency p50/p95/p99/max,
# collector peak RSS and CPU time) and exits non-zero when a row was not
# accepted exactly once or dsh_turns_total does not count every turn.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
go="${GO:-go}"

make --no-print-directory otelcol-dsh GO="$go"
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
"$go" build -o "$bin/load" ./bench/load
echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); bench/load $*"
"$bin/load" -collector bin/otelcol-dsh "$@"
