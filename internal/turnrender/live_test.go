package turnrender

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// spanKey is what must agree between live and whole emission: a span's
// identity, place and content; its times too unless either side clamped
// them (a live step is clamped into its turn's start only: its turn's end
// is not known when it goes out).
func spanKeys(td ptrace.Traces) map[string]string {
	out := map[string]string{}
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				a := s.Attributes().AsRaw()
				_, clamped := a["dsh.time.clamped"]
				delete(a, "dsh.time.clamped")
				times := fmt.Sprint(s.StartTimestamp(), s.EndTimestamp())
				if clamped {
					times = "clamped"
				}
				out[s.TraceID().String()+"/"+s.SpanID().String()] = fmt.Sprint(s.ParentSpanID(), s.Name(), a, s.Status().Code(), s.Events().Len(), times)
			}
		}
	}
	return out
}

// TestLiveStepsEqualWhole: emitting each step when it ends and the root at
// the turn's end yields the same spans, ids included, as emitting each
// turn whole — every span once.
func TestLiveStepsEqualWhole(t *testing.T) {
	for _, path := range testcorpus.All(t) {
		inputs := loadFile(t, path, "s")
		_, _, whole := run(turnengine.Config{}, inputs)
		e := turnengine.New(turnengine.Config{LiveSteps: true})
		var got []*turnengine.Turn
		for _, in := range inputs {
			e.Ingest(in, epoch)
			got = append(got, e.Drain()...) // as the connector drains after each batch
		}
		e.Flush(turnengine.CauseEndOfInput, epoch)
		got = append(got, e.Drain()...)
		live := Traces(testScope, got)
		if live.SpanCount() != whole.SpanCount() {
			t.Errorf("%s: %d spans live, %d whole", filepath.Base(path), live.SpanCount(), whole.SpanCount())
		}
		w, l := spanKeys(whole), spanKeys(live)
		for k, v := range w {
			if l[k] != v {
				t.Errorf("%s: span %s\n whole %s\n live  %s", filepath.Base(path), k, v, l[k])
			}
		}
	}
}

// TestLiveFragmentsHaveNoRoot: the finished steps of a turn still open
// render without a root span; the root follows at the turn's end.
func TestLiveFragmentsHaveNoRoot(t *testing.T) {
	inputs := loadInputs(t, strings.NewReader(testlog.Synth("s", 1, 3, false)), "s")
	e := turnengine.New(turnengine.Config{LiveSteps: true})
	for _, in := range inputs[:len(inputs)-1] { // all but the turn/end
		e.Ingest(in, epoch)
	}
	frags := e.Drain()
	if len(frags) != 3 {
		t.Fatalf("%d fragments before the turn/end, want 3 (one per step)", len(frags))
	}
	td := Traces(testScope, frags)
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				if s.ParentSpanID().IsEmpty() {
					t.Fatalf("a root span %q before the turn ended", s.Name())
				}
			}
		}
	}
	e.Ingest(inputs[len(inputs)-1], epoch)
	roots := 0
	for _, s := range Traces(testScope, e.Drain()).ResourceSpans().At(0).ScopeSpans().At(0).Spans().All() {
		if s.ParentSpanID().IsEmpty() {
			roots++
		}
	}
	if roots != 1 {
		t.Fatalf("%d root spans at the turn's end, want 1", roots)
	}
}
