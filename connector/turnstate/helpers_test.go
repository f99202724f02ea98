package turnstate

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/testcorpus/testrecords"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// epoch is the arrival clock's start in every test: fixed, so goldens are
// stable.
var epoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// fakeClock is the injectable wall clock.
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

// harness is a turn_state pair as the service builds it: the logs→traces
// and logs→metrics instances, created with one *Config, feeding sinks.
type harness struct {
	t       testing.TB
	cfg     *Config
	clock   *fakeClock
	tel     *componenttest.Telemetry
	traces  *consumertest.TracesSink
	metrics *consumertest.MetricsSink
	toTr    connector.Logs // created first: the ingester
	toMt    connector.Logs
}

// newHarness creates both instances, with next consumers that default to
// sinks, and injects a fake clock into their core.
func newHarness(t testing.TB, cfg *Config, nextTraces consumer.Traces, nextMetrics consumer.Metrics) *harness {
	t.Helper()
	h := &harness{t: t, cfg: cfg, clock: &fakeClock{now: epoch}, tel: componenttest.NewTelemetry(),
		traces: new(consumertest.TracesSink), metrics: new(consumertest.MetricsSink)}
	t.Cleanup(func() { require.NoError(t, h.tel.Shutdown(context.Background())) })
	if nextTraces == nil {
		nextTraces = h.traces
	}
	if nextMetrics == nil {
		nextMetrics = h.metrics
	}
	f := NewFactory()
	set := connectortest.NewNopSettings(metadata.Type)
	if cfg.Storage != nil {
		// As in a collector's config: the id a restart finds its state by.
		set.ID = component.NewID(metadata.Type)
	}
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	var err error
	h.toTr, err = f.CreateLogsToTraces(context.Background(), set, cfg,
		connector.NewTracesRouter(map[pipeline.ID]consumer.Traces{pipeline.NewID(pipeline.SignalTraces): nextTraces}))
	require.NoError(t, err)
	h.toMt, err = f.CreateLogsToMetrics(context.Background(), set, cfg,
		connector.NewMetricsRouter(map[pipeline.ID]consumer.Metrics{pipeline.NewID(pipeline.SignalMetrics): nextMetrics}))
	require.NoError(t, err)
	c := h.core()
	c.mu.Lock()
	c.clock = h.clock.Now
	c.mu.Unlock()
	return h
}

func (h *harness) core() *core { return h.toTr.(*instance).c }

// start starts both instances, downstream-first as the service does.
func (h *harness) start() {
	h.t.Helper()
	require.NoError(h.t, h.toMt.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(h.t, h.toTr.Start(context.Background(), componenttest.NewNopHost()))
}

// feed hands the same read-only batch to both instances, as the service's
// fan-out does.
func (h *harness) feed(ld plog.Logs) {
	h.t.Helper()
	h.feedCtx(context.Background(), ld)
}

// feedKafka feeds a batch as the kafka receiver delivers the message at
// offset of partition 0 of the session topic.
func (h *harness) feedKafka(ld plog.Logs, offset int) {
	h.t.Helper()
	h.feedPartition(ld, 0, offset)
}

// feedPartition feeds a batch as the kafka receiver delivers the message
// at offset of a partition of the session topic.
func (h *harness) feedPartition(ld plog.Logs, partition, offset int) {
	h.t.Helper()
	h.feedCtx(client.NewContext(context.Background(), client.Info{Metadata: client.NewMetadata(map[string][]string{
		"kafka.topic":     {"dsh-session-events"},
		"kafka.partition": {strconv.Itoa(partition)},
		"kafka.offset":    {strconv.Itoa(offset)},
	})}), ld)
}

func (h *harness) feedCtx(ctx context.Context, ld plog.Logs) {
	h.t.Helper()
	if !ld.IsReadOnly() {
		ld.MarkReadOnly()
	}
	require.NoError(h.t, h.toTr.ConsumeLogs(ctx, ld))
	require.NoError(h.t, h.toMt.ConsumeLogs(ctx, ld))
}

func (h *harness) shutdown() {
	h.t.Helper()
	require.NoError(h.t, h.toTr.Shutdown(context.Background()))
	require.NoError(h.t, h.toMt.Shutdown(context.Background()))
}

// allTraces merges everything the traces sink received, in order.
func (h *harness) allTraces() ptrace.Traces {
	out := ptrace.NewTraces()
	for _, td := range h.traces.AllTraces() {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			rss.At(i).CopyTo(out.ResourceSpans().AppendEmpty())
		}
	}
	return out
}

// lastMetrics is the last metrics batch emitted (the shutdown flush).
func (h *harness) lastMetrics() pmetric.Metrics {
	h.t.Helper()
	all := h.metrics.AllMetrics()
	require.NotEmpty(h.t, all, "no metrics were emitted")
	return all[len(all)-1]
}

// selfSum returns the value of a self-telemetry counter for the attribute
// set attrs ("key=value", empty for none), 0 if there is no such point.
func (h *harness) selfSum(name string, attrs ...string) int64 {
	h.t.Helper()
	m, err := h.tel.GetMetric(name)
	if err != nil {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(h.t, ok, "%s is not an int64 sum: %T", name, m.Data)
	require.True(h.t, sum.IsMonotonic)
	for _, dp := range sum.DataPoints {
		if attrString(dp.Attributes.ToSlice()) == strings.Join(attrs, ",") {
			return dp.Value
		}
	}
	return 0
}

// selfGauge returns the value of a self-telemetry gauge.
func (h *harness) selfGauge(name string) int64 {
	h.t.Helper()
	m, err := h.tel.GetMetric(name)
	require.NoError(h.t, err)
	g, ok := m.Data.(metricdata.Gauge[int64])
	require.True(h.t, ok, "%s is not an int64 gauge: %T", name, m.Data)
	require.Len(h.t, g.DataPoints, 1)
	return g.DataPoints[0].Value
}

func attrString(kvs []attribute.KeyValue) string {
	parts := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		parts = append(parts, string(kv.Key)+"="+kv.Value.Emit())
	}
	return strings.Join(parts, ",")
}

// corpusPath resolves a corpus-relative path; paths starting with ../ are
// relative to the repository root's testdata instead.
func corpusPath(t testing.TB, rel string) string {
	t.Helper()
	if strings.HasPrefix(rel, "../") {
		return filepath.Join("..", "..", "testdata", strings.TrimPrefix(rel, "../"))
	}
	return filepath.Join(testcorpus.Dir(t), rel)
}

// buildRecords turns a log file into log records the way the session_event
// receiver does (logrecord.Tracker), one ResourceLogs per session; files
// without a header or wrapper are filed under fallback. It also returns
// the number of logical events.
func buildRecords(t testing.TB, path, fallback string) (plog.Logs, int) {
	t.Helper()
	return testrecords.Receiver(t, path, fallback, epoch)
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
			open := false // whether cur belongs to this resource and scope
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

// replay is the direct path: the whole file through turnengine.Replay,
// with the connector's default engine settings (live steps).
func replay(t *testing.T, path, fallback string) (*turnengine.Engine, ptrace.Traces) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	e := turnengine.New(createDefaultConfig().engineConfig())
	require.NoError(t, turnengine.Replay(e, f, sessionlog.Options{}, fallback, epoch))
	return e, turnrender.Traces("github.com/dshtrace/dshtrace/connector/turnstate", e.Drain())
}

// normalizeDangling erases the dangling cause, which differs between the
// direct path (end_of_input) and the connector (shutdown), and regroups
// spans into one ResourceSpans per resource, in first-seen order.
func normalizeDangling(td ptrace.Traces) ptrace.Traces { return regroup(td, true) }

// regroup puts the spans of each resource into one ResourceSpans, in
// first-seen order: live steps go out in several batches per turn.
// eraseCause: also erase the dangling cause.
func regroup(td ptrace.Traces, eraseCause bool) ptrace.Traces {
	out := ptrace.NewTraces()
	byResource := map[string]ptrace.SpanSlice{}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		key := resourceKey(rs.Resource())
		spans, ok := byResource[key]
		if !ok {
			nrs := out.ResourceSpans().AppendEmpty()
			rs.Resource().CopyTo(nrs.Resource())
			ss := nrs.ScopeSpans().AppendEmpty()
			rs.ScopeSpans().At(0).Scope().CopyTo(ss.Scope())
			spans = ss.Spans()
			byResource[key] = spans
		}
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				sp := spans.AppendEmpty()
				ss.At(k).CopyTo(sp)
				if _, ok := sp.Attributes().Get("dsh.dangling.cause"); ok && eraseCause {
					sp.Attributes().PutStr("dsh.dangling.cause", "*")
					sp.Status().SetMessage("*")
				}
			}
		}
	}
	return out
}

func resourceKey(r pcommon.Resource) string {
	var b strings.Builder
	r.Attributes().Range(func(k string, v pcommon.Value) bool {
		b.WriteString(k + "=" + v.AsString() + "\x00")
		return true
	})
	return b.String()
}

// spanCounts counts spans by name.
func spanCounts(td ptrace.Traces) map[string]int {
	out := map[string]int{}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				out[spans.At(k).Name()]++
			}
		}
	}
	return out
}

// turnSpans returns the turn (root) spans, in order.
func turnSpans(td ptrace.Traces) []ptrace.Span {
	var out []ptrace.Span
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if spans.At(k).ParentSpanID().IsEmpty() {
					out = append(out, spans.At(k))
				}
			}
		}
	}
	return out
}

// findMetric returns the metric named name in md.
func findMetric(md pmetric.Metrics, name string) (pmetric.Metric, bool) {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				if ms.At(k).Name() == name {
					return ms.At(k), true
				}
			}
		}
	}
	return pmetric.Metric{}, false
}

// sumTotal adds up a counter's data points.
func sumTotal(md pmetric.Metrics, name string) int64 {
	m, ok := findMetric(md, name)
	if !ok {
		return 0
	}
	var n int64
	dps := m.Sum().DataPoints()
	for i := 0; i < dps.Len(); i++ {
		n += dps.At(i).IntValue()
	}
	return n
}

// referenceTraces is what one uninterrupted instance without a journal
// emits for the batches: what the runs with moves, restarts and faults
// are compared with.
func referenceTraces(t *testing.T, bs []plog.Logs) ptrace.Traces {
	t.Helper()
	ref := newHarness(t, createDefaultConfig(), nil, nil)
	ref.start()
	for _, b := range bs {
		ref.feed(b)
	}
	defer ref.shutdown()
	return ref.allTraces()
}
