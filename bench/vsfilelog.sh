#!/usr/bin/env bash
# vsfilelog.sh [quick|full] — dshtrace against what a collector user would run
# instead, on the same files, in one run:
#
#   (a) otelcol-dsh-bench tailing the corpus: session_event → turn_state
#       (traces + metrics) → count, the log records → count as well
#   (b) otelcol-filelog-bench: filelog + json_parser → count
#   (c) the I/O floor: reading the files
#
# It builds both distributions (bench/build.sh, cached), writes the corpus
# with bench/gen (cached by its parameters and the generator's source), and
# runs bench/harness compare, which prints each run, a table of medians, the
# ratios and, last, `throughput ratio dshtrace/filelog: X.XX`. Both logs
# pipelines are receiver → exporters with no processor; `full` first runs
# the same comparison with a batch processor (defaults) in both.
#
# Sizes (override any with the environment):
#   quick  SESSIONS=192 TURNS=40 → ~780k events, ~100 MiB, RUNS=3
#   full   SESSIONS=384 TURNS=40 → ~1.6M events, ~200 MiB, RUNS=5
#   STEPS=3 TOOLS=2 CHUNKS=20 FORMAT=mix SEED=1 (bench/gen's flags)
#   BENCH_CACHE   where corpora are kept (default ${XDG_CACHE_HOME:-~/.cache}/dshtrace-bench)
#   DSH_BENCH, FILELOG_BENCH  prebuilt distributions to use instead of building
#   PROFILE       a directory: each otelcol-dsh-bench run saves a CPU profile of
#                 itself there (the pprof extension's save_to_file), and the
#                 script ends with the top of them all (go tool pprof -top)
#   GO            the go command
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
size=${1:-quick}
case $size in
quick) : "${SESSIONS:=192}" "${TURNS:=40}" ;;
full) : "${SESSIONS:=384}" "${TURNS:=40}" ;;
*) echo "usage: bench/vsfilelog.sh [quick|full]" >&2; exit 2 ;;
esac
: "${STEPS:=3}" "${TOOLS:=2}" "${CHUNKS:=20}" "${FORMAT:=mix}" "${SEED:=1}"
[[ $size == full ]] && : "${RUNS:=5}"
: "${RUNS:=3}"
go=${GO:-go}
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0

if [[ -z ${DSH_BENCH:-} || -z ${FILELOG_BENCH:-} ]]; then
	dists=$(bench/build.sh dsh filelog)
	eval "$dists"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$go" build -o "$tmp/gen" ./bench/gen
"$go" build -o "$tmp/harness" ./bench/harness
# Each distribution runs from a fresh copy (written with write(2)): a binary
# the linker has just written maps more of its text into the process (its
# page-cache pages are laid out otherwise: otelcol-dsh-bench measured 44.6
# MB RssFile right after a build, 37.9 MB from a copy of the same bytes),
# so without the copy peak RSS would depend on which binary was built last.
cp "$DSH_BENCH" "$tmp/otelcol-dsh-bench"
cp "$FILELOG_BENCH" "$tmp/otelcol-filelog-bench"
DSH_BENCH=$tmp/otelcol-dsh-bench FILELOG_BENCH=$tmp/otelcol-filelog-bench

corpus=$(bench/corpus.sh "$tmp/gen" -sessions "$SESSIONS" -turns "$TURNS" -steps "$STEPS" \
	-tools "$TOOLS" -chunks "$CHUNKS" -format "$FORMAT" -seed "$SEED")
echo "# $size: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg), $("$go" version | cut -d' ' -f3)"
if [[ $size == full ]]; then
	# The same comparison with a batch processor (defaults) in both logs
	# pipelines; the shape measured last, and reported on the final line,
	# has none (what deploy/collector recommends before turn_state).
	echo "## with a batch processor in both logs pipelines"
	"$tmp/harness" compare -dsh "$DSH_BENCH" -filelog "$FILELOG_BENCH" -corpus "$corpus" -runs "$RUNS" -batch -label "with batch"
	echo
	echo "## receiver → exporters, no processor (the final line)"
fi
prof=()
if [[ -n ${PROFILE:-} ]]; then
	mkdir -p "$PROFILE"
	rm -f "$PROFILE"/otelcol-dsh-bench-*.prof
	prof=(-profile "$PROFILE")
fi
"$tmp/harness" compare -dsh "$DSH_BENCH" -filelog "$FILELOG_BENCH" -corpus "$corpus" -runs "$RUNS" ${prof[@]+"${prof[@]}"}
if [[ -n ${PROFILE:-} ]]; then
	echo
	echo "## CPU profile of the otelcol-dsh-bench runs ($PROFILE/*.prof)"
	"$go" tool pprof -top -nodecount=30 "$DSH_BENCH" "$PROFILE"/otelcol-dsh-bench-*.prof 2>/dev/null
fi
