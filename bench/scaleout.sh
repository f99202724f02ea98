#!/usr/bin/env bash
# scaleout.sh — the Kafka tier as shipped (deploy/collector/kafka-ingest.yaml,
# kafka-turn-state.yaml) on tools/kfake answering every request LATENCY late:
# one run with turn_state's changelog journal off and one instance, then runs
# with it on and 1, 2 and 3 instances (bench/scaleout). It prints each run and
# last `changelog throughput ratio with/without journal: X.XX`,
# `scale-out throughput 3/1 instances: X.XX` and
# `scale-out CPU per event 3/1 instances: X.XX`.
#
# Sizes (override with the environment): SESSIONS=384 TURNS=10 (bench/gen,
# STEPS=3 TOOLS=2 CHUNKS=20 FORMAT=mix SEED=1), PARTITIONS=24, LATENCY=2ms,
# ROWS=100 rows per HTTP request, WORKERS=32, INSTANCES=1,2,3, RUNS=3
# (rounds; the summary takes medians); PROFILE a
# directory for the instances' CPU profiles. Needs bin/otelcol-dsh (make
# otelcol-dsh) and builds kfake with tools/build.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
: "${SESSIONS:=384}" "${TURNS:=10}" "${STEPS:=3}" "${TOOLS:=2}" "${CHUNKS:=20}" "${FORMAT:=mix}" "${SEED:=1}"
: "${PARTITIONS:=24}" "${LATENCY:=2ms}" "${ROWS:=100}" "${WORKERS:=32}" "${INSTANCES:=1,2,3}" "${RUNS:=3}"
go=${GO:-go}
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
eval "$(tools/build.sh kfake)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$go" build -o "$tmp/gen" ./bench/gen
"$go" build -o "$tmp/scaleout" ./bench/scaleout
corpus=$(bench/corpus.sh "$tmp/gen" -sessions "$SESSIONS" -turns "$TURNS" -steps "$STEPS" \
	-tools "$TOOLS" -chunks "$CHUNKS" -format "$FORMAT" -seed "$SEED")
echo "# $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg), $("$go" version | cut -d' ' -f3)"
profile=()
if [[ -n ${PROFILE:-} ]]; then
	mkdir -p "$PROFILE"
	profile=(-profile "$(cd "$PROFILE" && pwd)")
fi
"$tmp/scaleout" -corpus "$corpus" -kfake "$KFAKE" -otelcol bin/otelcol-dsh -partitions "$PARTITIONS" \
	-latency "$LATENCY" -rows "$ROWS" -workers "$WORKERS" -instances "$INSTANCES" -runs "$RUNS" "${profile[@]}"
