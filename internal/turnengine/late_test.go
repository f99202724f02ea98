package turnengine

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// crashRepaired is testdata's crash-repaired session: the agent died after
// seq 12 (tool/call call_w); dsh's repair appended seqs 13–16 (an unknown
// outcome for call_w, call_n never started, step/end, turn/end
// interrupted), then turn 2 ran.
func crashRepaired(t *testing.T) []Input {
	for _, p := range testcorpus.Testdata(t) {
		if filepath.Base(p) == "crash-repaired.jsonl" {
			return loadFile(t, p, "s")
		}
	}
	t.Fatal("testdata/dialects/crash-repaired.jsonl not found")
	return nil
}

func lateCloses(turns []*Turn) (late, normal []*Turn) {
	for _, t := range turns {
		if t.Late != nil {
			late = append(late, t)
		} else {
			normal = append(normal, t)
		}
	}
	return late, normal
}

// TestLateCloseAfterTimeout: the repair arrives the next morning, long
// after the turn was closed as dangling: the turn keeps its dangling root,
// and one late close tells how it really ended, with the closers.
func TestLateCloseAfterTimeout(t *testing.T) {
	in := crashRepaired(t)
	e := New(Config{})
	t0 := epoch
	for _, x := range in {
		if x.Event.Seq <= 12 {
			e.Ingest(x, t0)
		}
	}
	e.Sweep(t0.Add(turnmodel.DefaultDanglingTimeout + time.Minute))
	first := e.Drain()
	if len(first) != 1 || first[0].DanglingCause != CauseTimeout {
		t.Fatalf("after the timeout: %+v", first)
	}
	morning := t0.Add(20 * time.Hour)
	for _, x := range in {
		if x.Event.Seq > 12 {
			e.Ingest(x, morning)
		}
	}
	late, normal := lateCloses(e.Drain())
	if len(late) != 1 {
		t.Fatalf("late closes %d, want 1", len(late))
	}
	lc := late[0]
	if lc.Number != 1 || lc.Reason.Kind != "interrupted" || lc.Late.DanglingCause != CauseTimeout {
		t.Errorf("late close turn %d reason %q cause %q", lc.Number, lc.Reason.Kind, lc.Late.DanglingCause)
	}
	if want := 20*time.Hour - turnmodel.DefaultDanglingTimeout - time.Minute; lc.Late.After != want {
		t.Errorf("closed late after %v, want %v", lc.Late.After, want)
	}
	var names []string
	unknown := 0
	for _, c := range lc.Late.Closers {
		names = append(names, c.Name)
		for _, a := range c.Attrs {
			if a.Key == "error.type" && a.Value == "TOOL_OUTCOME_UNKNOWN" {
				unknown++
			}
		}
	}
	if len(names) != 3 || names[0] != "dsh.tool.result" || names[2] != "dsh.step.end" || unknown != 1 {
		t.Errorf("closers %v (unknown outcomes %d), want two results (one TOOL_OUTCOME_UNKNOWN) and the step/end", names, unknown)
	}
	if len(normal) != 1 || normal[0].Number != 2 || normal[0].Reason.Kind != "completed" {
		t.Errorf("turn 2: %+v", normal)
	}
	st := e.Stats()
	if st.ClosedLate != 1 || st.Late != 0 || st.TurnsClosed != 2 {
		t.Errorf("stats closed late %d, late events %d, turns %d; want 1, 0, 2", st.ClosedLate, st.Late, st.TurnsClosed)
	}
}

// TestLateCloseBeforeTimeout: a repair that comes in time is exact, and no
// late close is made.
func TestLateCloseBeforeTimeout(t *testing.T) {
	in := crashRepaired(t)
	e := New(Config{})
	for _, x := range in {
		e.Ingest(x, epoch)
	}
	late, normal := lateCloses(e.Drain())
	if len(late) != 0 || len(normal) != 2 || normal[0].Reason.Kind != "interrupted" {
		t.Fatalf("late %d, turns %+v", len(late), normal)
	}
}

// TestLateCloseAfterEviction: the session was forgotten at max_sessions
// while its turn dangled; its repair finds the turn all the same.
func TestLateCloseAfterEviction(t *testing.T) {
	in := crashRepaired(t)
	e := New(Config{MaxSessions: 1})
	for _, x := range in {
		if x.Event.Seq <= 12 {
			e.Ingest(x, epoch)
		}
	}
	other := loadFile(t, filepath.Join(filepath.Dir(testcorpus.Testdata(t)[0]), "v4-tools.jsonl"), "other")
	e.Ingest(other[0], epoch.Add(time.Second)) // evicts s: its turn dangles, cause evicted
	first, _ := lateCloses(e.Drain())
	if len(first) != 0 {
		t.Fatalf("late closes before the repair: %d", len(first))
	}
	for _, x := range in {
		if x.Event.Seq > 12 {
			e.Ingest(x, epoch.Add(time.Hour))
		}
	}
	late, _ := lateCloses(e.Drain())
	if len(late) != 1 || late[0].Late.DanglingCause != CauseEvicted || late[0].Reason.Kind != "interrupted" {
		t.Fatalf("late closes %+v", late)
	}
}

// TestLateCloseUnseenTurn: a collector that joins the session after the
// turn began (restarted without a journal) still tells how it ended, as a
// late close of unknown cause in the turn's trace.
func TestLateCloseUnseenTurn(t *testing.T) {
	in := crashRepaired(t)
	e := New(Config{})
	for _, x := range in {
		if x.Event.Seq > 12 {
			e.Ingest(x, epoch)
		}
	}
	e.Sweep(epoch.Add(DefaultGapTimeout + time.Second)) // the missing head is given up on
	late, normal := lateCloses(e.Drain())
	if len(late) != 1 || late[0].Number != 1 || late[0].Late.DanglingCause != "unknown" {
		t.Fatalf("late closes %+v", late)
	}
	if len(normal) != 1 || normal[0].Number != 2 {
		t.Fatalf("turns %+v", normal)
	}
}

// TestLateCloseAcrossRestart: the turn dangled, the collector restarted
// (resumed from its mark, as the journal does), then the repair came: the
// late close is still made, once.
func TestLateCloseAcrossRestart(t *testing.T) {
	in := crashRepaired(t)
	e1 := New(Config{})
	for _, x := range in {
		if x.Event.Seq <= 12 {
			e1.Ingest(x, epoch)
		}
	}
	e1.Sweep(epoch.Add(turnmodel.DefaultDanglingTimeout + time.Minute))
	if d := e1.Drain(); len(d) != 1 || d[0].DanglingCause != CauseTimeout {
		t.Fatalf("before the restart: %+v", d)
	}
	m, ok := e1.Mark("s")
	if !ok || m.Dangled == nil || m.Dangled.Turn != 1 {
		t.Fatalf("mark %+v: the dangling turn is not in it", m)
	}
	if !m.Equal(m) {
		t.Fatal("a mark is not equal to itself")
	}
	e2 := New(Config{})
	e2.Resume("s", m, epoch.Add(time.Hour))
	for _, x := range in { // the journal's records from the mark's Retain on
		if x.Event.Seq >= m.Retain && x.Event.Seq <= 12 {
			e2.Ingest(x, epoch.Add(time.Hour))
		}
	}
	for _, x := range in {
		if x.Event.Seq > 12 {
			e2.Ingest(x, epoch.Add(20*time.Hour))
		}
	}
	late, normal := lateCloses(e2.Drain())
	if len(late) != 1 || late[0].Reason.Kind != "interrupted" || late[0].Late.DanglingCause != CauseTimeout {
		t.Fatalf("late closes after the restart: %+v", late)
	}
	if len(normal) != 1 || normal[0].Number != 2 {
		t.Fatalf("turns after the restart: %+v", normal)
	}
}
