//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// Synthetic live sessions for the crash and outage tests: small, valid dsh
// v0 logs whose turns each take six rows (turn/start, step/start,
// user/message, assistant/message, step/end, turn/end).
const rowsPerTurn = 6

// synthSession returns the rows (each with its newline) of a session of
// turns completed turns; the header is row 0.
func synthSession(id string, turns int, t0 time.Time) [][]byte {
	ms := t0.UnixMilli()
	out := [][]byte{[]byte(fmt.Sprintf(`{"type":"session","version":0,"id":%q,"createdAt":%d,"cwd":"/e2e","delegationDepth":0}`+"\n", id, ms))}
	seq := 0
	add := func(format string, args ...any) {
		ms += 3
		row := fmt.Sprintf(format, args...)
		out = append(out, []byte(fmt.Sprintf(`{%s,"seq":%d,"time":%d,%s}`+"\n", row[:strings.IndexByte(row, ',')], seq, ms, row[strings.IndexByte(row, ',')+1:])))
		seq++
	}
	for n := 1; n <= turns; n++ {
		add(`"type":"turn/start","data":{"turn":%d}`, n)
		add(`"type":"step/start","data":{"turn":%d,"step":1}`, n)
		add(`"type":"user/message","data":{"content":[{"type":"text","text":"crash probe question %d"}],"source":{"kind":"user"},"role":"user","id":"u-%d"},"surfaceOp":"append"`, n, n)
		add(`"type":"assistant/message","data":{"turn":%d,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"answer %d"}],"source":{"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"},"id":"a-%d"},"usage":{"inputTokens":10,"outputTokens":2,"cacheReadTokens":0}},"surfaceOp":"append"`, n, n, n)
		add(`"type":"step/end","data":{"turn":%d,"step":1}`, n)
		add(`"type":"turn/end","data":{"turn":%d,"reason":{"kind":"completed"}}`, n)
	}
	return out
}

// turnSpans counts the turn (root invoke_agent) spans of a stored trace,
// and all its spans.
func turnSpans(td ptrace.Traces) (turns, all int) {
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				all++
				if s.ParentSpanID().IsEmpty() && strings.HasPrefix(s.Name(), "invoke_agent") {
					turns++
				}
			}
		}
	}
	return turns, all
}

// turnReason is the end reason (and dangling cause) of a trace's turn span.
func turnReason(td ptrace.Traces) string {
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				if s.ParentSpanID().IsEmpty() {
					r, _ := s.Attributes().Get("dsh.turn.end_reason")
					out := r.AsString()
					if c, ok := s.Attributes().Get("dsh.dangling.cause"); ok {
						out += "/" + c.AsString()
					}
					return out
				}
			}
		}
	}
	return ""
}

// TestCrashMidStream stops otelcol-dsh while it tails live session files
// (checkpoints in file_storage) — SIGKILL, and for comparison a clean
// SIGTERM — at a moment when every session has a turn open (its turn/start
// and step/start read and accepted, the rest not yet written), writes on
// while it is down, and restarts it. Then:
//   - the receiver delivered every row exactly once across both runs (its
//     accepted_log_records of run 1 at the stop plus run 2 = rows written);
//   - every turn has exactly one turn span in Jaeger, completed, with its
//     step and chat spans — the turns open at the stop included: turn_state
//     journals them in file_storage (storage: in suite.yaml), run 2
//     restores them and closes them when their turn/end arrives. Without
//     the journal, SIGKILL lost those turns and SIGTERM emitted them as
//     dangling without their chat spans.
func TestCrashMidStream(t *testing.T) {
	t.Run("SIGKILL", func(t *testing.T) { crashRestart(t, syscall.SIGKILL) })
	t.Run("SIGTERM", func(t *testing.T) { crashRestart(t, syscall.SIGTERM) })
}

func crashRestart(t *testing.T, sig syscall.Signal) {
	name := map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGTERM: "SIGTERM"}[sig]
	ctx := context.Background()
	dir := t.TempDir()
	j := newJaegerPorts(t)
	c := newCollector(t, dir, testConfig("suite")).toJaeger(j)
	root := c.sessions()

	const nSessions, nTurns = 4, 12
	killTurn := nTurns/2 + 1 // the turn open in every session at the kill
	ids := make([]string, nSessions)
	files := make([][][]byte, nSessions)
	paths := make([]string, nSessions)
	t0 := time.Now().Add(-time.Minute)
	for i := range ids {
		ids[i] = fmt.Sprintf("c0ffee00-0000-4000-8000-%012d", i)
		files[i] = synthSession(ids[i], nTurns, t0.Add(time.Duration(i)*time.Second))
		paths[i] = filepath.Join(root, "--e2e--", ids[i], "session.jsonl")
		if err := os.MkdirAll(filepath.Dir(paths[i]), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(paths[i], nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	total := nSessions * (1 + nTurns*rowsPerTurn)

	startJaeger(t, dir, "jaeger", j)
	run1 := c.start("otelcol-dsh-run1")

	// Round-robin, one row per session per tick, a few ms apart: the files
	// grow while the collector polls them (every 100ms).
	written := 0
	writeUpTo := func(row int) { // rows [.., row) of every session
		for ; written < row; written++ {
			for i := range files {
				appendFile(t, paths[i], files[i][written])
			}
			time.Sleep(4 * time.Millisecond)
		}
	}
	killAt := 1 + (killTurn-1)*rowsPerTurn + 2 // header, the closed turns, turn/start + step/start of killTurn
	writeUpTo(killAt)
	poll(t, "rows before the kill accepted", 20*time.Second, func() error {
		n, err := c.accepted(ctx)
		if err == nil && n != float64(nSessions*killAt) {
			err = fmt.Errorf("accepted %v, want %d", n, nSessions*killAt)
		}
		return err
	}, run1)
	// Let the checkpoint of that delivery land (written after the
	// consumer accepted it), then kill without warning.
	time.Sleep(300 * time.Millisecond)
	before, err := c.accepted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sig == syscall.SIGKILL {
		if err := syscall.Kill(run1.cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-run1.done
	} else if err := run1.stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s to run 1 after %v accepted rows; each session had turn %d open", name, before, killTurn)

	// Half of the rest arrives while the collector is down, the rest after
	// the restart.
	writeUpTo(killAt + (len(files[0])-killAt)/2)
	run2 := c.start("otelcol-dsh-run2")
	writeUpTo(len(files[0]))

	poll(t, "every row accepted once across the crash", 30*time.Second, func() error {
		n, err := c.accepted(ctx)
		if err == nil && before+n != float64(total) {
			err = fmt.Errorf("run 1 accepted %v + run 2 %v, want %d", before, n, total)
		}
		return err
	}, run2)
	// No more than that either, a while later.
	time.Sleep(time.Second)
	if n, err := c.accepted(ctx); err != nil || before+n != float64(total) {
		t.Errorf("rows accepted: run 1 %v + run 2 %v (%v), want %d: a row was delivered twice", before, n, err, total)
	}

	// Every turn: exactly one turn span and its step and chat spans.
	var missing, dup []string
	for _, id := range ids {
		for n := 1; n <= nTurns; n++ {
			tid := turnrender.TraceID(id, int64(n))
			var turns, all int
			var reason string
			// Closed turns show up within the batch timeout; allow for
			// the dangling timeout (3s) in case a turn is closed that way.
			wait := 5 * time.Second // every row is accepted already; the batch timeout is 100ms
			if len(missing)+len(dup) > 0 {
				wait = 2 * time.Second // the pipeline has long drained
			}
			deadline := time.Now().Add(wait)
			for {
				td, err := jaegerTrace(ctx, j.query(), tid)
				if err == nil {
					turns, all = turnSpans(td)
					reason = turnReason(td)
				}
				if (turns >= 1 && all >= 3) || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			switch {
			case turns == 0:
				missing = append(missing, fmt.Sprintf("%s turn %d (%d spans)", id, n, all))
			case turns > 1 || all != 3 || reason != "completed":
				dup = append(dup, fmt.Sprintf("%s turn %d: %d turn spans (%s), %d spans (want 1 completed, 3)", id, n, turns, reason, all))
			}
		}
	}
	// What run 2's connector made of the rows of the turns that were open
	// at the kill.
	if _, body, err := get(ctx, c.selfURL()); err == nil {
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "otelcol_connector_turn_state_") {
				t.Logf("run 2: %s", l)
			}
		}
	}
	for _, m := range append(missing, dup...) {
		t.Errorf("after the %s and restart: %s", name, m)
	}
	if !strings.Contains(run2.output(), "Sessions restored from the journal") {
		t.Errorf("run 2 did not restore the journaled sessions:\n%s", run2.tail(40))
	}
	if bytes.Contains([]byte(run2.output()), []byte("panic:")) {
		t.Errorf("otelcol-dsh panicked:\n%s", run2.tail(60))
	}
}
