#!/usr/bin/env bash
# e2e/demo.sh — `make demo`: real Jaeger v2 and Prometheus 3.16 on loopback
# with otelcol-dsh between them, the repository's testdata sessions replayed
# (some posted over HTTP, some tailed from a dsh session root), then where to
# look. Runs until Ctrl-C; everything it started stops with it.
#
# Needs OTELCOL_DSH (make demo builds it). The tools are built once into the
# cache by tools/build.sh (a cold build takes about 11 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")"
repo=$(cd .. && pwd)
: "${OTELCOL_DSH:?set OTELCOL_DSH to the otelcol-dsh binary (make demo does)}"
eval "$("$repo/tools/build.sh" jaeger prometheus)"

run=$(mktemp -d "${TMPDIR:-/tmp}/dshtrace-demo.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_http URL [SECONDS]: poll until URL answers 2xx.
wait_http() {
  local deadline=$(( $(date +%s) + ${2:-30} ))
  until curl -fsS -o /dev/null "$1" 2>/dev/null; do
    (( $(date +%s) < deadline )) || { echo "demo: $1 did not come up; logs in $run" >&2; trap - EXIT; exit 1; }
    sleep 0.1
  done
}

# Sessions to tail: the dsh layout, <root>/--<cwd>--/<session id>/session.jsonl.
root="$run/dsh/sessions"
for f in v0-packed v4-tools crash-repaired open-turn; do
  id=$(head -1 "$repo/testdata/dialects/$f.jsonl" | jq -r .id)
  mkdir -p "$root/--demo--/$id"
  cp "$repo/testdata/dialects/$f.jsonl" "$root/--demo--/$id/session.jsonl"
done

"$JAEGER" --config jaeger.yaml >"$run/jaeger.log" 2>&1 & pids+=($!)
wait_http http://127.0.0.1:23133/status
E2E_DSH_ROOT="$root" E2E_STATE_DIR="$run/state" \
  "$OTELCOL_DSH" --config=otelcol.yaml >"$run/otelcol-dsh.log" 2>&1 & pids+=($!)
wait_http http://127.0.0.1:33133/
"$PROMETHEUS" --config.file=prometheus.yaml --storage.tsdb.path="$run/prometheus" \
  --web.listen-address=127.0.0.1:19090 --enable-feature=exemplar-storage \
  >"$run/prometheus.log" 2>&1 & pids+=($!)
wait_http http://127.0.0.1:19090/-/ready

# Sessions to post: files by path id, live streams (ids in the lines) as they are.
for f in "$repo"/testdata/seed/sample.jsonl "$repo"/testdata/dialects/{v1-header,v2-stream,v3-system,v4-forked,seed-bare-reason}.jsonl; do
  name=$(basename "$f" .jsonl)
  printf 'POST /v1/sessions/demo-%s/events: ' "$name"
  curl -sS -X POST "http://127.0.0.1:34320/v1/sessions/demo-$name/events" \
    -H 'Content-Type: application/x-ndjson' --data-binary @"$f"
done
for f in "$repo"/testdata/dialects/wrap-{envelope,jsonrpc,streamjson}.jsonl; do
  printf 'POST /v1/session-events (%s): ' "$(basename "$f")"
  curl -sS -X POST http://127.0.0.1:34320/v1/session-events \
    -H 'Content-Type: application/x-ndjson' --data-binary @"$f"
done

# Wait until Prometheus has the turns.
deadline=$(( $(date +%s) + 60 ))
until [[ "$(curl -sS -G http://127.0.0.1:19090/api/v1/query --data-urlencode 'query=sum(dsh_turns_total)' \
            | jq -r '.data.result[0].value[1] // "0"')" != 0 ]]; do
  (( $(date +%s) < deadline )) || { echo "demo: no metrics yet; see $run/otelcol-dsh.log" >&2; break; }
  sleep 0.5
done

jaeger=http://127.0.0.1:26686 prom=http://127.0.0.1:19090
cat <<MSG

dshtrace demo is running (logs in $run). The source builds of Jaeger and
Prometheus carry no web UI; their HTTP APIs are complete, and a Grafana
pointed at them (deploy/grafana/) shows the dashboard.

Jaeger    $jaeger          services:  $jaeger/api/v3/services
Prometheus $prom          turns:     $prom/api/v1/query?query=sum+by+(dsh_turn_end_reason)+(dsh_turns_total)
Collector metrics          http://127.0.0.1:18889/metrics
Post more sessions         curl --data-binary @session.jsonl http://127.0.0.1:34320/v1/sessions/<id>/events
Tailed dsh root            $root

Turn traces:
MSG
for svc in $(curl -sS "$jaeger/api/v3/services" | jq -r '.services[]'); do
  curl -sS -G "$jaeger/api/v3/traces" \
    --data-urlencode query.service_name="$svc" \
    --data-urlencode query.start_time_min=1970-01-01T00:00:00Z \
    --data-urlencode query.start_time_max=2100-01-01T00:00:00Z \
    --data-urlencode query.num_traces=100 |
    jq -r --arg j "$jaeger" '[.result.resourceSpans[] | (.resource.attributes[] | select(.key=="session.id") | .value.stringValue) as $s
          | .scopeSpans[].spans[] | select((.parentSpanId // "") == "")
          | {s: $s, n: .name, t: .traceId, r: ([.attributes[] | select(.key=="dsh.turn.end_reason") | .value.stringValue][0])}]
        | unique_by(.t) | sort_by(.s) | .[] | "  \(.s)  \(.n)  \(.r)\t\($j)/api/v3/traces/\(.t)"' || true
done
echo
echo "Ctrl-C stops Jaeger, Prometheus and the collector."
wait
