package turnengine

import (
	"fmt"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
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
		_, whole := run(Config{}, inputs)
		e := New(Config{LiveSteps: true})
		var got []*Turn
		for _, in := range inputs {
			e.Ingest(in, epoch)
			got = append(got, e.Drain()...) // as the connector drains after each batch
		}
		e.Flush(CauseEndOfInput, epoch)
		got = append(got, e.Drain()...)
		live := Traces(got)
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

// TestLiveStepsShowRunningTurn: the finished steps of a turn still open
// are out before its turn/end; the root follows with the turn's totals.
func TestLiveStepsShowRunningTurn(t *testing.T) {
	inputs := loadInputs(t, strings.NewReader(testlog.Synth("s", 1, 3, false)), "s")
	e := New(Config{LiveSteps: true})
	for _, in := range inputs[:len(inputs)-1] { // all but the turn/end
		e.Ingest(in, epoch)
	}
	frags := e.Drain()
	if len(frags) != 3 {
		t.Fatalf("%d fragments before the turn/end, want 3 (one per step)", len(frags))
	}
	for _, f := range frags {
		if !f.Fragment || len(f.Steps) != 1 {
			t.Fatalf("fragment %+v", f)
		}
	}
	td := Traces(frags)
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
	final := e.Drain()
	if len(final) != 1 || final[0].Fragment || len(final[0].Steps) != 0 || final[0].NumSteps() != 3 {
		t.Fatalf("final %+v", final)
	}
	if e.Stats().TurnsClosed != 1 {
		t.Fatalf("turns closed %d", e.Stats().TurnsClosed)
	}
}

// TestLiveStepsMemory reports the heap an open turn holds after n finished
// steps, live and whole: live, it no longer grows with the steps (the
// benchmark figures for BENCHMARKS.md come from -v).
func TestLiveStepsMemory(t *testing.T) {
	const sessions = 200
	for _, steps := range []int64{1, 10, 100, 1000} {
		per := map[bool]float64{}
		for _, live := range []bool{false, true} {
			e := New(Config{LiveSteps: live, DanglingTimeout: time.Hour})
			src := make([]eventSource, sessions)
			for i := range src {
				src[i] = newEventSource(fmt.Sprintf("s%d", i), steps+1)
			}
			before := heapInUse()
			for i := range src {
				// turn/start, then steps finished steps, the last one open.
				for src[i].FinishedSteps() < steps {
					e.Ingest(src[i].input(), epoch)
					e.Drain()
				}
			}
			after := heapInUse()
			if e.OpenTurns() != sessions {
				t.Fatalf("%d open turns, want %d", e.OpenTurns(), sessions)
			}
			per[live] = float64(after-before) / sessions
			runtime.KeepAlive(e)
		}
		t.Logf("%4d finished steps per open turn: %8.0f B whole, %6.0f B live", steps, per[false], per[true])
		if steps >= 100 && per[true] > per[false]/4 {
			t.Errorf("%d finished steps: live holds %.0f B per open turn, whole %.0f B: live must not grow with the steps", steps, per[true], per[false])
		}
	}
}
