#!/usr/bin/env bash
# tools/build.sh [jaeger|prometheus|ocb|kfake]... — build the pinned tools once, reuse them after.
#
# Builds, from the tools modules beside this script,
#   jaeger      Jaeger v2 (module v1.76.0, cmd/jaeger)            -> jaeger
#   prometheus  Prometheus 3.16 (module v0.316.0)                 -> prometheus, promtool
#   ocb         OpenTelemetry Collector Builder v0.165.0          -> builder
#   kfake       franz-go's fake Kafka cluster (tools/kfake)       -> kfake
# into a cache folder outside the work tree, one folder per tool keyed by the
# tool's version and a hash of everything that decides the binary (its go.mod
# and go.sum and sources, the Go version, OS/arch, flags). A folder that exists is complete
# (it is renamed into place only after a successful build), so a second run —
# in CI on a fresh clone too — costs nothing. A cold build of all three takes
# about 11 minutes on 2 cores; afterwards only a changed go.mod/go.sum triggers
# a rebuild of that one tool.
#
# Output: on stdout one shell assignment per binary, ready for eval:
#   JAEGER=/…/jaeger PROMETHEUS=/…/prometheus PROMTOOL=/…/promtool OCB=/…/builder KFAKE=/…/kfake
# Progress goes to stderr.
#
# `tools/build.sh --prune` removes the cache folders of other versions or keys.
#
# Environment:
#   DSH_TOOLS_CACHE  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/dshtrace-tools)
#   STRIP=0          keep symbols and DWARF (default strips: -s -w, ~30% smaller)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
export GOFLAGS="${GOFLAGS:--buildvcs=false}"
export CGO_ENABLED="${CGO_ENABLED:-0}"
GO=${GO:-go}
cache=${DSH_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dshtrace-tools}
ldflags=""
[[ "${STRIP:-1}" == 1 ]] && ldflags="-s -w"

log() { echo "tools: $*" >&2; }

# version_of MODULE_DIR MODULE_PATH: the resolved version of a module in that tools module.
version_of() {
  awk -v m="$2" '$1 == "require" && $2 == m {print $3; exit} $1 == m {print $2; exit}' "$here/$1/go.mod"
}

declare -A module=( [jaeger]=github.com/jaegertracing/jaeger
                    [prometheus]=github.com/prometheus/prometheus
                    [ocb]=go.opentelemetry.io/collector/cmd/builder
                    [kfake]=github.com/twmb/franz-go/pkg/kfake )
declare -A bins=( [jaeger]="jaeger" [prometheus]="prometheus promtool" [ocb]="builder" [kfake]="kfake" )

# dir_of TOOL: the keyed cache folder of a tool.
dir_of() {
  local t=$1 v key
  v=$(version_of "$t" "${module[$t]}")
  [[ -n "$v" ]] || { log "no ${module[$t]} in tools/$t/go.mod"; exit 1; }
  key=$( { "$GO" version; "$GO" env GOOS GOARCH CGO_ENABLED; echo "ldflags=$ldflags";
           cat "$here/$t/go.mod" "$here/$t/go.sum" "$here/$t"/*.go; } | sha256sum | cut -c1-12)
  echo "$cache/$t-$v-$key"
}

build() {
  local t=$1 dir tmp start
  dir=$(dir_of "$t")
  if [[ -d "$dir" ]]; then
    log "$t: cached in $dir"
    return
  fi
  mkdir -p "$cache"
  # One builder at a time per cache; a second one waits, then finds the folder.
  exec 9>"$cache/.lock-$t"
  flock 9
  if [[ ! -d "$dir" ]]; then
    tmp=$(mktemp -d "$cache/.tmp-$t.XXXXXX")
    start=$(date +%s)
    log "$t: building ${module[$t]} into $dir (a cold build takes minutes)"
    if ! (cd "$here/$t" && GOBIN="$tmp" "$GO" install -trimpath -ldflags="$ldflags" tool) >&2; then
      rm -rf "$tmp"; log "$t: build failed"; exit 1
    fi
    for b in ${bins[$t]}; do [[ -x "$tmp/$b" ]] || { rm -rf "$tmp"; log "$t: $b missing"; exit 1; }; done
    chmod 755 "$tmp"
    mv "$tmp" "$dir"
    log "$t: built in $(( $(date +%s) - start ))s"
  fi
  flock -u 9
}

prune=0
tools=()
for a in "$@"; do
  if [[ $a == --prune ]]; then prune=1; else tools+=("$a"); fi
done
(( ${#tools[@]} )) || tools=(jaeger prometheus ocb kfake)
if (( prune )); then
  for t in jaeger prometheus ocb kfake; do
    keep=$(dir_of "$t")
    for d in "$cache/$t"-*; do
      [[ -d "$d" && "$d" != "$keep" ]] && { log "pruning $d"; rm -rf "$d"; }
    done
  done
fi
for t in "${tools[@]}"; do
  [[ -n "${module[$t]:-}" ]] || { log "unknown tool $t (want jaeger, prometheus, ocb or kfake)"; exit 2; }
  build "$t"
done
for t in "${tools[@]}"; do
  dir=$(dir_of "$t")
  for b in ${bins[$t]}; do
    name=${b^^}; [[ $b == builder ]] && name=OCB
    printf '%s=%q\n' "$name" "$dir/$b"
  done
done
