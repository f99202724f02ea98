package turnrender

import (
	"math"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// A session stopped anywhere — between any two events — and resumed on a
// new engine from its Mark and the events it retains yields the same
// spans, ids included, as one engine that saw it all; every event counts
// once across the two engines; and re-delivered events before the stop
// are duplicates, not new turns.
func TestResumeEqualsUninterrupted(t *testing.T) {
	t.Run("whole turns", func(t *testing.T) { resumeEqualsUninterrupted(t, turnengine.Config{}) })
	// Live steps: the steps emitted before the stop are not emitted again
	// when the resumed engine re-applies the open turn's events.
	t.Run("live steps", func(t *testing.T) { resumeEqualsUninterrupted(t, turnengine.Config{LiveSteps: true}) })
}

func resumeEqualsUninterrupted(t *testing.T, cfg turnengine.Config) {
	for _, l := range testcorpus.Logs(t) {
		rel := l.Name
		if rel == "testdata/dialects/wrap-jsonrpc.jsonl" {
			continue // two sessions interleaved: a Mark is one session's
		}
		inputs := loadFile(t, l.Path, "s")
		if len(inputs) == 0 {
			continue
		}
		whole, wholeM, want := run(cfg, inputs)
		total := whole.Stats()
		// Every cut for short logs, about 24 spread over long ones.
		stride := max(1, len(inputs)/24)
		for k := 0; k <= len(inputs); k += stride {
			e1, mt1 := newEngine(cfg)
			for _, in := range inputs[:k] {
				e1.Ingest(in, epoch)
			}
			turns := e1.Drain()
			m, ok := e1.Mark("s")
			if !ok && k > 0 {
				t.Fatalf("%s cut %d: no mark", rel, k)
			}

			e2, mt2 := newEngine(cfg)
			if ok {
				e2.Resume("s", m, epoch)
				for _, in := range inputs[:k] {
					if in.Event.Seq >= m.Retain {
						e2.Ingest(in, epoch)
					}
				}
			}
			// The source re-delivers a few events from before the stop.
			for _, in := range inputs[max(0, k-3):k] {
				e2.Ingest(in, epoch)
			}
			for _, in := range inputs[k:] {
				e2.Ingest(in, epoch)
			}
			e2.Flush(turnengine.CauseEndOfInput, epoch)
			turns = append(turns, e2.Drain()...)

			if err := ptracetest.CompareTraces(want, Traces(testScope, turns), ptracetest.IgnoreResourceSpansOrder(), ptracetest.IgnoreSpansOrder()); err != nil {
				t.Fatalf("%s stopped after %d of %d events (mark %+v): %v", rel, k, len(inputs), m, err)
			}
			s1, s2 := e1.Stats(), e2.Stats()
			if got := s1.Events + s2.Events; got != total.Events {
				t.Errorf("%s cut %d: %d + %d events applied, want %d", rel, k, s1.Events, s2.Events, total.Events)
			}
			if got := s1.TurnsClosed + s2.TurnsClosed; got != total.TurnsClosed {
				t.Errorf("%s cut %d: %d + %d turns closed, want %d", rel, k, s1.TurnsClosed, s2.TurnsClosed, total.TurnsClosed)
			}
			if got := s1.Violations + s2.Violations; got != total.Violations {
				t.Errorf("%s cut %d: %d + %d violations, want %d", rel, k, s1.Violations, s2.Violations, total.Violations)
			}
			// So does every metric point: a replayed live step is not
			// counted again.
			got := totals(mt1)
			for k2, v := range totals(mt2) {
				got[k2] += v
			}
			for k2, v := range totals(wholeM) {
				if math.Abs(got[k2]-v) > 1e-9 {
					t.Errorf("%s cut %d: %q = %v across the restart, %v uninterrupted", rel, k, k2, got[k2], v)
				}
				delete(got, k2)
			}
			for k2, v := range got {
				t.Errorf("%s cut %d: %q = %v across the restart, absent uninterrupted", rel, k, k2, v)
			}
		}
	}
}

// totals are the values of every metric point, by metric and attributes:
// a counter's value, a histogram's count.
func totals(m *Metrics) map[string]float64 {
	out := map[string]float64{}
	for name, pts := range m.series {
		for key, p := range pts {
			out[name+" "+strings.ReplaceAll(key, "\x00", " ")] = float64(p.value) + p.fvalue + float64(p.count)
		}
	}
	return out
}
