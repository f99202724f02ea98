package turnengine

import (
	"fmt"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"runtime"
	"strings"
	"testing"
	"time"
)

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
