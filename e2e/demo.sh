#!/usr/bin/env bash
# e2e/demo.sh — `make demo`: real Jaeger v2 (with its web UI) and Prometheus
# 3.16 on loopback with otelcol-dsh between them, the repository's testdata
# sessions replayed (some posted over HTTP, some tailed from a dsh session
# root), `dshtrace serve` over that root, then links that open the replayed
# turns in Jaeger and in their replay pages. Jaeger's UI links each turn span
# to its page (jaeger-ui.json), and each page links its turns to Jaeger. Runs
# until Ctrl-C or a kill; everything it started stops with it.
#
# Needs OTELCOL_DSH and DSHTRACE (make demo builds them). The tools are built once into the
# cache by tools/build.sh (a cold build takes about 11 minutes on 2 cores).
#
# The Jaeger UI: Jaeger built from Go source serves a placeholder page, so the
# demo points the query extension (ui: assets_path:) at a built Jaeger UI:
# $JAEGER_UI_ASSETS, else ../shared/jaeger-ui beside the repository, else it
# runs without the UI and says how to get one.
set -euo pipefail

# Die with whoever started us: when `make demo` (or the shell that ran this)
# is killed, even with SIGKILL, the kernel sends us SIGTERM and the trap
# below stops the backends.
if [[ -z "${DSH_DEMO_REEXEC:-}" ]] && command -v setpriv >/dev/null 2>&1; then
  DSH_DEMO_REEXEC=1 exec setpriv --pdeathsig TERM "$0" "$@"
fi

cd "$(dirname "$0")"
repo=$(cd .. && pwd)
: "${OTELCOL_DSH:?set OTELCOL_DSH to the otelcol-dsh binary (make demo does)}"
: "${DSHTRACE:?set DSHTRACE to the dshtrace binary (make demo does)}"
eval "$("$repo/tools/build.sh" jaeger prometheus)"

run=$(mktemp -d "${TMPDIR:-/tmp}/dshtrace-demo.XXXXXX")
pids=()
stopping=
cleanup() {
  [[ -n "$stopping" ]] && return
  stopping=1
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  # Give them 10s, then SIGKILL whatever is left.
  for _ in $(seq 100); do
    local alive=
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [[ -z "$alive" ]] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ -n "${keep_logs:-}" ]]; then
    echo "demo: logs kept in $run" >&2
  else
    rm -rf "$run"
  fi
}
trap cleanup EXIT
# A Ctrl-C reaches make, this script and the backends at once, and make's
# death sends us SIGTERM on top: a signal during the cleanup must not cut it
# short.
trap '[[ -n "$stopping" ]] || exit 130' INT
trap '[[ -n "$stopping" ]] || exit 143' TERM HUP

# spawn NAME CMD...: start a backend in the background, its output in
# $run/NAME.log. Each dies with this script even if it is SIGKILLed
# (setpriv --pdeathsig), and is stopped by cleanup otherwise.
deathsig=()
command -v setpriv >/dev/null 2>&1 && deathsig=(setpriv --pdeathsig KILL)
spawn() {
  local name=$1; shift
  "${deathsig[@]}" "$@" >"$run/$name.log" 2>&1 &
  pids+=($!)
}

# wait_http URL [SECONDS]: poll until URL answers 2xx.
wait_http() {
  local deadline=$(( $(date +%s) + ${2:-30} ))
  until curl -fsS -o /dev/null "$1" 2>/dev/null; do
    (( $(date +%s) < deadline )) || { echo "demo: $1 did not come up; logs in $run" >&2; keep_logs=1; exit 1; }
    sleep 0.1
  done
}

# Every port the demo opens (the defaults of testdata/jaeger.yaml,
# testdata/collector/suite.yaml and testdata/prometheus.yaml, and dshtrace
# serve below) must be free.
for port in 24317 24318 26685 26686 23133 14317 14318 14320 13133 18889 17888 19090 17788; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "demo: 127.0.0.1:$port is in use (another make demo, or make e2e, running?)" >&2
    exit 1
  fi
done

# The Jaeger UI's assets.
ui=${JAEGER_UI_ASSETS:-}
if [[ -z "$ui" && -f "$repo/../shared/jaeger-ui/index.html" ]]; then
  ui=$(cd "$repo/../shared/jaeger-ui" && pwd)
fi
jaeger_args=(--config testdata/jaeger.yaml)
if [[ -n "$ui" ]]; then
  [[ -f "$ui/index.html" ]] || { echo "demo: JAEGER_UI_ASSETS=$ui has no index.html (want a built Jaeger UI)" >&2; exit 1; }
  jaeger_args+=("--set=extensions::jaeger_query::ui::assets_path=$ui"
    "--set=extensions::jaeger_query::ui::config_file=$PWD/jaeger-ui.json")
else
  echo "demo: no Jaeger UI assets (set JAEGER_UI_ASSETS to a built Jaeger UI, e.g. the unpacked assets of a jaeger-ui release build); serving Jaeger's APIs only" >&2
fi

# Sessions to tail: the dsh layout, <root>/--<cwd>--/<session id>/session.jsonl.
root="$run/dsh/sessions"
for f in v0-packed v4-tools crash-repaired open-turn; do
  id=$(head -1 "$repo/testdata/dialects/$f.jsonl" | jq -r .id)
  mkdir -p "$root/--demo--/$id"
  cp "$repo/testdata/dialects/$f.jsonl" "$root/--demo--/$id/session.jsonl"
done

spawn jaeger "$JAEGER" "${jaeger_args[@]}"
wait_http http://127.0.0.1:23133/status
spawn otelcol-dsh env DSH_SESSIONS="$root" STATE_DIR="$run/state" "$OTELCOL_DSH" --config=testdata/collector/suite.yaml
wait_http http://127.0.0.1:13133/
# Prometheus expands no variables: its placeholders take their defaults.
sed -e "s|\${env:RULES_FILE}|$repo/deploy/rules.yaml|" -e 's/\${env:[A-Z_]*:-\([^}]*\)}/\1/g' \
  testdata/prometheus.yaml >"$run/prometheus.yaml"
spawn prometheus "$PROMETHEUS" --config.file="$run/prometheus.yaml" --storage.tsdb.path="$run/prometheus" \
  --web.listen-address=127.0.0.1:19090 --enable-feature=exemplar-storage
wait_http http://127.0.0.1:19090/-/ready
replay=http://127.0.0.1:17788
spawn dshtrace-serve "$DSHTRACE" serve --addr 127.0.0.1:17788 --jaeger http://127.0.0.1:26686 "$root"
wait_http "$replay/"

# Sessions to post: files by path id, live streams (ids in the lines) as they are.
for f in "$repo"/testdata/seed/sample.jsonl "$repo"/testdata/dialects/{v1-header,v2-stream,v3-system,v4-forked,seed-bare-reason}.jsonl; do
  name=$(basename "$f" .jsonl)
  printf 'POST /v1/sessions/demo-%s/events: ' "$name"
  curl -sS -X POST "http://127.0.0.1:14320/v1/sessions/demo-$name/events" \
    -H 'Content-Type: application/x-ndjson' --data-binary @"$f"
done
for f in "$repo"/testdata/dialects/wrap-{envelope,jsonrpc,streamjson}.jsonl; do
  printf 'POST /v1/session-events (%s): ' "$(basename "$f")"
  curl -sS -X POST http://127.0.0.1:14320/v1/session-events \
    -H 'Content-Type: application/x-ndjson' --data-binary @"$f"
done

# Wait until Prometheus has the turns.
deadline=$(( $(date +%s) + 60 ))
until [[ "$(curl -sS -G http://127.0.0.1:19090/api/v1/query --data-urlencode 'query=sum(dsh_turns_total)' \
            | jq -r '.data.result[0].value[1] // "0"')" != 0 ]]; do
  (( $(date +%s) < deadline )) || { echo "demo: no metrics yet; see $run/otelcol-dsh.log" >&2; break; }
  sleep 0.5
done

# Every stored turn: one root span per trace. The turns carry the logs' own
# timestamps (months or years ago), outside the UI's default "last hour", so
# the search links carry the window of the sessions (start/end in
# microseconds, lookback=custom).
jaeger=http://127.0.0.1:26686 prom=http://127.0.0.1:19090
turns=$run/turns.json
for svc in $(curl -sS "$jaeger/api/v3/services" | jq -r '.services[]'); do
  curl -sS -G "$jaeger/api/v3/traces" \
    --data-urlencode query.service_name="$svc" \
    --data-urlencode query.start_time_min=1970-01-01T00:00:00Z \
    --data-urlencode query.start_time_max=2100-01-01T00:00:00Z \
    --data-urlencode query.num_traces=100 |
    jq -c --arg svc "$svc" '.result.resourceSpans[] | (.resource.attributes[] | select(.key=="session.id") | .value.stringValue) as $s
          | .scopeSpans[].spans[] | select((.parentSpanId // "") == "")
          | {svc: $svc, s: $s, n: .name, t: .traceId,
             start: (.startTimeUnixNano | tonumber), end: (.endTimeUnixNano | tonumber),
             r: ([.attributes[] | select(.key=="dsh.turn.end_reason") | .value.stringValue][0] // ""),
             turn: ([.attributes[] | select(.key=="dsh.turn") | .value.intValue][0] // "")}' || true
done | jq -s 'unique_by(.t) | sort_by(.s, .start)' >"$turns"

if [[ -n "$ui" ]]; then
  ui_line="Jaeger UI  $jaeger/search   (the links below open the replayed turns)"
else
  ui_line="Jaeger     $jaeger   (APIs only: no UI assets, see above)"
fi
cat <<MSG

dshtrace demo is running (logs in $run).

$ui_line
Prometheus $prom/api/v1/query?query=sum+by+(dsh_turn_end_reason)+(dsh_turns_total)
           (the source build carries no web UI: /query answers 500; its HTTP API
           is complete, and Grafana from deploy/compose shows the dashboard)
Replay     $replay/   (dshtrace serve: the tailed sessions, turn by turn)
Collector metrics   http://127.0.0.1:18889/metrics
Post more sessions  curl -X POST -H 'Content-Type: application/x-ndjson' \\
                      --data-binary @testdata/dialects/v4-tools.jsonl http://127.0.0.1:14320/v1/sessions/my-session/events
Tailed dsh root     $root

MSG
if [[ "$(jq length "$turns")" == 0 ]]; then
  echo "No turns in Jaeger yet; see $run/otelcol-dsh.log"
else
  echo "Search (every turn of a service, in the sessions' own time window):"
  # One minute either side of the turns, in microseconds.
  jq -r --arg j "$jaeger" 'group_by(.svc)[] |
      "  \(.[0].svc) (\(length) turn\(if length == 1 then "" else "s" end))\t\($j)/search?service=\(.[0].svc | @uri)&start=\((map(.start) | min) / 1000 | floor - 60000000)&end=\((map(.end) | max) / 1000 | floor + 60000000)&lookback=custom&limit=100"' "$turns"
  echo
  echo "Turns (session  root span  end reason  trace, and the replay page of a tailed session's turn):"
  served=$(ls "$root/--demo--" | jq -R . | jq -s .)
  jq -r --arg j "$jaeger" --arg p "$replay" --argjson served "$served" '.[] |
      "  \(.s)  \(.n)  \(.r)\t\($j)/trace/\(.t)" +
      (if (.s | IN($served[])) then "\n\t\t\t\($p)/s/\(.s | @uri)?turn=\(.turn)#turn-\(.turn)" else "" end)' "$turns"
fi
echo
echo "Ctrl-C stops Jaeger, Prometheus, the collector and the replay server."
# wait -n returns when a backend exits, or at a signal (the traps then stop
# everything).
wait -n || true
echo "demo: a backend exited on its own; logs in $run" >&2
keep_logs=1
exit 1
