package turnengine

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
)

// loadInputs decodes a log into engine inputs.
func loadInputs(t *testing.T, r io.Reader, session string) []Input {
	t.Helper()
	var out []Input
	for _, row := range testlog.Read(t, r, session) {
		for i := range row.Events {
			out = append(out, Input{SessionID: session, Event: &row.Events[i], Format: row.Format, Header: row.Header})
		}
	}
	return out
}

func loadFile(t *testing.T, path, session string) []Input {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return loadInputs(t, f, session)
}

// A turn silent for dangling_timeout (arrival clock) closes as dangling,
// once; its events arriving afterwards are late, not a second turn — its
// turn/end only adds the late close that tells how it ended (late.go).
func TestDanglingTimeoutAndLateEvents(t *testing.T) {
	inputs := loadInputs(t, strings.NewReader(testlog.Synth("s1", 2, 2, false)), "s1")
	cut := len(inputs) - 3 // hold back the last step/end... no: the last three events
	e := New(Config{DanglingTimeout: time.Minute})
	for _, in := range inputs[:cut] {
		e.Ingest(in, epoch)
	}
	if n := len(e.Drain()); n != 1 {
		t.Fatalf("%d turns closed before the timeout, want 1", n)
	}
	e.Sweep(epoch.Add(59 * time.Second))
	if n := len(e.Drain()); n != 0 {
		t.Fatalf("a turn closed before its timeout")
	}
	e.Sweep(epoch.Add(61 * time.Second))
	closed := e.Drain()
	if len(closed) != 1 || !closed[0].Dangling() || closed[0].DanglingCause != CauseTimeout {
		t.Fatalf("want turn 2 dangling by timeout, got %+v", closed)
	}
	if e.OpenTurns() != 0 {
		t.Fatalf("%d turns open", e.OpenTurns())
	}
	for _, in := range inputs[cut:] {
		e.Ingest(in, epoch.Add(2*time.Minute))
	}
	after := e.Drain()
	if len(after) != 1 || after[0].Late == nil || after[0].Number != closed[0].Number {
		t.Fatalf("after the late events: %+v, want only turn %d's late close", after, closed[0].Number)
	}
	// The closers (results, step/end) are kept on the late close and the
	// turn/end closes it; any other late event is counted late.
	if st := e.Stats(); st.Late != int64(3-1-len(after[0].Late.Closers)) || st.ClosedLate != 1 || st.Dangling[CauseTimeout] != 1 {
		t.Fatalf("stats %+v with %d closers: want the other late events, 1 closed late, 1 dangling by timeout", st, len(after[0].Late.Closers))
	}
}

// At max_open_turns the oldest open turn is closed as dangling (evicted);
// at max_sessions the least recently active session is forgotten.
func TestEviction(t *testing.T) {
	e := New(Config{MaxOpenTurns: 3, MaxSessions: 5})
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("s%d", i)
		for _, in := range loadInputs(t, strings.NewReader(testlog.Synth(id, 1, 1, true)), id) {
			e.Ingest(in, epoch.Add(time.Duration(i)*time.Second))
		}
	}
	if e.OpenTurns() != 3 {
		t.Fatalf("%d open turns, bound is 3", e.OpenTurns())
	}
	if e.Sessions() != 5 {
		t.Fatalf("%d sessions, bound is 5", e.Sessions())
	}
	closed := e.Drain()
	if len(closed) != 3 {
		t.Fatalf("%d turns evicted, want 3", len(closed))
	}
	for i, tn := range closed {
		if tn.SessionID != fmt.Sprintf("s%d", i) || tn.DanglingCause != CauseEvicted {
			t.Fatalf("evicted %s (%s), want s%d evicted oldest first", tn.SessionID, tn.DanglingCause, i)
		}
	}
	e.Flush(CauseShutdown, epoch)
	rest := e.Drain()
	if len(rest) != 3 || rest[0].DanglingCause != CauseShutdown {
		t.Fatalf("shutdown closed %d turns", len(rest))
	}
}

func TestTruncateJSON(t *testing.T) {
	long := strings.Repeat("é", 5000)
	docs := []string{
		`[{"role":"user","content":[{"type":"text","text":"` + long + `"}]}]`,
		`{"a":[` + strings.Repeat(`1,`, 3000) + `1]}`,
		`"` + long + `"`,
	}
	for _, d := range docs {
		for _, max := range []int{8, 64, 1000} {
			got := truncateJSON(d, max)
			if len(got) > max && max >= 16 || !json.Valid([]byte(got)) {
				t.Errorf("truncateJSON(%.20s…, %d) = %.60s (%d bytes)", d, max, got, len(got))
			}
		}
	}
}
