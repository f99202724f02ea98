#!/usr/bin/env bash
# floor.sh — the contract floor against the real pipeline, in CPU time per
# event, on the make bench-quick corpus (192 sessions × 40 turns), both in
# one test binary (bench/codec, which keeps fastjson out of the dshtrace
# module), interleaved so that the machine's load spreads over both.
#
#   ContractFloor  the least work any implementation of the pipeline's
#                  contract does with the collector's pdata: every row
#                  parsed twice by github.com/valyala/fastjson (where it is
#                  read, and where the connector reads its record back),
#                  every row's log record built with the attributes, ids
#                  and body the receiver gives it, every span and data point
#                  the connector emits built as a copy of the real ones
#                  (bench/codec/floor_test.go). Nothing else: no validation,
#                  typed decoding, packed-row expansion, file tailing, turn
#                  state or working out what the spans say.
#   FilePipeline   the real pipeline in one process (bench/pipeline.Run:
#                  session_event → turn_state ×2 → counted)
#
# Each sample is one run of the binary with both benchmarks at -benchtime
# 2x; the floor is also run once with GOGC=off (no garbage collection: the
# floor's reference copy of every output stays live, and with the collector
# on, each cycle marks it too, so the figure with GC is high by up to that).
#
# Usage: bench/floor.sh [COUNT]   (COUNT samples, default 3; also $COUNT)
#   SESSIONS TURNS  corpus size (default 192 40, bench-quick's)
#   BENCH_CACHE     corpus cache (bench/corpus.sh)
#   GO              the go command
# Prints the runs, then the medians and, last,
#   `contract floor X.XX CPU µs per event; pipeline Y.YY; ...`
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
count="${1:-${COUNT:-3}}"
if ! [[ "$count" =~ ^[1-9][0-9]*$ ]]; then
	echo "floor.sh: COUNT must be a positive integer, got '$count'" >&2
	exit 2
fi
: "${SESSIONS:=192}" "${TURNS:=40}"
go=${GO:-go}
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$go" build -o "$tmp/gen" ./bench/gen
corpus=$(bench/corpus.sh "$tmp/gen" -sessions "$SESSIONS" -turns "$TURNS" -steps 3 -tools 2 -chunks 20 -format mix -seed 1)
bin=$tmp/codec.test
(cd bench/codec && "$go" test -c -o "$bin" .)
echo "# $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg), $("$go" version | cut -d' ' -f3)"
echo "# corpus $corpus"
run() {
	(cd bench/codec && BENCH_CORPUS=$corpus "$@" "$bin" -test.run '^$' -test.benchtime 2x -test.benchmem \
		-test.bench "$bench")
}
for ((i = 1; i <= count; i++)); do
	echo "# sample $i/$count: codec.test -test.bench '^Benchmark(ContractFloor|FilePipeline)\$' -test.benchtime 2x"
	bench='^Benchmark(ContractFloor|FilePipeline)$' run env | tee -a "$tmp/out"
done
echo "# GOGC=off: codec.test -test.bench '^BenchmarkContractFloor\$' -test.benchtime 2x"
bench='^BenchmarkContractFloor$' run env GOGC=off | sed 's/^BenchmarkContractFloor/BenchmarkContractFloorNoGC/' | tee -a "$tmp/out"
echo
awk '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	for (i = 2; i <= NF; i++) if ($i == "cpu-µs/event") v[name] = v[name] " " $(i - 1)
}
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
	if (!("ContractFloor" in v) || !("FilePipeline" in v)) { print "floor.sh: a benchmark did not report" > "/dev/stderr"; exit 1 }
	f = median(v["ContractFloor"]); p = median(v["FilePipeline"])
	printf "%-22s %s\n", "benchmark", "CPU µs per event (median; samples)"
	printf "%-22s %.2f (%s)\n", "ContractFloor", f, v["ContractFloor"]
	if ("ContractFloorNoGC" in v) printf "%-22s %.2f (%s)\n", "ContractFloor GOGC=off", median(v["ContractFloorNoGC"]), v["ContractFloorNoGC"]
	printf "%-22s %.2f (%s)\n", "FilePipeline", p, v["FilePipeline"]
	printf "contract floor %.2f CPU µs per event; pipeline %.2f (%.2f× the floor); the CPU goal of 2.5 leaves %.2f µs per event above the floor for everything else, the pipeline spends %.2f\n", f, p, p / f, 2.5 - f, p - f
}' "$tmp/out"
