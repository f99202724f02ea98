package turnrender

import (
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// crashRepaired is testdata's crash-repaired session: the agent died after
// seq 12 (tool/call call_w); dsh's repair appended seqs 13–16 (an unknown
// outcome for call_w, call_n never started, step/end, turn/end
// interrupted), then turn 2 ran.
func crashRepaired(t *testing.T) []turnengine.Input {
	for _, p := range testcorpus.Testdata(t) {
		if filepath.Base(p) == "crash-repaired.jsonl" {
			return loadFile(t, p, "s")
		}
	}
	t.Fatal("testdata/dialects/crash-repaired.jsonl not found")
	return nil
}

// TestLateCloseSpanAndMetrics: the repair arrives the next morning, long
// after the turn was closed as dangling: the turn still counts as
// dangling, the late close counts by its real end reason, and its span
// sits in the turn's trace under the dangling root, with the closers as
// its events.
func TestLateCloseSpanAndMetrics(t *testing.T) {
	in := crashRepaired(t)
	e, m := newEngine(turnengine.Config{})
	t0 := epoch
	for _, x := range in {
		if x.Event.Seq <= 12 {
			e.Ingest(x, t0)
		}
	}
	e.Sweep(t0.Add(turnmodel.DefaultDanglingTimeout + time.Minute))
	e.Drain()
	for _, x := range in {
		if x.Event.Seq > 12 {
			e.Ingest(x, t0.Add(20*time.Hour))
		}
	}
	var late []*turnengine.Turn
	for _, tn := range e.Drain() {
		if tn.Late != nil {
			late = append(late, tn)
		}
	}
	if got := counterValue(e, m, MetricTurnsClosedLate, "dsh.turn.end_reason", "interrupted"); got != 1 {
		t.Errorf("%s{interrupted} = %d, want 1", MetricTurnsClosedLate, got)
	}
	if got := counterValue(e, m, MetricTurns, "dsh.turn.end_reason", "dangling"); got != 1 {
		t.Errorf("%s{dangling} = %d, want 1 (the turn still dangled)", MetricTurns, got)
	}
	// The span: in turn 1's trace, a child of its root, once.
	td := Traces(testScope, late)
	if td.SpanCount() != 1 || spansOf(late[0]) != 1 {
		t.Fatalf("late close spans %d (sized for %d)", td.SpanCount(), spansOf(late[0]))
	}
	sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	if sp.TraceID() != TraceID("s", 1) || sp.ParentSpanID() != TurnSpanID("s", 1) || sp.SpanID() != LateCloseSpanID("s", 1) {
		t.Errorf("late close span ids trace %s parent %s", sp.TraceID(), sp.ParentSpanID())
	}
	if v, _ := sp.Attributes().Get("dsh.turn.end_reason"); v.Str() != "interrupted" {
		t.Errorf("end reason %q", v.Str())
	}
	if v, _ := sp.Attributes().Get("dsh.tool.calls_outcome_unknown"); v.Int() != 1 {
		t.Errorf("calls with unknown outcome %d", v.Int())
	}
	if sp.Events().Len() != 3 {
		t.Errorf("span events %d, want 3", sp.Events().Len())
	}
}

// counterValue is a counter's value at the point with attribute k=v.
func counterValue(e *turnengine.Engine, m *Metrics, name, k, v string) int64 {
	md := pmetric.NewMetrics()
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	m.AppendTo(sm, epoch, e.OpenTurns())
	for _, mt := range sm.Metrics().All() {
		if mt.Name() != name {
			continue
		}
		for _, dp := range mt.Sum().DataPoints().All() {
			if got, ok := dp.Attributes().Get(k); ok && got.Str() == v {
				return dp.IntValue()
			}
		}
	}
	return 0
}
