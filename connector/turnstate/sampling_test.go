package turnstate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/sampling"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// mixedTurns are a session's turns of mixed outcomes (testlog.MixedTurns).
var mixedTurns = testlog.MixedTurns()

// wentWrong reports whether mixedTurns[n-1] must be kept whatever the ratio.
func wentWrong(n int64) bool { return n == 2 || n == 4 || n == 5 }

// sessionRecords writes a session of turns and reads it as the receiver
// does.
func sessionRecords(t *testing.T, session string, steps int, turns []testlog.Turn) plog.Logs {
	p := filepath.Join(t.TempDir(), session+".jsonl")
	require.NoError(t, os.WriteFile(p, []byte(testlog.SynthTurns(session, steps, turns)), 0o644))
	ld, _ := buildRecords(t, p, session)
	return ld
}

// traceSpans groups a run's spans by trace id.
func traceSpans(td ptrace.Traces) map[string][]ptrace.Span {
	out := map[string][]ptrace.Span{}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			for _, sp := range sss.At(j).Spans().All() {
				out[sp.TraceID().String()] = append(out[sp.TraceID().String()], sp)
			}
		}
	}
	return out
}

// feedInterleaved feeds the sessions' batches round by round, one batch
// of each session in turn, as many live sessions arrive.
func feedInterleaved(h *harness, sessions [][]plog.Logs) {
	for round := 0; ; round++ {
		fed := false
		for _, bs := range sessions {
			if round < len(bs) {
				h.feed(bs[round])
				fed = true
			}
		}
		if !fed {
			return
		}
	}
}

func samplingConfig(ratio float64) *Config {
	cfg := createDefaultConfig()
	cfg.Sampling.SessionRatio = ratio
	return cfg
}

// With session_ratio 0.3 over 60 sessions of mixed outcomes, live steps
// on: every turn that went wrong goes out whole (the steps held back for
// a dropped session included) at probability 1 (th:0); every turn of the
// sessions the hash keeps goes out whole with the ratio's threshold; no
// span of any other turn goes out; and the metrics are those of a run
// without sampling.
func TestSamplingKeepsWhatWentWrong(t *testing.T) {
	var sessions [][]plog.Logs
	var ids []string
	for i := range 60 {
		id := fmt.Sprintf("mixed-%02d", i)
		ids = append(ids, id)
		bs := batches(sessionRecords(t, id, 3, mixedTurns), 7)
		for _, b := range bs {
			b.MarkReadOnly()
		}
		sessions = append(sessions, bs)
	}
	ref := newHarness(t, createDefaultConfig(), nil, nil)
	ref.start()
	feedInterleaved(ref, sessions)
	ref.shutdown()

	cfg := samplingConfig(0.3)
	h := newHarness(t, cfg, nil, nil)
	h.start()
	feedInterleaved(h, sessions)
	assert.Zero(t, h.selfGauge(metadata.MetricHeldSpans), "nothing held once every turn closed")
	h.shutdown()

	s := sampling.New(cfg.Sampling)
	want := traceSpans(ref.allTraces())
	got := traceSpans(h.allTraces())
	keptSessions, kept, dropped := 0, map[string]int{}, 0
	for _, id := range ids {
		sessionKept := s.SessionKept(id)
		if sessionKept {
			keptSessions++
		}
		for n := int64(1); n <= int64(len(mixedTurns)); n++ {
			tid := turnrender.TraceID(id, n).String()
			require.NotEmpty(t, want[tid], "%s turn %d in the reference", id, n)
			if !sessionKept && !wentWrong(n) {
				require.Empty(t, got[tid], "%s turn %d: dropped, yet %d spans went out", id, n, len(got[tid]))
				dropped++
				continue
			}
			require.Len(t, got[tid], len(want[tid]), "%s turn %d is whole", id, n)
			state := s.TraceState(id)
			if !sessionKept {
				state = "ot=th:0"
			}
			for _, sp := range got[tid] {
				wantState := state
				if sp.ParentSpanID().IsEmpty() && wentWrong(n) {
					wantState = "ot=th:0" // the root says why it was kept
				}
				require.Equal(t, wantState, sp.TraceState().AsRaw(), "%s turn %d span %s", id, n, sp.Name())
			}
			if wentWrong(n) {
				kept["what went wrong"]++
			} else {
				kept["session"]++
			}
		}
	}
	t.Logf("%d of %d sessions kept; turns kept %v, dropped %d", keptSessions, len(ids), kept, dropped)
	require.Greater(t, keptSessions, 5)
	require.Less(t, keptSessions, 35)
	require.Equal(t, len(want), len(got)+dropped, "every trace is kept or dropped")

	require.NoError(t, pmetrictest.CompareMetrics(ref.lastMetrics(), h.lastMetrics(),
		pmetrictest.IgnoreStartTimestamp(), pmetrictest.IgnoreTimestamp(), pmetrictest.IgnoreMetricDataPointsOrder()),
		"every metric counts every turn, sampled or not")

	perSession := int64(len(mixedTurns))
	assert.Equal(t, int64(len(ids)), h.selfSum(metadata.MetricTurnsSampled, "reason=outcome", "sampled=true")/2, "two outcomes per session")
	assert.Equal(t, int64(len(ids)), h.selfSum(metadata.MetricTurnsSampled, "reason=finding", "sampled=true"))
	assert.Equal(t, int64(keptSessions)*(perSession-3), h.selfSum(metadata.MetricTurnsSampled, "reason=session", "sampled=true"))
	assert.Equal(t, int64(dropped), h.selfSum(metadata.MetricTurnsSampled, "reason=ratio", "sampled=false"))
	assert.Zero(t, h.selfSum(metadata.MetricHeldDropped))
}

// The held steps are bounded: past max_held_spans the oldest held turns'
// steps are let go of and counted, and a turn kept later goes out
// without them — root and the steps still held.
func TestSamplingHeldBound(t *testing.T) {
	cfg := samplingConfig(0)
	cfg.Sampling.MaxHeldSpans = 7 // two steps of three spans
	h := newHarness(t, cfg, nil, nil)
	h.start()
	err := `{"kind":"error","error":{"message":"x","code":"UNKNOWN"}}`
	for _, b := range batches(sessionRecords(t, "bounded", 4, []testlog.Turn{{End: err}}), 3) {
		h.feed(b)
	}
	h.shutdown()
	spans := traceSpans(h.allTraces())[turnrender.TraceID("bounded", 1).String()]
	require.Len(t, spans, 1+2*3, "the root and the two steps still held")
	assert.Equal(t, int64(2), h.selfSum(metadata.MetricHeldDropped), "two steps let go of")
}

// A step larger than the bound alone is let go of without touching what
// other sessions hold.
func TestSamplingHeldBoundOversizedStep(t *testing.T) {
	cfg := samplingConfig(0)
	cfg.Sampling.MaxHeldSpans = 4
	h := newHarness(t, cfg, nil, nil)
	h.start()
	small := sessionRecords(t, "small", 1, []testlog.Turn{{}}) // one step of three spans, turn open
	h.feed(small)
	require.Equal(t, int64(3), h.selfGauge(metadata.MetricHeldSpans))
	// A turn whose one step has five tool calls: seven spans.
	calls := make([]testlog.Call, 5)
	for i := range calls {
		calls[i] = testlog.Call{Tool: "read", Args: fmt.Sprintf(`{"n":%d}`, i), Result: "ok"}
	}
	h.feed(oneStepManyCalls(t, "big", calls))
	assert.Equal(t, int64(3), h.selfGauge(metadata.MetricHeldSpans), "the small session's step is still held")
	assert.Equal(t, int64(1), h.selfSum(metadata.MetricHeldDropped), "the oversized step let go of")
	h.shutdown()
}

// A dropped session's held steps survive a crash after any batch: the
// journal holds the open turn, the restore rebuilds the steps it held, and
// the turn that then goes wrong goes out whole.
func TestSamplingHeldAcrossCrash(t *testing.T) {
	cfg := samplingConfig(0)
	err := `{"kind":"aborted","reason":{"kind":"user"}}`
	turns := []testlog.Turn{{End: testlog.Completed}, {End: err}}
	bs := batches(sessionRecords(t, "crashing", 3, turns), 4)

	ref := newHarness(t, createDefaultConfig(), nil, nil)
	ref.start()
	for _, b := range bs {
		ref.feed(b)
	}
	ref.shutdown()
	want := traceSpans(ref.allTraces())[turnrender.TraceID("crashing", 2).String()]

	heldAtKill := 0
	for k := 1; k < len(bs); k++ {
		t.Run(fmt.Sprintf("kill-after-%d-of-%d", k, len(bs)), func(t *testing.T) {
			dir := t.TempDir()
			run1 := journaledWith(t, dir, cfg)
			for _, b := range bs[:k] {
				run1.feed(b)
			}
			held := run1.selfGauge(metadata.MetricHeldSpans)
			if held > 0 {
				heldAtKill++
			}
			run1.crash()
			run2 := journaledWith(t, dir, cfg)
			require.Equal(t, held, run2.selfGauge(metadata.MetricHeldSpans), "the restore holds what was held")
			for _, b := range bs[max(0, k-1):] {
				run2.feed(b)
			}
			all := traceSpans(mergeTraces(run1, run2))
			require.Empty(t, all[turnrender.TraceID("crashing", 1).String()], "the clean turn is dropped")
			got := all[turnrender.TraceID("crashing", 2).String()]
			require.Len(t, got, len(want), "the aborted turn is whole (held %d spans at the kill)", held)
			for _, sp := range got {
				require.Equal(t, "ot=th:0", sp.TraceState().AsRaw())
			}
			run2.shutdown()
		})
	}
	require.GreaterOrEqual(t, heldAtKill, 2, "some kills came while steps were held")
}

// journaledWith is journaled with cfg (a copy, its storage set).
func journaledWith(t *testing.T, dir string, cfg *Config) *harness {
	t.Helper()
	c := *cfg
	id := journalStorageID
	c.Storage = &id
	h := newHarness(t, &c, nil, nil)
	host := realStorage(t, dir)
	require.NoError(t, h.toMt.Start(context.Background(), host))
	require.NoError(t, h.toTr.Start(context.Background(), host))
	return h
}

// A configuration error names the key.
func TestSamplingConfigInvalid(t *testing.T) {
	cfg := samplingConfig(1.2)
	require.ErrorContains(t, cfg.Validate(), "sampling::session_ratio")
	cfg = samplingConfig(0.5)
	cfg.Sampling.MaxHeldSpans = 0
	require.ErrorContains(t, cfg.Validate(), "sampling::max_held_spans")
}

// What holding a dropped session's live steps costs: 200 sessions, each
// with an open turn of 20 finished steps, every session dropped (ratio 0):
// the heap with their steps held, against the same connector once their
// turn/ends let go of them, per held span. docs/operating.md sizes
// max_held_spans with it.
func TestSamplingHeldMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	const sessions, steps = 200, 20
	var open, ends []plog.Logs
	for i := range sessions {
		id := fmt.Sprintf("held-%03d", i)
		ld := sessionRecords(t, id, steps, []testlog.Turn{{End: testlog.Completed}})
		bs := batches(ld, ld.LogRecordCount()-1) // all but the turn/end, then it
		require.Len(t, bs, 2)
		open, ends = append(open, bs[0]), append(ends, bs[1])
	}
	heapNow := func() int64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	cfg := samplingConfig(0)
	cfg.Sampling.MaxHeldSpans = 1 << 30
	h := newHarness(t, cfg, consumertest.NewNop(), consumertest.NewNop())
	h.start()
	for _, b := range open {
		h.feed(b)
	}
	held := h.selfGauge(metadata.MetricHeldSpans)
	holding := heapNow()
	for _, b := range ends {
		h.feed(b)
	}
	require.Zero(t, h.selfGauge(metadata.MetricHeldSpans))
	released := heapNow()
	runtime.KeepAlive(h)
	h.shutdown()
	require.Equal(t, int64(sessions*steps*3), held, "every finished step held: step, chat and tool spans")
	per := float64(holding-released) / float64(held)
	t.Logf("%d held spans: heap %d bytes holding them, %d once the turns ended: %.0f bytes per held span",
		held, holding, released, per)
	require.Less(t, per, 2048.0, "bytes per held span")
}

// oneStepManyCalls is a session whose open turn has one finished step
// calling every tool of calls at once, read as the receiver does.
func oneStepManyCalls(t *testing.T, session string, calls []testlog.Call) plog.Logs {
	p := filepath.Join(t.TempDir(), session+".jsonl")
	require.NoError(t, os.WriteFile(p, []byte(testlog.SynthParallel(session, calls)), 0o644))
	ld, _ := buildRecords(t, p, session)
	return ld
}
