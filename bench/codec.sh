#!/usr/bin/env bash
# codec.sh — throughput of sessionlog's Decoder + Validator against the
# encoding/json map[string]any baseline, over the same corpus rows, measured
# in one `go test` run so both see the same machine state.
#
# Usage: bench/codec.sh [COUNT]
#   COUNT      runs of each benchmark (default 5; also $COUNT)
#   BENCHTIME  go test -benchtime (default 1s)
#   ROUNDS     go test invocations, pooled (default 1). go test runs all
#              COUNT runs of one benchmark before the other, so on a busy
#              machine a drift in load lands on one side; more rounds
#              interleave the two.
#   DSH_CORPUS the corpus directory (default ../shared/dsh-corpus)
#   GO         the go command (default go)
#
# It prints go test's own output, then a table of medians (min–max over the
# runs) and, last, `throughput ratio decode+validate/baseline: X.XX`: the
# ratio of the median MB/s (wall clock). The CPU-time ratio printed before it
# uses the benchmarks' cpu-ns/op (getrusage), which CPU contention from other
# processes disturbs less. Plain awk, no network.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

count="${1:-${COUNT:-5}}"
rounds="${ROUNDS:-1}"
benchtime="${BENCHTIME:-1s}"
go="${GO:-go}"
for n in "$count" "$rounds"; do
	if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
		echo "codec.sh: COUNT and ROUNDS must be positive integers, got '$n'" >&2
		exit 2
	fi
done

out="$(mktemp)"
trap 'rm -f "$out"' EXIT

cmd=("$go" test -run '^$' -bench '^(BenchmarkDecodeValidate|BenchmarkBaselineMapAny)$'
	-benchmem -count "$count" -benchtime "$benchtime" ./sessionlog)
for ((round = 1; round <= rounds; round++)); do
	echo "# round $round/$rounds: ${cmd[*]}"
	"${cmd[@]}" | tee -a "$out"
done
echo

awk '
# Sorts a[1..n] in place (insertion sort: n is the run count).
function sort(a, n,    i, j, x) {
	for (i = 2; i <= n; i++) {
		x = a[i]
		for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]
		a[j + 1] = x
	}
}
function median(name, unit,    n, i, a) {
	n = runs[name]
	for (i = 1; i <= n; i++) a[i] = val[name, unit, i]
	sort(a, n)
	lo[name, unit] = a[1]; hi[name, unit] = a[n]
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
/^Benchmark(DecodeValidate|BaselineMapAny)(-[0-9]+)?[ \t]/ {
	name = $1
	sub(/-[0-9]+$/, "", name)
	sub(/^Benchmark/, "", name)
	k = ++runs[name]
	for (i = 3; i < NF; i += 2) val[name, $(i + 1), k] = $i
}
END {
	if (!runs["DecodeValidate"] || !runs["BaselineMapAny"]) {
		print "codec.sh: benchmark results missing from the go test output" > "/dev/stderr"
		exit 1
	}
	split("DecodeValidate BaselineMapAny", names, " ")
	label["DecodeValidate"] = "decode+validate (sessionlog)"
	label["BaselineMapAny"] = "baseline (encoding/json map[string]any)"
	printf "%-40s %5s %13s %13s %21s %25s %12s %12s %12s\n", "benchmark (median of runs)", "runs", "ns/op", "cpu-ns/op", "MB/s (min-max)", "events/s (min-max)", "allocs/event", "allocs/op", "B/op"
	for (j = 1; j <= 2; j++) {
		nm = names[j]
		ns[nm] = median(nm, "ns/op")
		mbs[nm] = median(nm, "MB/s"); mlo = lo[nm, "MB/s"]; mhi = hi[nm, "MB/s"]
		evs[nm] = median(nm, "events/s"); elo = lo[nm, "events/s"]; ehi = hi[nm, "events/s"]
		ape[nm] = median(nm, "allocs/event")
		apo = median(nm, "allocs/op"); bpo = median(nm, "B/op")
		cpu[nm] = median(nm, "cpu-ns/op")
		printf "%-40s %5d %13.0f %13.0f %8.2f (%5.2f-%5.2f) %10.0f (%6.0f-%6.0f) %12.2f %12.0f %12.0f\n", label[nm], runs[nm], ns[nm], cpu[nm], mbs[nm], mlo, mhi, evs[nm], elo, ehi, ape[nm], apo, bpo
	}
	events = median("DecodeValidate", "events/op")
	printf "\nevents per op: %d (the same logical events for both; the baseline neither validates nor expands packed rows)\n", events
	printf "allocations per event, decode+validate/baseline: %.2f\n", ape["DecodeValidate"] / ape["BaselineMapAny"]
	printf "events/s ratio decode+validate/baseline: %.2f\n", evs["DecodeValidate"] / evs["BaselineMapAny"]
	if (cpu["DecodeValidate"] > 0 && cpu["BaselineMapAny"] > 0)
		printf "CPU-time ratio baseline/decode+validate (cpu-ns/op, less disturbed by a busy machine): %.2f\n", cpu["BaselineMapAny"] / cpu["DecodeValidate"]
	ratio = mbs["DecodeValidate"] / mbs["BaselineMapAny"]
	printf "goal (>= 3.00x the baseline): %s\n", (ratio >= 3 ? "met" : "NOT met")
	printf "throughput ratio decode+validate/baseline: %.2f\n", ratio
}' "$out"
