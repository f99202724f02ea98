#!/usr/bin/env bash
# bench/build.sh [dsh|filelog]... — build the two benchmark distributions with
# ocb, once, and print where they are.
#
#   dsh      otelcol-dsh-bench:     the otelcol-dsh component set
#            (builder-config.yaml) + the count exporter, bench/dist/otelcol-dsh-bench.yaml
#   filelog  otelcol-filelog-bench: core collector + contrib filelog receiver
#            + batch + the count exporter, bench/dist/otelcol-filelog-bench.yaml
#
# ocb (v0.165.0, cached by tools/build.sh) generates each into
# bin/bench/<name>/ (gitignored); the binary is compiled there with the flags
# of `make otelcol-dsh` (CGO_ENABLED=0 GOTOOLCHAIN=local -trimpath -s -w).
# A build is keyed by a hash of its builder config, the root go.mod/go.sum,
# the Go sources it takes from this module and the Go version; with the key
# unchanged nothing is rebuilt. A cold first build downloads and compiles the
# whole collector (minutes on 2 cores); after a source change only the
# changed packages compile again.
#
# Output: shell assignments for eval, DSH_BENCH=… FILELOG_BENCH=…; progress
# on stderr. Fails when bench/dist/otelcol-dsh-bench.yaml no longer lists
# exactly the components of builder-config.yaml plus the count exporter.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
GO=${GO:-go}
log() { echo "bench/build: $*" >&2; }

# The dsh bench distribution must stay otelcol-dsh's component set: the same
# gomod/import lines, once the count exporter's entry is taken out.
components() {
	grep -E '^[[:space:]]*(- )?(gomod|import):' "$1" | sed -E 's/^[[:space:]]*(- )?//' |
		awk '/^import: .*bench\/countexporter$/ { held = ""; next }
		     { if (held != "") print held; held = $0 } END { if (held != "") print held }'
}
if ! diff <(components builder-config.yaml) <(components bench/dist/otelcol-dsh-bench.yaml) >&2; then
	log "bench/dist/otelcol-dsh-bench.yaml lists other components than builder-config.yaml (diff above)"
	exit 1
fi

# Go sources of this module that a distribution compiles (tests excluded):
# dsh, the module's component code plus the count exporter; filelog, the
# count exporter only.
# (A pathspec exclusion is not used for the count exporter's folder: git
# 2.39 ignores ':!:*_test.go' beside a folder pattern, or lists nothing.)
count_sources() { git ls-files -co --exclude-standard -- 'bench/countexporter/*.go' | grep -v '_test\.go$'; }
module_sources() {
	if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then # an exported tree
		case $1 in
		dsh) find . -name '*.go' ! -name '*_test.go' ! -path './bin/*' ! -path './cmd/*' ! -path './bench/*' ! -path './e2e/*' ! -path './tools/*'
			find bench/countexporter -name '*.go' ! -name '*_test.go' ;;
		filelog) find bench/countexporter -name '*.go' ! -name '*_test.go' ;;
		esac
		return
	fi
	case $1 in
	dsh)
		git ls-files -co --exclude-standard -- '*.go' ':!:*_test.go' ':!:cmd/' ':!:bench/' ':!:e2e/' ':!:tools/'
		count_sources
		;;
	filelog) count_sources ;;
	esac
}

build() {
	local which=$1 name cfg dir key bin
	name=otelcol-$which-bench
	cfg=bench/dist/$name.yaml
	dir=bin/bench/$name
	bin=$dir/$name
	key=$({ "$GO" version; cat "$cfg" go.mod go.sum; module_sources "$which" | sort | xargs cat; } | sha256sum | cut -c1-16)
	if [[ -x $bin && -f $dir/.build-key && $(cat "$dir/.build-key") == "$key" ]]; then
		log "$name: up to date ($key)"
		return
	fi
	local start
	start=$(date +%s)
	eval "$(tools/build.sh ocb)"
	log "$name: generating with ocb into $dir"
	mkdir -p "$dir"
	rm -f "$dir/.build-key"
	"$OCB" --config "$cfg" --skip-compilation >&2
	log "$name: compiling"
	(cd "$dir" && "$GO" build -trimpath -ldflags="-s -w" -o "$name" .) >&2
	echo "$key" >"$dir/.build-key"
	log "$name: built in $(($(date +%s) - start))s"
}

want=("$@")
((${#want[@]})) || want=(dsh filelog)
for w in "${want[@]}"; do
	case $w in
	dsh | filelog) build "$w" ;;
	*) log "unknown distribution $w (want dsh or filelog)"; exit 2 ;;
	esac
done
for w in "${want[@]}"; do
	v=${w^^}_BENCH
	printf '%s=%q\n' "$v" "$PWD/bin/bench/otelcol-$w-bench/otelcol-$w-bench"
done
