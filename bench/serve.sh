#!/usr/bin/env bash
# serve.sh — the peak memory of `dshtrace serve` with many clients at once.
#
# Usage: bench/serve.sh [DIR]
#   DIR        where the generated sessions go (default: a temporary folder,
#              removed at the end)
#   TURNS      turns of each session (default 5000; 10,000 is 126 MB)
#   SESSIONS   sessions in the root (default 4)
#   CLIENTS    the numbers of clients at once to run (default "1 4 16")
#   BUDGET     --max-page-memory in MiB (default: serve's own, 512)
#   GO         the go command (default go)
#
# Sessions (bench/gen): v4, TURNS turns of 3 steps, 2 tool calls a step,
# streams embedded. For each number of clients a fresh `dshtrace serve`
# starts; the clients then ask at once for session pages — all the same
# page, then each a session of its own (client i asks for session
# i mod SESSIONS) — retrying after a moment when serve answers 503 (its
# page memory taken). Columns: the clients and the distinct pages they
# ask for; the seconds until every client has its page; the answers 503;
# serve's resident memory before the requests and its peak (VmHWM) after;
# the peak above the idle server per distinct page asked for at once
# (at most as many as the budget holds).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
go="${GO:-go}"
turns="${TURNS:-5000}"
sessions="${SESSIONS:-4}"
clients="${CLIENTS:-1 4 16}"
budget="${BUDGET:-}"
for n in "$turns" "$sessions" $clients ${budget:+"$budget"}; do
	[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "serve.sh: TURNS, SESSIONS, CLIENTS and BUDGET must be positive integers, got '$n'" >&2; exit 2; }
done
command -v curl >/dev/null || { echo "serve.sh: needs curl" >&2; exit 2; }

out="${1:-}"
if [[ -z "$out" ]]; then
	out=$(mktemp -d "${TMPDIR:-/tmp}/dshtrace-serve-bench.XXXXXX")
	trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"

echo "== building dshtrace and bench/gen" >&2
"$go" build -o "$out/dshtrace" ./cmd/dshtrace
"$go" build -o "$out/gen" ./bench/gen
root="$out/root-$turns-$sessions"
if [[ ! -d "$root" ]]; then
	echo "== generating $sessions sessions of $turns turns" >&2
	"$out/gen" -out "$root" -force -sessions "$sessions" -turns "$turns" -steps 3 -tools 2 -chunks 20 -format v4 >/dev/null
fi
mapfile -t ids < <(find "$root" -name 'session*.jsonl' -printf '%h\n' | xargs -n1 basename | sort)
mb=$(du -sm "$root" | cut -f1)

# kib FIELD PID: a field of /proc/PID/status, in KiB.
kib() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$2/status"; }

# client URL: fetch URL until serve answers other than 503; prints the 503s.
client() {
	local busy=0 code
	while :; do
		code=$(curl -s -o /dev/null -w '%{http_code}' "$1")
		[[ $code == 503 ]] || break
		busy=$((busy + 1))
		sleep 0.5
	done
	[[ $code == 200 ]] || echo "serve.sh: $1: HTTP $code" >&2
	echo "$busy"
}

printf '%-8s %-6s %7s %6s %9s %9s %14s\n' clients pages "wall s" busy "idle MiB" "peak MiB" "MiB per page"
for c in $clients; do
	for mode in same own; do
		"$out/dshtrace" serve --addr 127.0.0.1:0 ${budget:+--max-page-memory "$budget"} "$root" >"$out/serve.out" 2>"$out/serve.err" &
		pid=$!
		until grep -q http "$out/serve.out" 2>/dev/null; do sleep 0.1; done
		url=$(grep -o 'http://[^/ ]*/' "$out/serve.out" | head -1)
		idle=$(kib VmRSS "$pid")
		pages=1
		[[ $mode == own ]] && pages=$((c < sessions ? c : sessions))
		start=$(date +%s.%N)
		for i in $(seq 0 $((c - 1))); do
			id=${ids[0]}
			[[ $mode == own ]] && id=${ids[$((i % sessions))]}
			client "${url}s/$id" >"$out/client.$i" &
		done
		wait $(jobs -p | grep -v "^$pid$") 2>/dev/null || true
		wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
		peak=$(kib VmHWM "$pid")
		busy=$(cat "$out"/client.* | awk '{s += $1} END {print s + 0}')
		rm -f "$out"/client.*
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		printf '%-8s %-6s %7s %6s %9d %9d %14d\n' "$c" "$pages" "$wall" "$busy" $((idle / 1024)) $((peak / 1024)) $(((peak - idle) / 1024 / pages))
	done
done
echo "($sessions sessions of $turns turns, $mb MB; --max-page-memory ${budget:-512} MiB; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
