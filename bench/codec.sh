#!/usr/bin/env bash
# codec.sh — throughput of sessionlog's Decoder + Validator against the parse
# floor (the fastest general-purpose Go JSON parser on the same rows) and the
# encoding/json map[string]any baseline, all in one test binary (the nested
# module bench/codec, which keeps the floor parsers out of the dshtrace
# module), so that every benchmark sees the same machine state.
#
# Usage: bench/codec.sh [COUNT]
#   COUNT      samples of each benchmark per round (default 5; also $COUNT)
#   ROUNDS     rounds (default 1). Every sample is one run of the test binary
#              that runs each benchmark once, in turn, so a drift in load
#              spreads over all of them: COUNT × ROUNDS runs in all.
#   BENCHTIME  -benchtime of each sample (default 1s)
#   CPUS       -cpu (GOMAXPROCS) of the runs, e.g. 1 (default: unset, all)
#   DSH_CORPUS the corpus directory (default ../shared/dsh-corpus beside the
#              repository). Without one, a corpus is generated with bench/gen
#              (the script says so).
#   GO         the go command (default go)
#   INSTR      1: also count the instructions of one pass of decode+validate
#              and of fastjson under valgrind (callgrind; the difference of a
#              5-pass and a 25-pass run, so start-up cancels out) and print
#              their ratio — a figure the machine's load cannot move, unlike
#              the timings (about a minute more; needs valgrind)
#
# The benchmarks (bench/codec/codec_test.go), each one pass over every row
# of the corpus per op:
#   DecodeValidate  sessionlog Decoder + Validator (strict JSON, UTF-8,
#                   lossless numbers, typed decoding, packed rows expanded,
#                   the validator)
#   FloorFastjson   github.com/valyala/fastjson, each row parsed (parse only)
#   FloorSimdjson   github.com/minio/simdjson-go ParseND over each file's rows
#                   joined (skipped where the CPU lacks AVX2/CLMUL)
#   AllocFloor      no parsing: only the allocations a pass would hand a
#                   caller that keeps every row (row bytes, Rows, Events,
#                   Details, Chunks) — what DecodeValidate, which reads with
#                   ReuseRows as the receiver's file transport does, saves
#   BaselineMapAny  encoding/json, each row into a map[string]any
#
# It prints the runs' output, then a table of medians (min–max over the
# samples) and, last, `throughput ratio decode+validate/parse-floor: X.XX`:
# the median MB/s of decode+validate over that of the fastest floor parser
# of this run. Plain awk, no network.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

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
if [[ -n "${CPUS:-}" && ! "$CPUS" =~ ^[1-9][0-9]*$ ]]; then
	echo "codec.sh: CPUS must be a positive integer, got '$CPUS'" >&2
	exit 2
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
out="$tmp/out"

corpus="${DSH_CORPUS:-$(dirname "$root")/shared/dsh-corpus}"
if [[ -n "${DSH_CORPUS:-}" && ! -d "$DSH_CORPUS" ]]; then
	echo "codec.sh: DSH_CORPUS=$DSH_CORPUS is not a directory" >&2
	exit 2
fi
# The benchmarks run in bench/codec: a relative path is made absolute here.
[[ -d "$corpus" ]] && corpus="$(cd "$corpus" && pwd)"
if [[ ! -d "$corpus" ]]; then
	# No real corpus: a generated one (mixed v0/v4, packed chunk rows), about
	# the size of the real corpus. The figures then describe these files.
	echo "codec.sh: no corpus at $corpus; generating one with bench/gen into $tmp/corpus (set DSH_CORPUS to use the real one)" >&2
	corpus="$tmp/corpus"
	"$go" run ./bench/gen -out "$corpus" -sessions 20 -turns 6 -steps 3 -tools 2 -chunks 20 -format mix >/dev/null
fi
echo "# corpus: $corpus"

bin="$tmp/codec.test"
(cd bench/codec && "$go" test -c -o "$bin" .)
args=(-test.run '^$' -test.bench '^Benchmark(DecodeValidate|FloorFastjson|FloorSimdjson|AllocFloor|BaselineMapAny)$'
	-test.benchmem -test.count 1 -test.benchtime "$benchtime")
if [[ -n "${CPUS:-}" ]]; then
	args+=(-test.cpu "$CPUS")
fi
total=$((count * rounds))
for ((i = 1; i <= total; i++)); do
	echo "# run $i/$total (round $(((i - 1) / count + 1))/$rounds): (cd bench/codec && go test -c) && codec.test ${args[*]}"
	(cd bench/codec && DSH_CORPUS="$corpus" "$bin" "${args[@]}") | tee -a "$out"
done
echo

if [[ "${INSTR:-}" == 1 ]]; then
	if ! command -v valgrind >/dev/null; then
		echo "codec.sh: INSTR=1 needs valgrind" >&2
		exit 2
	fi
	# instr BENCH N: the instructions of a run of N passes of BENCH (one CPU,
	# no asynchronous preemption: callgrind and Go's preemption signals
	# do not mix).
	instr() {
		(cd bench/codec && DSH_CORPUS="$corpus" GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
			--callgrind-out-file=/dev/null "$bin" -test.run '^$' -test.bench "^Benchmark$1\$" \
			-test.benchtime "${2}x" -test.cpu 1 2>&1 >/dev/null) | awk '/ refs:/ { gsub(",", "", $NF); print $NF }'
	}
	declare -A perpass
	for b in DecodeValidate FloorFastjson; do
		i5=$(instr "$b" 5)
		i25=$(instr "$b" 25)
		perpass[$b]=$(((i25 - i5) / 20))
		echo "# instructions per pass of $b (callgrind, (25 passes - 5 passes) / 20): ${perpass[$b]}"
	done
	awk -v d="${perpass[DecodeValidate]}" -v f="${perpass[FloorFastjson]}" \
		'BEGIN { printf "# instruction ratio parse-floor/decode+validate (fastjson/sessionlog, per pass): %.2f\n\n", f / d }'
fi

awk '
# Sorts a[1..n] in place (insertion sort: n is the sample count).
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
/^Benchmark(DecodeValidate|FloorFastjson|FloorSimdjson|AllocFloor|BaselineMapAny)(-[0-9]+)?[ \t]/ {
	name = $1
	sub(/-[0-9]+$/, "", name)
	sub(/^Benchmark/, "", name)
	k = ++runs[name]
	for (i = 3; i < NF; i += 2) val[name, $(i + 1), k] = $i
}
END {
	if (!runs["DecodeValidate"] || !runs["FloorFastjson"] || !runs["BaselineMapAny"]) {
		print "codec.sh: benchmark results missing from the output" > "/dev/stderr"
		exit 1
	}
	n = split("DecodeValidate FloorFastjson FloorSimdjson AllocFloor BaselineMapAny", names, " ")
	label["DecodeValidate"] = "decode+validate (sessionlog)"
	label["FloorFastjson"] = "floor: fastjson (parse only)"
	label["FloorSimdjson"] = "floor: simdjson-go ParseND"
	label["AllocFloor"] = "allocations of kept rows (no parsing)"
	label["BaselineMapAny"] = "baseline: encoding/json map[string]any"
	printf "%-40s %5s %13s %13s %23s %27s %12s %12s %12s\n", "benchmark (median of samples)", "runs", "ns/op", "cpu-ns/op", "MB/s (min-max)", "events/s (min-max)", "allocs/event", "allocs/op", "B/op"
	for (j = 1; j <= n; j++) {
		nm = names[j]
		if (!runs[nm]) {
			printf "%-40s %5d (not run: skipped, see above)\n", label[nm], 0
			continue
		}
		ns[nm] = median(nm, "ns/op")
		mbs[nm] = median(nm, "MB/s"); mlo = lo[nm, "MB/s"]; mhi = hi[nm, "MB/s"]
		evs[nm] = median(nm, "events/s"); elo = lo[nm, "events/s"]; ehi = hi[nm, "events/s"]
		ape[nm] = median(nm, "allocs/event")
		apo = median(nm, "allocs/op"); bpo = median(nm, "B/op")
		cpu[nm] = median(nm, "cpu-ns/op")
		printf "%-40s %5d %13.0f %13.0f %9.2f (%6.2f-%6.2f) %11.0f (%7.0f-%7.0f) %12.2f %12.0f %12.0f\n", label[nm], runs[nm], ns[nm], cpu[nm], mbs[nm], mlo, mhi, evs[nm], elo, ehi, ape[nm], apo, bpo
	}
	floor = "FloorFastjson"
	if (runs["FloorSimdjson"] && mbs["FloorSimdjson"] > mbs[floor]) floor = "FloorSimdjson"
	printf "\nevents per op: %d (the same rows for all; only decode+validate validates and expands packed rows)\n", median("DecodeValidate", "events/op")
	printf "parse floor: %s, %.2f MB/s (the fastest floor parser of this run, by median MB/s)\n", label[floor], mbs[floor]
	printf "throughput ratio decode+validate/baseline: %.2f\n", mbs["DecodeValidate"] / mbs["BaselineMapAny"]
	if (cpu["DecodeValidate"] > 0 && cpu[floor] > 0)
		printf "CPU-time ratio parse-floor/decode+validate (cpu-ns/op, less disturbed by a busy machine): %.2f\n", cpu[floor] / cpu["DecodeValidate"]
	if (runs["AllocFloor"]) {
		printf "CPU time the allocations of kept rows alone would add (ReuseRows off), of decode+validate: %.2f\n", cpu["AllocFloor"] / cpu["DecodeValidate"]
	}
	ratio = mbs["DecodeValidate"] / mbs[floor]
	printf "goal (>= 0.50 of the parse floor): %s\n", (ratio >= 0.5 ? "met" : "NOT met")
	printf "throughput ratio decode+validate/parse-floor: %.2f\n", ratio
}' "$out"
