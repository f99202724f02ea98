package turnstate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/testcorpus/testrecords"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	connturnstate "github.com/dshtrace/dshtrace/connector/turnstate"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"github.com/dshtrace/dshtrace/processor/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

var epoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// fakeClock is the processor's injectable arrival clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// harness is a turn_state processor built by its factory, feeding a sink,
// with its self-telemetry readable and its clock injected.
type harness struct {
	t     *testing.T
	proc  processor.Logs
	sink  *consumertest.LogsSink
	tel   *componenttest.Telemetry
	clock *fakeClock
}

func newHarness(t *testing.T, cfg *Config) *harness {
	t.Helper()
	h := &harness{t: t, sink: new(consumertest.LogsSink), tel: componenttest.NewTelemetry(), clock: &fakeClock{now: epoch}}
	t.Cleanup(func() { require.NoError(t, h.tel.Shutdown(context.Background())) })
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	p, err := createLogsWithClock(context.Background(), set, cfg, h.sink, h.clock.Now)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, p.Shutdown(context.Background())) })
	h.proc = p
	return h
}

// feed hands the processor a copy of ld (the original stays as it was)
// and returns the records it passed on.
func (h *harness) feed(ld plog.Logs) plog.Logs {
	h.t.Helper()
	c := plog.NewLogs()
	ld.CopyTo(c)
	before := len(h.sink.AllLogs())
	require.NoError(h.t, h.proc.ConsumeLogs(context.Background(), c))
	all := h.sink.AllLogs()
	require.Len(h.t, all, before+1)
	return all[before]
}

// counter is a self-telemetry counter's value (0 when never recorded).
func (h *harness) counter(name string) int64 {
	h.t.Helper()
	m, err := h.tel.GetMetric(name)
	if err != nil {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(h.t, ok, "%s is not an int64 sum: %T", name, m.Data)
	require.True(h.t, sum.IsMonotonic)
	var n int64
	for _, dp := range sum.DataPoints {
		n += dp.Value
	}
	return n
}

func (h *harness) gauge(name string) int64 {
	h.t.Helper()
	m, err := h.tel.GetMetric(name)
	require.NoError(h.t, err)
	g, ok := m.Data.(metricdata.Gauge[int64])
	require.True(h.t, ok, "%s is not an int64 gauge: %T", name, m.Data)
	require.Len(h.t, g.DataPoints, 1)
	return g.DataPoints[0].Value
}

// connectorSpans runs the batches through a turn_state connector (logs →
// traces, default config), shuts it down so open turns are flushed, and
// returns every span it emitted by (trace id, span id).
func connectorSpans(t *testing.T, bs []plog.Logs) map[spanKey]ptrace.Span {
	t.Helper()
	return connectorSpansWith(t, bs, nil)
}

// connectorSpansWith is connectorSpans with config keys set by conf.
func connectorSpansWith(t *testing.T, bs []plog.Logs, conf func(map[string]any)) map[spanKey]ptrace.Span {
	t.Helper()
	f := connturnstate.NewFactory()
	cfg := f.CreateDefaultConfig()
	if conf != nil {
		m := map[string]any{}
		conf(m)
		require.NoError(t, confmap.NewFromStringMap(m).Unmarshal(cfg))
	}
	sink := new(consumertest.TracesSink)
	c, err := f.CreateLogsToTraces(context.Background(), connectortest.NewNopSettings(f.Type()), cfg,
		connector.NewTracesRouter(map[pipeline.ID]consumer.Traces{pipeline.NewID(pipeline.SignalTraces): sink}))
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	for _, b := range bs {
		cp := plog.NewLogs()
		b.CopyTo(cp)
		cp.MarkReadOnly()
		require.NoError(t, c.ConsumeLogs(context.Background(), cp))
	}
	require.NoError(t, c.Shutdown(context.Background()))
	out := map[spanKey]ptrace.Span{}
	for _, td := range sink.AllTraces() {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					sp := spans.At(k)
					key := spanKey{sp.TraceID(), sp.SpanID()}
					if _, dup := out[key]; dup {
						t.Errorf("the connector emitted span %v twice", key)
					}
					out[key] = sp
				}
			}
		}
	}
	return out
}

type spanKey struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

func (k spanKey) String() string { return fmt.Sprintf("%s/%s", k.trace, k.span) }

// forEachRecord calls fn for every record of ld.
func forEachRecord(ld plog.Logs, fn func(pcommon.Resource, plog.LogRecord)) {
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		for j := 0; j < rl.ScopeLogs().Len(); j++ {
			lrs := rl.ScopeLogs().At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				fn(rl.Resource(), lrs.At(k))
			}
		}
	}
}

// batches splits the records of ld into batches of at most n records,
// keeping each record's resource and scope.
func batches(ld plog.Logs, n int) []plog.Logs {
	var out []plog.Logs
	var cur plog.LogRecordSlice
	inBatch := 0
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		for j := 0; j < rl.ScopeLogs().Len(); j++ {
			sl := rl.ScopeLogs().At(j)
			lrs := sl.LogRecords()
			open := false
			for k := 0; k < lrs.Len(); k++ {
				if len(out) == 0 || inBatch == n {
					out = append(out, plog.NewLogs())
					inBatch, open = 0, false
				}
				if !open {
					nrl := out[len(out)-1].ResourceLogs().AppendEmpty()
					rl.Resource().CopyTo(nrl.Resource())
					nsl := nrl.ScopeLogs().AppendEmpty()
					sl.Scope().CopyTo(nsl.Scope())
					cur, open = nsl.LogRecords(), true
				}
				lrs.At(k).CopyTo(cur.AppendEmpty())
				inBatch++
			}
		}
	}
	return out
}

// The three shapes a dsh session event reaches a collector in.

// receiverRecords are the session_event receiver's records of the log at
// path (one per physical row, packed rows included), with the ids and
// attributes the receiver stamps removed, so only the processor's show.
func receiverRecords(t testing.TB, path string) plog.Logs {
	t.Helper()
	ld, _ := testrecords.Receiver(t, path, "fallback-session", epoch)
	forEachRecord(ld, func(_ pcommon.Resource, lr plog.LogRecord) {
		lr.SetTraceID(pcommon.TraceID{})
		lr.SetSpanID(pcommon.SpanID{})
		for _, k := range []string{semconv.DshTurn, semconv.DshStep, semconv.GenAIToolCallID} {
			lr.Attributes().Remove(k)
		}
	})
	return ld
}

// dshV4Export is dsh v4's own OTLP log export of the log: event name
// session-log, the envelope as JSON text in attribute content (key order
// and bytes not preserved), no trace context.
func dshV4Export(t testing.TB, path string) plog.Logs {
	t.Helper()
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "dsh")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for _, ev := range envelopes(t, path) {
		session, env := ev.session, ev.env
		b, err := json.Marshal(env)
		require.NoError(t, err)
		lr := lrs.AppendEmpty()
		lr.SetEventName("session-log")
		lr.Body().SetStr("session-log")
		lr.SetTimestamp(pcommon.Timestamp(int64(env["time"].(float64)) * int64(time.Millisecond)))
		lr.Attributes().PutStr("sessionId", session)
		lr.Attributes().PutStr("content", string(b))
		lr.Attributes().PutInt("event.seq", int64(env["seq"].(float64)))
		lr.Attributes().PutStr("event.type", env["type"].(string))
	}
	return ld
}

// dshV0Export is dsh v0's own OTLP log export of the log: body = data,
// event.type/event.seq attributes, and only the first assistant/chunk of
// each step.
func dshV0Export(t testing.TB, path string) plog.Logs {
	t.Helper()
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	firstChunk := map[string]bool{}
	for _, ev := range envelopes(t, path) {
		session, env := ev.session, ev.env
		data, _ := env["data"].(map[string]any)
		if env["type"] == "assistant/chunk" {
			k := fmt.Sprint(session, "/", data["turn"], "/", data["step"])
			if firstChunk[k] {
				continue
			}
			firstChunk[k] = true
		}
		lr := lrs.AppendEmpty()
		if data != nil {
			require.NoError(t, lr.Body().SetEmptyMap().FromRaw(data))
		}
		lr.SetTimestamp(pcommon.Timestamp(int64(env["time"].(float64)) * int64(time.Millisecond)))
		lr.Attributes().PutStr("session.id", session)
		lr.Attributes().PutStr("event.type", env["type"].(string))
		lr.Attributes().PutInt("event.seq", int64(env["seq"].(float64)))
	}
	return ld
}

type envelope struct {
	session string
	env     map[string]any
}

// envelopes are the logical events of the log at path as JSON envelopes
// (packed rows expanded), as dsh's own exporters see them, each with its
// session (a wrapper's sessionId, else the header's id).
func envelopes(t testing.TB, path string) []envelope {
	t.Helper()
	var out []envelope
	for _, r := range testlog.Rows(t, path, "fallback-session") {
		for i := range r.Events {
			var env map[string]any
			require.NoError(t, json.Unmarshal(r.Events[i].LogicalJSON(), &env))
			out = append(out, envelope{r.Session, env})
		}
	}
	return out
}

// inheritedRecords are, for a fork's log, the receiver's records of its
// inherited prefix (the events before the header's seedLength) filed under
// the parent session: what the parent's own log sends for them, so the
// connector emits the parent's spans those events belong to. Nil for a
// log that is no fork.
func inheritedRecords(t testing.TB, path string) (plog.Logs, bool) {
	t.Helper()
	rows := testlog.Rows(t, path, "fallback-session")
	var parent string
	var seed int64
	for _, r := range rows {
		if h := r.Header; h != nil && h.HasSeedLength && h.ParentSession != "" {
			parent, seed = h.ParentSession, h.SeedLength
			break
		}
	}
	if parent == "" {
		return plog.Logs{}, false
	}
	ld := plog.NewLogs()
	lrs := logrecord.NewResourceLogs(ld, "github.com/dshtrace/dshtrace/receiver/sessionevent", parent, nil)
	tr := logrecord.NewTracker(turnmodel.DefaultBounds())
	for _, r := range rows {
		if n := len(r.Events); n > 0 && r.Events[n-1].Seq < seed {
			tr.Append(lrs, parent, r.Row, r.Format, epoch)
		}
	}
	return ld, true
}

var shapes = []struct {
	name  string
	build func(testing.TB, string) plog.Logs
}{
	{"receiver", receiverRecords},
	{"dsh_v4_export", dshV4Export},
	{"dsh_v0_export", dshV0Export},
}

// checkStamps asserts that every stamped record of out names a span of
// spans and carries that span's dsh.turn, dsh.step and gen_ai.tool.call.id,
// and that every span is named by some record. It returns the number of
// stamped records.
func checkStamps(t *testing.T, out []plog.Logs, spans map[spanKey]ptrace.Span) int {
	t.Helper()
	seen := map[spanKey]bool{}
	stamped := 0
	for _, ld := range out {
		forEachRecord(ld, func(_ pcommon.Resource, lr plog.LogRecord) {
			if lr.SpanID().IsEmpty() && lr.TraceID().IsEmpty() {
				return
			}
			stamped++
			key := spanKey{lr.TraceID(), lr.SpanID()}
			what := describe(lr)
			sp, ok := spans[key]
			if !ok {
				t.Errorf("%s: stamped with %v, which is no span the connector emitted", what, key)
				return
			}
			seen[key] = true
			for _, k := range []string{semconv.DshTurn, semconv.DshStep, semconv.GenAIToolCallID, semconv.DshToolParentCallID} {
				want, wok := sp.Attributes().Get(k)
				got, gok := lr.Attributes().Get(k)
				switch {
				case wok != gok:
					t.Errorf("%s on span %q: %s present on the record %v, on the span %v", what, sp.Name(), k, gok, wok)
				case wok && want.AsString() != got.AsString():
					t.Errorf("%s on span %q: %s = %s, the span's is %s", what, sp.Name(), k, got.AsString(), want.AsString())
				}
			}
		})
	}
	for key, sp := range spans {
		if !seen[key] {
			t.Errorf("span %q %v (dsh.event.seq %s) is named by no record", sp.Name(), key, attrString(sp.Attributes(), "dsh.event.seq"))
		}
	}
	return stamped
}

func attrString(m pcommon.Map, k string) string {
	if v, ok := m.Get(k); ok {
		return v.AsString()
	}
	return "-"
}

func describe(lr plog.LogRecord) string {
	typ := attrString(lr.Attributes(), "event.type")
	if typ == "-" {
		typ = lr.EventName()
	}
	return strings.Join([]string{typ, "seq", attrString(lr.Attributes(), "event.seq")}, " ")
}

func nowEpoch() time.Time { return epoch }
