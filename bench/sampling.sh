#!/usr/bin/env bash
# sampling.sh — what turn_state's sampling costs and saves, in one run:
# otelcol-dsh-bench tailing the bench-quick corpus (session_event →
# turn_state → traces + metrics, the log records too, → count) with
# turn_state::sampling::session_ratio 1 (everything kept) and RATIO,
# alternating which goes first each round.
#
# It builds the dsh distribution (bench/build.sh, cached), writes or reuses
# the corpus of `bench/vsfilelog.sh quick` (bench/corpus.sh, cached by its
# parameters), and runs bench/harness sampling. The harness first replays
# the corpus through the turn engine to know exactly which turns the
# sampler keeps and how many spans they make; a run at RATIO ends when the
# collector has exported exactly those, and fails if it exports more. It
# prints each run, a table of medians and, last, the lines
# `spans exported ratio R / 1`, `CPU per event ratio R / 1` and
# `peak RSS ratio R / 1`.
#
# Environment (override any):
#   RATIO=0.1  RUNS=3
#   SESSIONS=192 TURNS=40 STEPS=3 TOOLS=2 CHUNKS=20 FORMAT=mix SEED=1 (bench/gen's flags)
#   BENCH_CACHE   where corpora are kept (default ${XDG_CACHE_HOME:-~/.cache}/dshtrace-bench)
#   DSH_BENCH     a prebuilt otelcol-dsh-bench to use instead of building
#   GO            the go command
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
: "${SESSIONS:=192}" "${TURNS:=40}" "${STEPS:=3}" "${TOOLS:=2}" "${CHUNKS:=20}" "${FORMAT:=mix}" "${SEED:=1}"
: "${RATIO:=0.1}" "${RUNS:=3}"
go=${GO:-go}
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0

if [[ -z ${DSH_BENCH:-} ]]; then
	dists=$(bench/build.sh dsh)
	eval "$dists"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$go" build -o "$tmp/gen" ./bench/gen
"$go" build -o "$tmp/harness" ./bench/harness
# A fresh copy of the binary, as bench/vsfilelog.sh runs it (a binary the
# linker has just written maps more of its text: peak RSS would depend on
# the build).
cp "$DSH_BENCH" "$tmp/otelcol-dsh-bench"

corpus=$(bench/corpus.sh "$tmp/gen" -sessions "$SESSIONS" -turns "$TURNS" -steps "$STEPS" \
	-tools "$TOOLS" -chunks "$CHUNKS" -format "$FORMAT" -seed "$SEED")
echo "# sampling: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg), $("$go" version | cut -d' ' -f3)"
"$tmp/harness" sampling -dsh "$tmp/otelcol-dsh-bench" -corpus "$corpus" -runs "$RUNS" -ratio "$RATIO"
