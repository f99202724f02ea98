#!/usr/bin/env bash
# replay.sh — how long `dshtrace replay` takes on long sessions, how large
# its pages are, and how long a browser takes to open them.
#
# Usage: bench/replay.sh [DIR]
#   DIR        where the generated sessions and pages go (default: a
#              temporary folder, removed at the end)
#   TURNS      turns of the long sessions (default 10000)
#   RUNS       runs of each replay; the median is printed (default 3)
#   CHROMIUM   a Chromium to time the pages in (default: chromium on PATH;
#              none: the browser column is left empty)
#   GO         the go command (default go)
#
# Sessions (bench/gen, one session each):
#   v4          TURNS turns of 3 steps, 2 tool calls a step, v4 streams
#               embedded (10,000 turns: 126 MB)
#   v0          the same in dsh v0: chunk rows, packed runs
#   wide        TURNS/10 turns whose model calls stream 200 deltas a block:
#               a few long messages per turn instead of many short ones
# Each is replayed with and without content (--no-content). A session of
# more than 300 turns or 8 MiB of rows gets folded turns (cmd/dshtrace/internal/replay):
# the page holds each turn's body compressed, and its script unfolds a turn
# when it is opened or linked to.
#
# Columns: the log's size; wall time, user+system CPU and peak memory of
# `dshtrace replay` (median of RUNS, /usr/bin/time); the page's size; the
# time headless Chromium takes from its start to a screenshot of the page's
# top, less the same for an empty page just before (one run each). On a
# loaded machine the wall times and the browser's move with the load; the
# CPU seconds much less.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
go="${GO:-go}"
turns="${TURNS:-10000}"
runs="${RUNS:-3}"
for n in "$turns" "$runs"; do
	[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "replay.sh: TURNS and RUNS must be positive integers, got '$n'" >&2; exit 2; }
done
[[ -x /usr/bin/time ]] || { echo "replay.sh: needs /usr/bin/time (Debian: apt-get install time)" >&2; exit 2; }

out="${1:-}"
if [[ -z "$out" ]]; then
	out=$(mktemp -d "${TMPDIR:-/tmp}/dshtrace-replay-bench.XXXXXX")
	trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"

chromium="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"

echo "== building dshtrace and bench/gen" >&2
"$go" build -o "$out/dshtrace" ./cmd/dshtrace
"$go" build -o "$out/gen" ./bench/gen

# gen NAME ARGS...: one session; prints its file.
gen() {
	local name=$1
	shift
	"$out/gen" -out "$out/$name" -force -sessions 1 "$@" >/dev/null
	find "$out/$name" -name 'session*.jsonl'
}

# median of the numbers on stdin.
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# browser PAGE: seconds from Chromium's start to a screenshot of PAGE.
browser() {
	local profile
	profile=$(mktemp -d "$out/chromium.XXXXXX")
	/usr/bin/time -f %e -o "$out/browser.time" timeout 600 "$chromium" --headless --no-sandbox --disable-gpu \
		--disable-quic --no-first-run --disable-background-networking --disable-component-update --disable-sync \
		--disable-dev-shm-usage --user-data-dir="$profile" --window-size=1280,900 --hide-scrollbars \
		--screenshot="$out/shot.png" "file://$1" >/dev/null 2>&1 || true
	rm -rf "$profile"
	cat "$out/browser.time" 2>/dev/null | tail -1
}

declare -A logs
echo "== generating sessions of $turns turns" >&2
logs[v4]=$(gen v4 -turns "$turns" -steps 3 -tools 2 -chunks 20 -format v4)
logs[v0]=$(gen v0 -turns "$turns" -steps 3 -tools 2 -chunks 20 -format v0)
logs[wide]=$(gen wide -turns $((turns / 10)) -steps 3 -tools 2 -chunks 200 -format v4)

if [[ -n "$chromium" ]]; then
	echo '<!doctype html><title>empty</title>' >"$out/empty.html"
fi

printf '%-6s %-10s %10s %8s %9s %10s %10s %10s %9s\n' session content turns "log MB" "wall s" "cpu s" "peak MB" "page MB" "browser s"
for name in v4 v0 wide; do
	log=${logs[$name]}
	n=$turns
	[[ $name == wide ]] && n=$((turns / 10))
	for content in with without; do
		flags=()
		[[ $content == without ]] && flags=(--no-content)
		page="$out/$name-$content.html"
		: >"$out/runs"
		for _ in $(seq "$runs"); do
			/usr/bin/time -f '%e %U %S %M' -o "$out/run.time" "$out/dshtrace" replay "${flags[@]}" -o "$page" "$log"
			tail -1 "$out/run.time" >>"$out/runs"
		done
		wall=$(awk '{print $1}' "$out/runs" | median)
		cpu=$(awk '{print $2 + $3}' "$out/runs" | median)
		peak=$(awk '{printf "%.0f\n", $4 / 1024}' "$out/runs" | median)
		seconds=""
		if [[ -n "$chromium" ]]; then
			empty=$(browser "$out/empty.html")
			seconds=$(awk -v a="$(browser "$page")" -v b="$empty" 'BEGIN {d = a - b; printf "%.1f", d < 0 ? 0 : d}')
		fi
		printf '%-6s %-10s %10s %8.1f %9s %10s %10s %10.1f %9s\n' "$name" "$content" "$n" \
			"$(awk -v b="$(stat -c %s "$log")" 'BEGIN {print b / 1e6}')" "$wall" "$cpu" "$peak" \
			"$(awk -v b="$(stat -c %s "$page")" 'BEGIN {print b / 1e6}')" "$seconds"
	done
done
echo "($(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
