package turnstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// Security: with the default configuration nothing personal leaves the
// pipeline outside the log bodies (which are the rows by contract). For
// every corpus file fed through the connector (default Config, consumertest
// sinks), no prompt, model output or tool payload text of the file appears
// in any span name, span/event/link/resource attribute, status message, log
// record attribute (as the receiver builds them) or metric attribute; and
// no session id appears in any metric attribute or self-telemetry
// attribute. The same check with capture_content on must find payloads on
// spans — the detector is not blind.

// nonPayloadKeys are the data keys whose strings are identifiers or enum
// values, not free text (and every key ending in "Id": callId,
// parentCallId, rootCallId, …). "message" as a string is a provider's or
// the harness's error message: it is the span status description by
// design (OTel convention), diagnostic text rather than a prompt or a tool
// payload.
var nonPayloadKeys = map[string]bool{
	"id": true, "callId": true, "toolCallId": true, "subCallId": true, "name": true, "type": true, "kind": true,
	"role": true, "provider": true, "model": true, "surfaceOp": true, "target": true, "plugin": true, "form": true,
	"blockType": true, "finishReason": true, "code": true, "message": true,
}

// isPayloadType: the event types that carry prompts, model output or tool
// payloads.
func isPayloadType(t string) bool {
	return strings.HasSuffix(t, "/message") || strings.HasSuffix(t, "-chunks") || strings.HasPrefix(t, "assistant/") ||
		strings.HasPrefix(t, "tool/") || strings.HasPrefix(t, "agent/inbox") || t == "session/title"
}

// payloads collects the free-text strings (at least minPayload bytes,
// trimmed) carried in the data of payload events of a log file, however
// the rows are wrapped.
const minPayload = 12

func payloads(t *testing.T, path string) (texts []string, sessions []string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec, err := sessionlog.NewDecoder(f, sessionlog.Options{})
	require.NoError(t, err)
	defer dec.Close()
	set, ids := map[string]bool{}, map[string]bool{}
	var leaves func(v any, key string)
	leaves = func(v any, key string) {
		switch x := v.(type) {
		case string:
			if s := strings.TrimSpace(x); len(s) >= minPayload && !nonPayloadKeys[key] && !strings.HasSuffix(key, "Id") {
				set[s] = true
			}
		case []any:
			for _, e := range x {
				leaves(e, key)
			}
		case map[string]any:
			for k, e := range x {
				leaves(e, k)
			}
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if typ, _ := x["type"].(string); isPayloadType(typ) {
				if d, ok := x["data"]; ok {
					leaves(d, "")
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		var v any
		if json.Unmarshal(row.Bytes, &v) == nil {
			walk(v)
		}
		if row.SessionID != "" {
			ids[row.SessionID] = true
		}
		if h := dec.Header(); h != nil && h.ID != "" {
			ids[h.ID] = true
		}
	}
	for s := range set {
		texts = append(texts, s)
	}
	for s := range ids {
		sessions = append(sessions, s)
	}
	sort.Strings(texts)
	return texts, sessions
}

// leak names the first payload found in s.
func leak(s string, texts []string) (string, bool) {
	if len(s) < minPayload {
		return "", false
	}
	for _, p := range texts {
		if strings.Contains(s, p) {
			return p, true
		}
	}
	return "", false
}

func mapStrings(m pcommon.Map, where string, out map[string]string) {
	for k, v := range m.All() {
		out[v.AsString()] = where + " " + k
	}
}

// traceStrings collects every string a span carries besides its ids.
func traceStrings(td ptrace.Traces) map[string]string {
	out := map[string]string{}
	for _, rs := range td.ResourceSpans().All() {
		mapStrings(rs.Resource().Attributes(), "resource", out)
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				w := "span " + s.Name()
				out[s.Name()] = "span name"
				out[s.Status().Message()] = w + " status message"
				mapStrings(s.Attributes(), w, out)
				for _, e := range s.Events().All() {
					out[e.Name()] = w + " event name"
					mapStrings(e.Attributes(), w+" event "+e.Name(), out)
				}
				for _, l := range s.Links().All() {
					mapStrings(l.Attributes(), w+" link", out)
				}
			}
		}
	}
	return out
}

// metricLabels collects every attribute value of every data point and
// resource of the emitted metrics.
func metricLabels(mds []pmetric.Metrics) map[string]string {
	out := map[string]string{}
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics().All() {
			mapStrings(rm.Resource().Attributes(), "metrics resource", out)
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					w := "metric " + m.Name()
					switch m.Type() {
					case pmetric.MetricTypeSum:
						for _, dp := range m.Sum().DataPoints().All() {
							mapStrings(dp.Attributes(), w, out)
						}
					case pmetric.MetricTypeGauge:
						for _, dp := range m.Gauge().DataPoints().All() {
							mapStrings(dp.Attributes(), w, out)
						}
					case pmetric.MetricTypeHistogram:
						for _, dp := range m.Histogram().DataPoints().All() {
							mapStrings(dp.Attributes(), w, out)
							for _, ex := range dp.Exemplars().All() {
								mapStrings(ex.FilteredAttributes(), w+" exemplar", out)
							}
						}
					case pmetric.MetricTypeExponentialHistogram:
						for _, dp := range m.ExponentialHistogram().DataPoints().All() {
							mapStrings(dp.Attributes(), w, out)
						}
					}
				}
			}
		}
	}
	return out
}

// selfLabels collects the attribute values of the connector's own
// telemetry.
func selfLabels(t *testing.T, h *harness) map[string]string {
	out := map[string]string{}
	for _, name := range []string{metadata.MetricTurnsOpen, metadata.MetricSessionsOpen, metadata.MetricTurnsClosed, metadata.MetricTurnsDangling, metadata.MetricLateEvents,
		metadata.MetricEventsDropped, metadata.MetricGapsSkipped, metadata.MetricReorderOverflows, metadata.MetricEmitFailures} {
		m, err := h.tel.GetMetric(name)
		if err != nil {
			continue
		}
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, dp := range d.DataPoints {
				for _, kv := range dp.Attributes.ToSlice() {
					out[kv.Value.Emit()] = "self " + name + " " + string(kv.Key)
				}
			}
		case metricdata.Gauge[int64]:
			for _, dp := range d.DataPoints {
				for _, kv := range dp.Attributes.ToSlice() {
					out[kv.Value.Emit()] = "self " + name + " " + string(kv.Key)
				}
			}
		}
	}
	return out
}

func logAttributes(ld plog.Logs) map[string]string {
	out := map[string]string{}
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				mapStrings(lr.Attributes(), "log record "+lr.EventName(), out)
			}
		}
	}
	return out
}

func TestSecurityNoContentByDefault(t *testing.T) {
	checkedPayloads, checkedFiles := 0, 0
	for _, l := range testcorpus.Logs(t) {
		rel, path := l.Name, l.Path
		texts, sessions := payloads(t, path)
		if len(texts) == 0 {
			continue
		}
		checkedFiles++
		checkedPayloads += len(texts)
		t.Run(rel, func(t *testing.T) {
			ld, _ := buildRecords(t, path, "security-fallback-session")
			sessions = append(sessions, "security-fallback-session")
			h := newHarness(t, createDefaultConfig(), nil, nil)
			h.start()
			for _, b := range batches(ld, 7) {
				h.feed(b)
			}
			h.shutdown()

			for s, where := range traceStrings(h.allTraces()) {
				if p, ok := leak(s, texts); ok {
					t.Errorf("%s carries payload text %.80q", where, p)
				}
			}
			for s, where := range logAttributes(ld) {
				if p, ok := leak(s, texts); ok {
					t.Errorf("%s carries payload text %.80q", where, p)
				}
			}
			metrics := metricLabels(h.metrics.AllMetrics())
			require.NotEmpty(t, h.metrics.AllMetrics())
			for s, where := range selfLabels(t, h) {
				metrics[s] = where
			}
			for s, where := range metrics {
				if p, ok := leak(s, texts); ok {
					t.Errorf("%s carries payload text %.80q", where, p)
				}
				for _, id := range sessions {
					if id != "" && strings.Contains(s, id) {
						t.Errorf("%s carries session id %q", where, id)
					}
				}
			}
		})
	}
	require.NotZero(t, checkedFiles, "no payload text found in the corpus")
	t.Logf("%d files, %d distinct payload texts checked", checkedFiles, checkedPayloads)
}

// The detector finds payloads when capture is on: the default-off result
// above is not an artefact of the check.
func TestSecurityDetectorSeesCapturedContent(t *testing.T) {
	path := filepath.Join(testcorpus.Dir(t), "v0/examples/acp-agent/tests/snapshots/bash-tool-turn/session.jsonl")
	texts, _ := payloads(t, path)
	require.NotEmpty(t, texts)
	ld, _ := buildRecords(t, path, "s")
	cfg := createDefaultConfig()
	cfg.CaptureContent = true
	h := newHarness(t, cfg, nil, nil)
	h.start()
	h.feed(ld)
	h.shutdown()
	found := 0
	for s := range traceStrings(h.allTraces()) {
		if _, ok := leak(s, texts); ok {
			found++
		}
	}
	assert.NotZero(t, found, "capture_content on, yet no payload text found on any span")
	// And the bodies, by contract, are the rows: the detector sees those.
	var body bytes.Buffer
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				body.WriteString(lr.Body().AsString())
			}
		}
	}
	_, ok := leak(body.String(), texts)
	assert.True(t, ok, "log bodies carry the rows")
}
