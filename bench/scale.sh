#!/usr/bin/env bash
# scale.sh — the memory of otelcol-dsh-bench (tailing files, session_event →
# turn_state → count) as the input grows:
#
#   session length  one v4 session of 10k, 100k and 1M events, every turn
#                   closed: peak RSS should stay flat
#   open turns      1k, 10k and 100k sessions in one file of stream-json
#                   lines, each left in an open turn (a step whose two tool
#                   calls are in flight): peak RSS grows linearly; the script
#                   prints the bytes per additional open turn
#
# Corpora come from bench/gen through bench/corpus.sh (cached); the
# distribution from bench/build.sh (cached) unless DSH_BENCH names one.
# LENGTHS and OPEN override the sizes (space-separated); GO the go command.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
go=${GO:-go}
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
: "${LENGTHS:=10000 100000 1000000}" "${OPEN:=1000 10000 100000}"

if [[ -z ${DSH_BENCH:-} ]]; then
	dists=$(bench/build.sh dsh)
	eval "$dists"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$go" build -o "$tmp/gen" ./bench/gen
"$go" build -o "$tmp/harness" ./bench/harness
# Run from a fresh copy, as bench/vsfilelog.sh does (why: there).
cp "$DSH_BENCH" "$tmp/otelcol-dsh-bench"
DSH_BENCH=$tmp/otelcol-dsh-bench
echo "# $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $("$go" version | cut -d' ' -f3)"

# A v4 session of T turns of 3 steps (two tool calls in each of the first
# two) has 3 + 22·T events.
lengths=()
for n in $LENGTHS; do
	lengths+=("$(bench/corpus.sh "$tmp/gen" -sessions 1 -turns $(((n - 3 + 21) / 22)) -steps 3 -tools 2 -chunks 20 -format v4 -seed 1)")
done
echo "## peak RSS over one session's length"
"$tmp/harness" scale -dsh "$DSH_BENCH" "${lengths[@]}"

open=()
for n in $OPEN; do
	open+=("$(bench/corpus.sh "$tmp/gen" -sessions "$n" -turns 1 -steps 3 -tools 2 -chunks 20 -format v4 -wrapped -open-last -seed 1)")
done
echo "## peak RSS over open turns"
"$tmp/harness" scale -dsh "$DSH_BENCH" "${open[@]}"
