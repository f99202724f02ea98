#!/usr/bin/env bash
# paths.sh — the three ways session events reach turn_state, side by side on
# one corpus and one downstream (otelcol-dsh-bench's count exporter), in
# interleaved rounds (bench/paths): the file tail; HTTP ingest (the same
# sessions posted by concurrent clients); the Kafka two-tier deployment of
# deploy/collector on tools/kfake (ingest tier + one turn-state instance,
# journal on; both tiers' CPU counted). It prints CPU µs per event, events/s
# and peak RSS per path, and last
#
#   CPU per event, HTTP/files: X.XX
#   CPU per event, Kafka/files: X.XX
#
# Every run checks that every row was counted exactly once and every span of
# every closed turn; the script fails otherwise.
#
# Sizes (override with the environment): SESSIONS=384 TURNS=10 (bench/gen,
# STEPS=3 TOOLS=2 CHUNKS=20 FORMAT=mix SEED=1: the corpus of bench/scaleout.sh),
# ROWS=100 rows per HTTP request, WORKERS=32, PARTITIONS=24, LATENCY=2ms,
# RUNS=3 rounds, PATHS=files,http,kafka; PROFILE a directory: every
# collector process saves a CPU profile there (<path>-<process>-<round>.prof)
# and the script ends with the top of each path's (go tool pprof -top).
# DSH_BENCH a prebuilt otelcol-dsh-bench (else bench/build.sh builds it);
# DEPLOY where kafka-ingest.yaml and kafka-turn-state.yaml are (default
# deploy/collector): both let a run measure another checkout's build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
: "${SESSIONS:=384}" "${TURNS:=10}" "${STEPS:=3}" "${TOOLS:=2}" "${CHUNKS:=20}" "${FORMAT:=mix}" "${SEED:=1}"
: "${ROWS:=100}" "${WORKERS:=32}" "${PARTITIONS:=24}" "${LATENCY:=2ms}" "${RUNS:=3}" "${PATHS:=files,http,kafka}"
go=${GO:-go}
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
if [[ -z ${DSH_BENCH:-} ]]; then
	dists=$(bench/build.sh dsh)
	eval "$dists"
fi
eval "$(tools/build.sh kfake)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$go" build -o "$tmp/gen" ./bench/gen
"$go" build -o "$tmp/paths" ./bench/paths
# Run from a fresh copy, as bench/vsfilelog.sh does (why: there).
cp "$DSH_BENCH" "$tmp/otelcol-dsh-bench"
corpus=$(bench/corpus.sh "$tmp/gen" -sessions "$SESSIONS" -turns "$TURNS" -steps "$STEPS" \
	-tools "$TOOLS" -chunks "$CHUNKS" -format "$FORMAT" -seed "$SEED")
echo "# $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg), $("$go" version | cut -d' ' -f3)"
prof=()
if [[ -n ${PROFILE:-} ]]; then
	mkdir -p "$PROFILE"
	PROFILE=$(cd "$PROFILE" && pwd)
	rm -f "$PROFILE"/{files,http,kafka}-*.prof
	prof=(-profile "$PROFILE")
fi
"$tmp/paths" -dsh "$tmp/otelcol-dsh-bench" -kfake "$KFAKE" -corpus "$corpus" -rows "$ROWS" -workers "$WORKERS" \
	-partitions "$PARTITIONS" -latency "$LATENCY" -runs "$RUNS" -paths "$PATHS" -deploy "${DEPLOY:-deploy/collector}" ${prof[@]+"${prof[@]}"}
if [[ -n ${PROFILE:-} ]]; then
	for f in "$PROFILE"/*-1.prof; do
		[[ -e $f ]] || continue
		name=$(basename "$f" -1.prof)
		echo
		echo "## CPU profile of $name, every round ($PROFILE/$name-*.prof)"
		"$go" tool pprof -top -nodecount=25 "$tmp/otelcol-dsh-bench" "$PROFILE/$name"-*.prof 2>/dev/null
	done
fi
