#!/usr/bin/env bash
# corpus.sh GEN [bench/gen flags] — write a corpus with the bench/gen binary
# GEN into the corpus cache, unless one with the same flags and generator
# source is there, and print its directory.
#
# BENCH_CACHE  cache root (default ${XDG_CACHE_HOME:-~/.cache}/dshtrace-bench)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
gen=$1
shift
cache=${BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dshtrace-bench}
key=$({ echo "$*"; ls bench/gen/*.go | grep -v _test.go | xargs cat; } | sha256sum | cut -c1-12)
dir=$cache/corpus-$key
if [[ ! -f $dir/manifest.json ]]; then
	mkdir -p "$cache"
	echo "bench/corpus: writing $dir ($*)" >&2
	"$gen" -out "$dir.tmp" -force "$@" >/dev/null
	rm -rf "$dir"
	mv "$dir.tmp" "$dir"
fi
echo "$dir"
