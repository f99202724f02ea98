package turnengine

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// eventSource synthesizes a v4 session's events one at a time, as decoded
// rows, so a test can feed millions without holding them.
type eventSource struct {
	dec     *sessionlog.RowDecoder
	session string
	seq     int64
	turn    int64
	step    int64
	phase   int
	steps   int64 // steps per turn
	done    int64 // steps of the current turn ended so far
}

// finishedSteps is how many steps of the current turn have ended.
func (s *eventSource) finishedSteps() int64 { return s.done }

func newEventSource(session string, stepsPerTurn int64) *eventSource {
	s := &eventSource{dec: sessionlog.NewRowDecoder(0, 0), session: session, steps: stepsPerTurn}
	hdr := fmt.Sprintf(`{"type":"session","version":4,"id":%q,"createdAt":1,"isSeeded":false,"delegationDepth":0}`, session)
	if _, err := s.dec.Decode([]byte(hdr), 1); err != nil {
		panic(err)
	}
	return s
}

// next returns the next event of an endless sequence of turns, each with
// s.steps steps of one model call and one tool call.
func (s *eventSource) next() *sessionlog.Event {
	var line string
	t := 1_800_000_000_000 + s.seq*5
	switch s.phase {
	case 0:
		s.turn++
		s.step, s.done = 0, 0
		line = fmt.Sprintf(`{"type":"turn/start","seq":%d,"time":%d,"data":{"turn":%d}}`, s.seq, t, s.turn)
	case 1:
		s.step++
		line = fmt.Sprintf(`{"type":"step/start","seq":%d,"time":%d,"data":{"turn":%d,"step":%d}}`, s.seq, t, s.turn, s.step)
	case 2:
		line = fmt.Sprintf(`{"type":"assistant/message","seq":%d,"time":%d,"data":{"turn":%d,"step":%d,"message":{"id":"m%d","role":"assistant","content":[{"type":"tool-call","id":"c%d","name":"bash","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"}},"usage":{"inputTokens":100,"outputTokens":20},"stream":[{"type":"chunk","time":%d,"chunk":{"type":"finish","reason":{"kind":"tool-calls"}}}]},"surfaceOp":"append"}`, s.seq, t, s.turn, s.step, s.seq, s.seq, t)
	case 3:
		line = fmt.Sprintf(`{"type":"tool/call","seq":%d,"time":%d,"data":{"turn":%d,"step":%d,"callId":"c%d","name":"bash","arguments":"{}"}}`, s.seq, t, s.turn, s.step, s.seq-1)
	case 4:
		line = fmt.Sprintf(`{"type":"tool/result","seq":%d,"time":%d,"data":{"turn":%d,"step":%d,"message":{"id":"r%d","role":"tool","toolCallId":"c%d","content":[{"type":"text","text":"ok"}],"source":{"kind":"tool","callId":"c%d"}}},"sourceEventSeqs":[%d],"surfaceOp":"append"}`, s.seq, t, s.turn, s.step, s.seq, s.seq-2, s.seq-2, s.seq-1)
	case 5:
		line = fmt.Sprintf(`{"type":"step/end","seq":%d,"time":%d,"data":{"turn":%d,"step":%d}}`, s.seq, t, s.turn, s.step)
		s.done++
	case 6:
		line = fmt.Sprintf(`{"type":"turn/end","seq":%d,"time":%d,"data":{"turn":%d,"reason":{"kind":"completed"}}}`, s.seq, t, s.turn)
	}
	switch {
	case s.phase == 5 && s.step < s.steps:
		s.phase = 1
	case s.phase == 6:
		s.phase = 0
	default:
		s.phase++
	}
	row, err := s.dec.Decode([]byte(line), int(s.seq)+2)
	if err != nil || len(row.Events) != 1 {
		panic(fmt.Sprintf("synthetic row %d: %v %v", s.seq, err, row.Problems))
	}
	s.seq++
	return &row.Events[0]
}

func (s *eventSource) input() Input {
	ev := s.next()
	return Input{SessionID: s.session, Event: ev, Format: s.dec.Format(), Header: s.dec.Header()}
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
	srcs := make([]*eventSource, n)
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
