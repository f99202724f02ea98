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

	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// nobody is the user the permissions case runs the collector as.
var nobody = &syscall.Credential{Uid: 65534, Gid: 65534}

// TestDamagedState: the collector is killed with turns open, every state
// file it keeps — the tailer's checkpoints, the HTTP dedup state, the
// journal, both exporters' queues — is damaged, and it is started again:
//   - garbage, truncated, empty: it starts; each file is set aside with
//     one line naming it; what it held is lost exactly as that line says:
//     the tailed files are read again from their start (every row
//     delivered again, every turn of theirs still complete), the turns of
//     the HTTP sessions open at the kill lose their spans (their later
//     events are orphans), every turn after the restart is complete;
//   - permissions (the state owned by another user): it refuses to start
//     with one line naming the file and the fix, and after the fix it
//     starts with its state whole: no turn lost.
func TestDamagedState(t *testing.T) {
	j := newJaegerPorts(t)
	startJaeger(t, t.TempDir(), "jaeger", j)
	for _, mode := range []string{"garbage", "truncated", "empty", "permissions"} {
		t.Run(mode, func(t *testing.T) { damagedState(t, mode, j) })
	}
}

// damagers spoil a state file in place.
var damagers = map[string]func(path string) error{
	"garbage": func(path string) error {
		return os.WriteFile(path, bytes.Repeat([]byte("not a database\n"), 2000), 0o600)
	},
	"truncated": func(path string) error { return os.Truncate(path, 100) },
	"empty":     func(path string) error { return os.Truncate(path, 0) },
	"permissions": func(path string) error {
		if err := os.Chown(path, 0, 0); err != nil {
			return err
		}
		return os.Chmod(path, 0o600)
	},
}

// damageAgent is one session of the test: a tailed file or posted over
// HTTP, written turn by turn.
type damageAgent struct {
	*liveSession
	turns [][][]byte // the rows of each turn
}

func (a *damageAgent) write(t *testing.T, rows [][]byte) {
	t.Helper()
	var err error
	if a.http != "" {
		err = a.post(rows)
	} else {
		err = appendRows(a.path, rows)
	}
	if err != nil {
		t.Fatal(err)
	}
	a.written = append(a.written, rows...)
}

func damagedState(t *testing.T, mode string, j jaegerPorts) {
	base, err := os.MkdirTemp("", "dsh-damaged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	var cred *syscall.Credential
	if mode == "permissions" {
		if os.Geteuid() != 0 {
			t.Skip("the permissions case runs the collector as another user, which needs root")
		}
		cred = nobody
	}
	// Everything the collector reads or writes is reachable by its user.
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	root, state := filepath.Join(base, "sessions"), filepath.Join(base, "state")
	for _, d := range []string{root, state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if cred != nil {
		if err := os.Chown(state, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	sink := startCountingSink(t)
	c := restartCollector(t, base, j, sink).set("DSH_SESSIONS", root).set("STATE_DIR", state).as(cred)

	// Two tailed sessions and two posted, each with four turns; the first
	// run gets turns 1 and 2 and the first half of turn 3.
	var agents []*damageAgent
	t0 := time.Now().Add(-time.Hour)
	for i := range 4 {
		s := &liveSession{id: fmt.Sprintf("dmg-%s-%d", mode, i)}
		if i < 2 {
			s.path = filepath.Join(root, "--e2e--", s.id, "session.jsonl")
			if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
				t.Fatal(err)
			}
		} else {
			s.http = c.ingestURL()
		}
		s.gen = newLiveGen(s.id, t0.Add(time.Duration(i)*time.Minute))
		a := &damageAgent{liveSession: s}
		for range 4 {
			a.turns = append(a.turns, s.gen.nextTurn())
		}
		agents = append(agents, a)
	}
	run1 := c.start("otelcol-dsh-run1")
	for _, a := range agents {
		first := append([][]byte{a.gen.header()}, a.turns[0]...)
		first = append(first, a.turns[1]...)
		a.write(t, append(first, a.turns[2][:5]...)) // turn 3 up to its tool call
	}
	want := map[string]bool{}
	for _, a := range agents {
		want[a.id+"/header"] = true
		for seq := 0; seq < len(a.written)-1; seq++ {
			want[fmt.Sprintf("%s/%d", a.id, seq)] = true
		}
	}
	waitRows(t, sink, want, 60*time.Second, run1)
	waitTurns(t, j, expectTurns(t, agents), true, run1)
	_ = syscall.Kill(run1.cmd.Process.Pid, syscall.SIGKILL)
	<-run1.done

	files := stateFiles(t, state)
	if len(files) < 5 {
		fatalf(t, "want the five state files (checkpoints, dedup, journal, two queues), found %v", files)
	}
	for _, f := range files {
		if err := damagers[mode](f); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s: damaged %d state files: %s", mode, len(files), strings.Join(names(files), " "))

	lost := true
	var cur *process
	if mode == "permissions" {
		refused := c.launch("otelcol-dsh-refused")
		poll(t, "the refusal", 60*time.Second, func() error {
			if done, _ := refused.exited(); !done {
				return fmt.Errorf("still running")
			}
			return nil
		})
		out := refused.output()
		if !strings.Contains(out, "give the collector's user read and write access") || !namesOneOf(out, files) {
			errorf(t, "the refusal does not name the file and the fix:\n%s", refused.tail(20))
		}
		if strings.Contains(out, "panic:") {
			errorf(t, "panicked:\n%s", refused.tail(40))
		}
		for _, f := range files {
			if err := os.Chown(f, int(nobody.Uid), int(nobody.Gid)); err != nil {
				t.Fatal(err)
			}
		}
		lost = false
		cur = c.start("otelcol-dsh-fixed")
	} else {
		cur = c.start("otelcol-dsh-run2")
	}
	if lost {
		out := cur.output()
		n := strings.Count(out, "Damaged storage file set aside")
		if n != len(files) {
			errorf(t, "%d set-aside lines for %d damaged files", n, len(files))
		}
		for _, f := range files {
			if !strings.Contains(out, `"file": "`+f+`"`) {
				errorf(t, "no line names %s", f)
			}
		}
	}

	// The rest of turn 3, and turn 4.
	for _, a := range agents {
		a.write(t, append(append([][]byte(nil), a.turns[2][5:]...), a.turns[3]...))
	}
	all := map[string]bool{}
	for _, a := range agents {
		all[a.id+"/header"] = true
		for seq := 0; seq < len(a.written)-1; seq++ {
			all[fmt.Sprintf("%s/%d", a.id, seq)] = true
		}
	}
	waitRows(t, sink, all, 60*time.Second, cur)
	turns := expectTurns(t, agents)
	var tailed, posted, gone []*turnengine.Turn
	for _, turn := range turns {
		switch {
		case agentOf(agents, turn.SessionID).http == "":
			tailed = append(tailed, turn)
		case lost && turn.Number == 3:
			gone = append(gone, turn) // open at the kill, its journal and the rows before lost
		default:
			posted = append(posted, turn)
		}
	}
	// The tailed files, read again from their start after their state was
	// lost, emit their earlier turns again: the same spans, stored twice.
	waitTurns(t, j, tailed, !lost, cur)
	waitTurns(t, j, posted, true, cur)
	for _, turn := range gone {
		td, err := jaegerTrace(context.Background(), j.query(), turnrender.TraceID(turn.SessionID, turn.Number))
		if err == nil {
			if n, _ := turnSpans(td); n != 0 {
				errorf(t, "%s turn 3 has a turn span, though its first half and its journal were lost", turn.SessionID)
			}
		}
	}
	if lost {
		if orphans := c.self("otelcol_connector_turn_state_events_dropped"); orphans == 0 {
			errorf(t, "the lost turns' later events were not counted as dropped")
		}
		seen := sink.rowCounts()
		for _, a := range agents[:2] {
			if seen[a.id+"/0"] < 2 {
				errorf(t, "%s: the tailed file was not read again from its start (seq 0 delivered %d times)", a.id, seen[a.id+"/0"])
			}
		}
	}
	t.Logf("%s: %d turns complete in Jaeger, %d lost as stated", mode, len(tailed)+len(posted), len(gone))
	if err := cur.stop(30 * time.Second); err != nil {
		errorf(t, "%v", err)
	}
	noPanic(t, []*process{cur})
}

// expectTurns are the closed turns of what the agents wrote.
func expectTurns(t *testing.T, agents []*damageAgent) []*turnengine.Turn {
	t.Helper()
	var ss []session
	for _, a := range agents {
		ss = append(ss, session{via: viaPost, id: a.id, body: bytes.Join(a.written, nil), file: a.id})
	}
	var out []*turnengine.Turn
	for _, turn := range expect(t, ss).turns {
		if !turn.Dangling() {
			out = append(out, turn)
		}
	}
	return out
}

// waitTurns waits until every turn is complete in Jaeger at j (with once,
// each span stored once), failing for each that is not.
func waitTurns(t *testing.T, j jaegerPorts, turns []*turnengine.Turn, once bool, procs ...*process) {
	t.Helper()
	c := checkTurns(context.Background(), j.query(), turns, once)
	report(func(format string, args ...any) { errorf(t, format, args...) }, c.problems)
	for _, p := range procs {
		if done, err := p.exited(); done {
			fatalf(t, "%s exited (%v)", p.name, err)
		}
	}
}

func agentOf(agents []*damageAgent, id string) *damageAgent {
	for _, a := range agents {
		if a.id == id {
			return a
		}
	}
	return nil
}

func names(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

func namesOneOf(out string, files []string) bool {
	for _, f := range files {
		if strings.Contains(out, f) {
			return true
		}
	}
	return false
}
