package turnengine

import (
	"fmt"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"runtime"
	"testing"
	"time"
)

// eventSource is a synthetic session's events as engine inputs.
type eventSource struct{ *testlog.Source }

func newEventSource(session string, stepsPerTurn int64) eventSource {
	return eventSource{testlog.NewSource(session, stepsPerTurn)}
}

func (s eventSource) input() Input {
	ev := s.Next()
	return Input{SessionID: s.Session(), Event: ev, Format: s.Format(), Header: s.Header()}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// One session of a million events: the engine's memory stays flat — it is
// bounded by the open turn, not by the log.
func TestMemoryFlatOverLongSession(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	e := New(Config{})
	src := newEventSource("long", 3)
	var at100k uint64
	for i := 1; i <= 1_000_000; i++ {
		e.Ingest(src.input(), epoch)
		if i%1000 == 0 {
			e.Drain()
		}
		if i == 100_000 {
			at100k = heapInUse()
		}
	}
	e.Drain()
	at1M := heapInUse()
	t.Logf("heap in use after 100k events: %d KiB, after 1M: %d KiB", at100k>>10, at1M>>10)
	if at1M > at100k+2<<20 {
		t.Fatalf("heap grew by %d KiB from 100k to 1M events in one session", (at1M-at100k)>>10)
	}
	if st := e.Stats(); st.Events != 1_000_000 || st.Violations != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// openTurns opens n turns in n sessions (turn/start, step/start, a model
// call and a tool call in flight) and returns the heap they take per turn.
func openTurns(n int) (perTurn float64, e *Engine) {
	srcs := make([]eventSource, n)
	for i := range srcs {
		srcs[i] = newEventSource(fmt.Sprintf("session-%06d", i), 3)
	}
	before := heapInUse()
	e = New(Config{MaxOpenTurns: n + 1, MaxSessions: n + 1})
	for _, s := range srcs {
		for k := 0; k < 4; k++ { // turn/start, step/start, assistant/message, tool/call
			e.Ingest(s.input(), epoch)
		}
	}
	srcs = nil
	after := heapInUse()
	return float64(after-before) / float64(n), e
}

// 100k open turns fit in memory at a bounded cost per turn (goal: ≤ 4 KiB
// without content capture).
func TestMemoryPerOpenTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	per, e := openTurns(100_000)
	t.Logf("%d open turns: %.0f bytes per open turn", e.OpenTurns(), per)
	if e.OpenTurns() != 100_000 {
		t.Fatalf("%d open turns", e.OpenTurns())
	}
	if per > 4096 {
		t.Fatalf("%.0f bytes per open turn, goal ≤ 4096", per)
	}
	e.Flush(CauseShutdown, epoch.Add(time.Hour))
	if n := len(e.Drain()); n != 100_000 {
		t.Fatalf("%d turns flushed", n)
	}
}

// BenchmarkEngine measures events/s through the engine (decoding excluded)
// and reports the heap cost of an open turn.
func BenchmarkEngine(b *testing.B) {
	src := newEventSource("bench", 3)
	inputs := make([]Input, 200_000)
	for i := range inputs {
		inputs[i] = src.input()
	}
	b.ResetTimer()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		e := New(Config{})
		for i := range inputs {
			e.Ingest(inputs[i], epoch)
		}
		e.Flush(CauseEndOfInput, epoch)
		e.Drain()
		n += len(inputs)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkOpenTurnBytes(b *testing.B) {
	for b.Loop() {
		per, _ := openTurns(20_000)
		b.ReportMetric(per, "bytes/open-turn")
	}
}
