package turnstate

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
	"github.com/dshtrace/dshtrace/sessionlog"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Every corpus file, as the receiver's records in small batches through the
// connector pair, gives zero violations and exactly the turns (spans and
// ids) of turnengine.Replay on the file; each event is counted once.
func TestCorpusThroughConnector(t *testing.T) {
	for _, l := range testcorpus.Logs(t) {
		t.Run(l.Name, func(t *testing.T) {
			path := l.Path
			ld, events := buildRecords(t, path, "s")
			h := newHarness(t, createDefaultConfig(), nil, nil)
			h.start()
			for _, b := range batches(ld, 5) {
				h.feed(b)
			}
			h.shutdown()

			stats := h.core().engine.Stats()
			assert.Zero(t, stats.Violations, "violations")
			md := h.lastMetrics()
			_, hasViolations := findMetric(md, turnrender.MetricSessionViolations)
			assert.False(t, hasViolations, "dsh.session.violations emitted")
			assert.EqualValues(t, events, sumTotal(md, turnrender.MetricSessionEvents), "each event counted once")

			e, want := replay(t, path, "s")
			got := h.allTraces()
			require.NoError(t, ptracetest.CompareTraces(normalizeDangling(want), normalizeDangling(got),
				ptracetest.IgnoreResourceSpansOrder(), ptracetest.IgnoreSpansOrder()))
			assert.Equal(t, len(turnSpans(want)), len(turnSpans(got)))
			assert.Equal(t, e.Stats().Dangling[turnengine.CauseEndOfInput], stats.Dangling[turnengine.CauseShutdown],
				"turns open at the end are closed at shutdown")
			assert.Equal(t, stats.Dangling[turnengine.CauseShutdown], h.selfSum(metadata.MetricTurnsDangling, "cause=shutdown"))
		})
	}
}

var goldenCases = []struct {
	name, path string
}{
	{"seed-sample", "../seed/sample.jsonl"},
	{"v0-parallel-tool-calls", "v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl"},
	{"v0-pin-turn", "v0/packages/test-support/acp-snapshot/tests/fixtures/suite/pin-turn/session.jsonl"},
	{"v4-tool-error-details", "v4/snapshots/sdk/tool-error-details/session.v4.jsonl"},
	{"wire-v0-provider-retry", "wire/v0/examples/headless-agent/tests/snapshots/provider-retry/stream-json.expected.jsonl"},
}

// Golden traces (exact ids) and the shutdown metrics flush for a few
// files fed as records in batches of three. Regenerate with
// `go test ./connector/turnstate -run TestGolden -update` and read the diff.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			ld, _ := buildRecords(t, corpusPath(t, c.path), "sample")
			h := newHarness(t, createDefaultConfig(), nil, nil)
			h.start()
			for _, b := range batches(ld, 3) {
				h.feed(b)
			}
			h.shutdown()
			td, md := regroup(h.allTraces(), false), h.lastMetrics()

			tracesFile := filepath.Join("testdata", "golden", c.name+".traces.yaml")
			metricsFile := filepath.Join("testdata", "golden", c.name+".metrics.yaml")
			if *update {
				require.NoError(t, golden.WriteTracesToFile(tracesFile, td))
				require.NoError(t, golden.WriteMetricsToFile(metricsFile, md))
			}
			want, err := golden.ReadTraces(tracesFile)
			require.NoError(t, err)
			require.NoError(t, ptracetest.CompareTraces(want, td, ptracetest.IgnoreSpansOrder()), "traces differ from %s", tracesFile)
			wantM, err := golden.ReadMetrics(metricsFile)
			require.NoError(t, err)
			require.NoError(t, pmetrictest.CompareMetrics(wantM, md, pmetrictest.IgnoreMetricDataPointsOrder(),
				pmetrictest.IgnoreStartTimestamp(), pmetrictest.IgnoreTimestamp()), "metrics differ from %s", metricsFile)
		})
	}
}

// A turn's events may arrive in any batching and batch order: batches
// delivered last-first give the same spans as in order, since the engine
// holds early events until the missing seqs arrive.
func TestBatchOrderDoesNotMatter(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			ld, _ := buildRecords(t, corpusPath(t, c.path), "sample")
			inOrder := newHarness(t, createDefaultConfig(), nil, nil)
			inOrder.feed(ld)
			inOrder.shutdown()

			reversed := newHarness(t, createDefaultConfig(), nil, nil)
			bs := batches(ld, 2)
			slices.Reverse(bs)
			for _, b := range bs {
				reversed.feed(b)
			}
			reversed.shutdown()
			require.NoError(t, ptracetest.CompareTraces(normalizeDangling(inOrder.allTraces()), normalizeDangling(reversed.allTraces()),
				ptracetest.IgnoreResourceSpansOrder(), ptracetest.IgnoreSpansOrder()))
			assert.Zero(t, reversed.selfSum(metadata.MetricEventsDropped, "reason=duplicate"))
		})
	}
}

// dsh v4's own OTLP log export (event name session-log, the envelope in
// attribute content, no header) gives the same traces as the file.
func TestDshV4Export(t *testing.T) {
	for _, rel := range []string{"v4/snapshots/sdk/tool-error-details/session.v4.jsonl",
		"v4/snapshots/sdk/max-tokens-continue/session.v4.jsonl", "v4/snapshots/session/error-finish/writer.expected.jsonl"} {
		t.Run(rel, func(t *testing.T) {
			path := corpusPath(t, rel)
			session, envs := testlog.Envelopes(t, path)
			ld := plog.NewLogs()
			rl := ld.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr("service.name", "dsh")
			lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
			for _, env := range envs {
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
			h := newHarness(t, createDefaultConfig(), nil, nil)
			for _, b := range batches(ld, 4) {
				h.feed(b)
			}
			h.shutdown()
			_, want := replay(t, path, session)
			require.NoError(t, ptracetest.CompareTraces(normalizeDangling(want), normalizeDangling(h.allTraces()),
				ptracetest.IgnoreResourceSpansOrder(), ptracetest.IgnoreSpansOrder()))
			assert.Zero(t, h.core().engine.Stats().Violations)
		})
	}
}

// dsh v0's own export (body = data, event.type/event.seq attributes, only
// the first chunk of each step) gives the file's turns, steps, tool calls
// and committed model calls; seq gaps are normal there and not awaited.
func TestDshV0Export(t *testing.T) {
	for _, rel := range []string{"v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl",
		"v0/examples/acp-agent/tests/snapshots/code-mode-turn/session.jsonl"} {
		t.Run(rel, func(t *testing.T) {
			path := corpusPath(t, rel)
			session, envs := testlog.Envelopes(t, path)
			ld := plog.NewLogs()
			lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
			firstChunk := map[[2]float64]bool{}
			for _, env := range envs {
				if env["type"] == "assistant/chunk" {
					d := env["data"].(map[string]any)
					k := [2]float64{d["turn"].(float64), d["step"].(float64)}
					if firstChunk[k] {
						continue
					}
					firstChunk[k] = true
				}
				lr := lrs.AppendEmpty()
				require.NoError(t, lr.Body().SetEmptyMap().FromRaw(env["data"].(map[string]any)))
				lr.SetTimestamp(pcommon.Timestamp(int64(env["time"].(float64)) * int64(time.Millisecond)))
				lr.Attributes().PutStr("session.id", session)
				lr.Attributes().PutStr("event.type", env["type"].(string))
				lr.Attributes().PutInt("event.seq", int64(env["seq"].(float64)))
			}
			h := newHarness(t, createDefaultConfig(), nil, nil)
			h.start()
			for _, b := range batches(ld, 4) {
				h.feed(b)
			}
			// Gappy seqs are applied at once: the turns are out before shutdown.
			got := h.allTraces()
			h.shutdown()
			_, want := replay(t, path, session)
			assert.Equal(t, spanCounts(want), spanCounts(got))
			require.NotEmpty(t, turnSpans(got))
			for i, sp := range turnSpans(got) {
				w := turnSpans(want)[i]
				assert.Equal(t, w.TraceID(), sp.TraceID())
				assert.Equal(t, w.SpanID(), sp.SpanID())
				r, _ := sp.Attributes().Get("dsh.turn.end_reason")
				wr, _ := w.Attributes().Get("dsh.turn.end_reason")
				assert.Equal(t, wr.AsString(), r.AsString())
			}
			assert.Zero(t, h.selfSum(metadata.MetricGapsSkipped))
		})
	}
}

// lastTurnEnd returns the index of the record of the last turn/end.
func lastTurnEnd(t *testing.T, lrs plog.LogRecordSlice) int {
	t.Helper()
	for i := lrs.Len() - 1; i >= 0; i-- {
		if typ, ok := lrs.At(i).Attributes().Get(logrecord.AttrEventType); ok && typ.Str() == "turn/end" {
			return i
		}
	}
	t.Fatal("no turn/end record")
	return -1
}

// splitAt splits a single-session batch into records [0,i) and [i,n).
func splitAt(ld plog.Logs, i int) (plog.Logs, plog.Logs) {
	bs := batches(ld, i)
	rest := plog.NewLogs()
	for _, b := range bs[1:] {
		b.ResourceLogs().MoveAndAppendTo(rest.ResourceLogs())
	}
	return bs[0], rest
}

// A turn silent for dangling_timeout (arrival clock) is closed as dangling
// with cause timeout at the next sweep, not before; its turn/end arriving
// afterwards is late: counted, and the turn is not emitted again.
func TestDanglingByTimeout(t *testing.T) {
	ld, _ := buildRecords(t, corpusPath(t, "v4/snapshots/sdk/tool-error-details/session.v4.jsonl"), "")
	end := lastTurnEnd(t, ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords())
	head, tail := splitAt(ld, end)

	cfg := createDefaultConfig()
	cfg.DanglingTimeout = time.Minute
	h := newHarness(t, cfg, nil, nil)
	h.feed(head)
	before := len(turnSpans(h.allTraces()))
	assert.EqualValues(t, 1, h.selfGauge(metadata.MetricTurnsOpen))

	h.clock.Advance(59 * time.Second)
	h.core().sweep(context.Background())
	assert.Len(t, turnSpans(h.allTraces()), before, "closed before its timeout")

	h.clock.Advance(2 * time.Second)
	h.core().sweep(context.Background())
	spans := turnSpans(h.allTraces())
	require.Len(t, spans, before+1)
	dangling := spans[len(spans)-1]
	cause, _ := dangling.Attributes().Get("dsh.dangling.cause")
	reason, _ := dangling.Attributes().Get("dsh.turn.end_reason")
	assert.Equal(t, "timeout", cause.Str())
	assert.Equal(t, "dangling", reason.Str())
	assert.Equal(t, ptrace.StatusCodeError, dangling.Status().Code())
	assert.EqualValues(t, 1, h.selfSum(metadata.MetricTurnsDangling, "cause=timeout"))
	assert.EqualValues(t, 0, h.selfGauge(metadata.MetricTurnsOpen))

	// The turn/end comes after all: the turn is not emitted again, but one
	// late-close span in its trace, under its dangling root, tells how it
	// really ended.
	spanCount := h.traces.SpanCount()
	h.feed(tail)
	require.Equal(t, spanCount+1, h.traces.SpanCount(), "a closed turn is emitted once, plus its late close")
	var late ptrace.Span
	for _, td := range h.traces.AllTraces() {
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					if v, ok := sp.Attributes().Get("dsh.turn.closed_late"); ok && v.Bool() {
						late = sp
					}
				}
			}
		}
	}
	require.NotEqual(t, pcommon.SpanID{}, late.SpanID(), "no late-close span")
	assert.Equal(t, dangling.TraceID(), late.TraceID())
	assert.Equal(t, dangling.SpanID(), late.ParentSpanID())
	lateReason, _ := late.Attributes().Get("dsh.turn.end_reason")
	assert.NotEqual(t, "dangling", lateReason.Str())
	lateCause, _ := late.Attributes().Get("dsh.dangling.cause")
	assert.Equal(t, "timeout", lateCause.Str())
	assert.EqualValues(t, 1, h.selfSum(metadata.MetricTurnsClosedLate))
	h.shutdown()
	assert.Equal(t, spanCount+1, h.traces.SpanCount())
	assert.Zero(t, h.selfSum(metadata.MetricTurnsDangling, "cause=shutdown"))
}

// A turn open at shutdown is flushed as dangling with cause shutdown, with
// the final metrics, once — whichever instance is shut down first.
func TestDanglingAtShutdown(t *testing.T) {
	ld, _ := buildRecords(t, corpusPath(t, "v4/snapshots/sdk/tool-error-details/session.v4.jsonl"), "")
	head, _ := splitAt(ld, lastTurnEnd(t, ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()))
	h := newHarness(t, createDefaultConfig(), nil, nil)
	h.start()
	h.feed(head)
	before := len(turnSpans(h.allTraces()))
	metricsBefore := len(h.metrics.AllMetrics())

	require.NoError(t, h.toMt.Shutdown(context.Background())) // the non-ingester first
	spans := turnSpans(h.allTraces())
	require.Len(t, spans, before+1)
	cause, _ := spans[len(spans)-1].Attributes().Get("dsh.dangling.cause")
	assert.Equal(t, "shutdown", cause.Str())
	assert.Len(t, h.metrics.AllMetrics(), metricsBefore+1, "final metrics flushed at shutdown")
	md := h.lastMetrics()
	m, ok := findMetric(md, turnrender.MetricTurns)
	require.True(t, ok)
	var dangling int64
	for i := 0; i < m.Sum().DataPoints().Len(); i++ {
		dp := m.Sum().DataPoints().At(i)
		if r, _ := dp.Attributes().Get("dsh.turn.end_reason"); r.Str() == "dangling" {
			dangling += dp.IntValue()
		}
	}
	assert.EqualValues(t, 1, dangling)

	require.NoError(t, h.toTr.Shutdown(context.Background()))
	assert.Len(t, turnSpans(h.allTraces()), before+1, "the second shutdown flushes nothing")
	assert.Len(t, h.metrics.AllMetrics(), metricsBefore+1)
	assert.ErrorIs(t, h.toTr.ConsumeLogs(context.Background(), head), errShutdown)
}

// The loop runs on the real clock: it sweeps dangling turns and flushes
// metrics on its tickers, and stops at shutdown (goleak checks).
func TestLoopSweepsAndFlushes(t *testing.T) {
	ld, _ := buildRecords(t, corpusPath(t, "v4/snapshots/sdk/tool-error-details/session.v4.jsonl"), "")
	head, _ := splitAt(ld, lastTurnEnd(t, ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()))
	cfg := createDefaultConfig()
	cfg.DanglingTimeout = 200 * time.Millisecond
	cfg.GapTimeout = 10 * time.Millisecond
	cfg.MetricsFlushInterval = 50 * time.Millisecond
	h := newHarness(t, cfg, nil, nil)
	c := h.core()
	c.mu.Lock()
	c.clock = time.Now
	c.mu.Unlock()
	h.start()
	h.feed(head)
	require.Eventually(t, func() bool { return h.selfSum(metadata.MetricTurnsDangling, "cause=timeout") == 1 },
		5*time.Second, 10*time.Millisecond, "the loop closes the silent turn")
	require.Eventually(t, func() bool { return len(h.metrics.AllMetrics()) >= 2 },
		5*time.Second, 10*time.Millisecond, "the loop flushes metrics")
	h.shutdown()
	assert.Zero(t, h.selfSum(metadata.MetricTurnsDangling, "cause=shutdown"))
}

// A traces consumer that refuses the closed turns does not lose them:
// ConsumeLogs fails (the sender retries), the turns are held and offered
// again before any later batch is applied, and every later batch is
// refused, unapplied, until they are accepted; then the retried batch is
// dropped as duplicates and the turns go out once. A refused metrics flush
// is counted and carried by the next flush.
func TestRefusedTracesHeldAndBatchesRefused(t *testing.T) {
	ld, events := buildRecords(t, corpusPath(t, "v4/snapshots/sdk/tool-error-details/session.v4.jsonl"), "")
	other, _ := buildRecords(t, corpusPath(t, "v4/snapshots/acp/cancel/session.v4.jsonl"), "other")
	traces := &switchableTraces{err: errors.New("queue is full")}
	refuse := consumertest.NewErr(errors.New("queue is full"))
	h := newHarness(t, createDefaultConfig(), traces, refuse)
	h.start()
	ld.MarkReadOnly()
	other.MarkReadOnly()
	require.ErrorIs(t, h.toTr.ConsumeLogs(context.Background(), ld), errHeld)
	require.NoError(t, h.toMt.ConsumeLogs(context.Background(), ld), "the sibling instance does not ingest")
	assert.EqualValues(t, 1, h.selfSum(metadata.MetricEmitFailures, "signal=traces"))
	held := h.core().gauges.heldTurns.Load()
	require.Positive(t, held)
	assert.EqualValues(t, held, h.selfGauge(metadata.MetricTurnsHeld))

	// Still refused: the next batch is refused unapplied, the held turns
	// offered once more.
	require.ErrorIs(t, h.toTr.ConsumeLogs(context.Background(), other), errHeld)
	assert.EqualValues(t, 2, h.selfSum(metadata.MetricEmitFailures, "signal=traces"))
	assert.Zero(t, h.core().engine.Stats().Events-int64(events), "the refused batch was not applied")

	// Accepted again: the held turns go out first, the retried batch is
	// all duplicates, the other batch applies.
	traces.set(nil)
	require.NoError(t, h.toTr.ConsumeLogs(context.Background(), ld))
	assert.EqualValues(t, events, h.selfSum(metadata.MetricEventsDropped, "reason=duplicate"))
	require.NoError(t, h.toTr.ConsumeLogs(context.Background(), other))
	assert.Zero(t, h.selfGauge(metadata.MetricTurnsHeld))
	closed := h.core().engine.Stats().TurnsClosed
	require.Positive(t, closed)
	assert.Len(t, turnSpans(traces.all()), int(closed), "every closed turn emitted once")

	h.core().flushMetrics(context.Background())
	assert.EqualValues(t, 1, h.selfSum(metadata.MetricEmitFailures, "signal=metrics"))
	c := h.core()
	c.mu.Lock()
	md := c.metricsLocked(epoch)
	c.mu.Unlock()
	assert.Positive(t, sumTotal(md, turnrender.MetricSessionEvents))
	h.shutdown()
}

// switchableTraces refuses with err while it is set, else keeps what it
// is given.
type switchableTraces struct {
	mu   sync.Mutex
	err  error
	sink consumertest.TracesSink
}

func (s *switchableTraces) set(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *switchableTraces) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (s *switchableTraces) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.sink.ConsumeTraces(ctx, td)
}

func (s *switchableTraces) all() ptrace.Traces {
	out := ptrace.NewTraces()
	for _, td := range s.sink.AllTraces() {
		td.ResourceSpans().MoveAndAppendTo(out.ResourceSpans())
	}
	return out
}

// The metrics flush carries every docs/design.md §5 metric that the input gives
// rise to (dsh.usage.reasoning_tokens only comes with providers that report
// reasoning tokens, and no corpus file does), cumulative (monotonic sums, stable start times, values that
// never decrease), with exemplars on histograms.
func TestMetricsFlush(t *testing.T) {
	h := newHarness(t, createDefaultConfig(), nil, nil)
	for _, rel := range []string{
		"v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl",
		"v0/examples/acp-agent/tests/snapshots/error-finish/session.jsonl",
		"v4/snapshots/sdk/tool-error-details/session.v4.jsonl",
		"v4/snapshots/sdk/max-tokens-continue/session.v4.jsonl",
		"wire/v0/examples/headless-agent/tests/snapshots/provider-retry/stream-json.expected.jsonl",
		"v0/packages/test-support/acp-snapshot/tests/fixtures/suite/pin-turn/session.jsonl",
	} {
		ld, _ := buildRecords(t, corpusPath(t, rel), "s")
		h.feed(ld)
	}
	// A session record that does not decode: a violation.
	bad := plog.NewLogs()
	lr := logrecord.NewResourceLogs(bad, "github.com/dshtrace/dshtrace/receiver/sessionevent", "broken", nil).AppendEmpty()
	lr.SetEventName(logrecord.EventNameEvent)
	lr.Attributes().PutStr(logrecord.AttrSessionID, "broken")
	lr.Body().SetStr(`{"type":"turn/start","seq":0,`)
	h.feed(bad)

	h.core().flushMetrics(context.Background())
	first := h.lastMetrics()
	h.clock.Advance(time.Minute)
	h.feed(func() plog.Logs {
		ld, _ := buildRecords(t, corpusPath(t, "v0/examples/acp-agent/tests/snapshots/cancel/session.jsonl"), "s")
		return ld
	}())
	h.shutdown()
	second := h.lastMetrics()

	for _, name := range []string{
		turnrender.MetricTurns, turnrender.MetricTurnDuration, turnrender.MetricTurnSteps, turnrender.MetricTurnsOpen,
		turnrender.MetricUsageTokens, turnrender.MetricInferenceDuration, turnrender.MetricAgentDuration,
		turnrender.MetricInferenceTTFC, turnrender.MetricToolCalls, turnrender.MetricToolDuration,
		turnrender.MetricSessionEvents, turnrender.MetricSessionViolations,
	} {
		m, ok := findMetric(second, name)
		if !assert.True(t, ok, "%s missing from the flush", name) {
			continue
		}
		switch m.Type() {
		case pmetric.MetricTypeSum:
			assert.True(t, m.Sum().IsMonotonic(), name)
			assert.Equal(t, pmetric.AggregationTemporalityCumulative, m.Sum().AggregationTemporality(), name)
		case pmetric.MetricTypeHistogram:
			assert.Equal(t, pmetric.AggregationTemporalityCumulative, m.Histogram().AggregationTemporality(), name)
			dps := m.Histogram().DataPoints()
			exemplars := 0
			for i := 0; i < dps.Len(); i++ {
				for j := 0; j < dps.At(i).Exemplars().Len(); j++ {
					ex := dps.At(i).Exemplars().At(j)
					assert.False(t, ex.TraceID().IsEmpty(), name)
					assert.False(t, ex.SpanID().IsEmpty(), name)
					exemplars++
				}
			}
			// Exemplars are cleared at each flush; the first flush had every
			// histogram's.
			if fm, ok := findMetric(first, name); ok {
				for i := 0; i < fm.Histogram().DataPoints().Len(); i++ {
					assert.Positive(t, fm.Histogram().DataPoints().At(i).Exemplars().Len(), "%s point %d has no exemplar", name, i)
				}
			}
		case pmetric.MetricTypeGauge:
			assert.Equal(t, turnrender.MetricTurnsOpen, name)
		default:
			t.Errorf("%s: unexpected type %s", name, m.Type())
		}
	}
	v, _ := findMetric(second, turnrender.MetricSessionViolations)
	code, _ := v.Sum().DataPoints().At(0).Attributes().Get("dsh.violation")
	assert.Equal(t, sessionlog.CodeJSONInvalid, code.Str())

	// Cumulative: the second flush keeps every series' start time, and no
	// value went down.
	for _, name := range []string{turnrender.MetricTurns, turnrender.MetricSessionEvents, turnrender.MetricUsageTokens} {
		fm, _ := findMetric(first, name)
		sm, _ := findMetric(second, name)
		starts := map[string]pcommon.Timestamp{}
		values := map[string]int64{}
		for i := 0; i < fm.Sum().DataPoints().Len(); i++ {
			dp := fm.Sum().DataPoints().At(i)
			k := resourceKeyMap(dp.Attributes())
			starts[k], values[k] = dp.StartTimestamp(), dp.IntValue()
		}
		for i := 0; i < sm.Sum().DataPoints().Len(); i++ {
			dp := sm.Sum().DataPoints().At(i)
			k := resourceKeyMap(dp.Attributes())
			if st, ok := starts[k]; ok {
				assert.Equal(t, st, dp.StartTimestamp(), "%s %s start moved", name, k)
				assert.GreaterOrEqual(t, dp.IntValue(), values[k], "%s %s went down", name, k)
			}
			assert.GreaterOrEqual(t, dp.Timestamp(), dp.StartTimestamp(), "%s %s", name, k)
		}
	}
	assert.Greater(t, sumTotal(second, turnrender.MetricTurns), sumTotal(first, turnrender.MetricTurns))
}

func resourceKeyMap(m pcommon.Map) string {
	r := pcommon.NewResource()
	m.CopyTo(r.Attributes())
	return resourceKey(r)
}

// What ConsumeLogs reads is copied out: clobbering the batch after the
// call changes nothing in what is emitted later.
func TestInputNotRetained(t *testing.T) {
	path := corpusPath(t, "v4/snapshots/sdk/tool-error-details/session.v4.jsonl")
	ld, _ := buildRecords(t, path, "")
	head, tail := splitAt(ld, lastTurnEnd(t, ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()))
	h := newHarness(t, createDefaultConfig(), nil, nil)
	require.NoError(t, h.toTr.ConsumeLogs(context.Background(), head))
	clobber := func(ld plog.Logs) {
		lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		for i := 0; i < lrs.Len(); i++ {
			lrs.At(i).Body().SetStr(`{"type":"x","seq":999999,"time":0,"data":{}}`)
			lrs.At(i).Attributes().Clear()
		}
		ld.ResourceLogs().At(0).Resource().Attributes().Clear()
	}
	clobber(head)
	require.NoError(t, h.toTr.ConsumeLogs(context.Background(), tail))
	clobber(tail)
	h.shutdown()
	_, want := replay(t, path, "")
	require.NoError(t, ptracetest.CompareTraces(normalizeDangling(want), normalizeDangling(h.allTraces()),
		ptracetest.IgnoreResourceSpansOrder(), ptracetest.IgnoreSpansOrder()))
}
