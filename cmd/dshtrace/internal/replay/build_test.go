package replay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// buildFile builds the page of a log file.
func buildFile(t testing.TB, path string, opts Options) *Page {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opts.Name = path
	p, err := Build(f, opts)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

// repoLogs are the repository's own logs: every dialect, the seed sample
// and the hostile ones.
func repoLogs(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{"dialects", "seed", "hostile"} {
		m, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "testdata", dir, "*.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) == 0 {
		t.Fatal("no repository logs")
	}
	return out
}

// history is the whole history a step's context stands for.
func history(st *Step) []Msg {
	c := st.Context
	var h []Msg
	if c.Base != nil {
		h = slices.Clone(history(c.Base)[:c.Carried])
	}
	return append(h, c.Messages...)
}

// checkContexts compares each step's context on the page with what
// `dshtrace derive --before-step` gives for it: the same messages, seq for
// seq, role for role, content byte for byte.
func checkContexts(t *testing.T, path string, p *Page) (steps int) {
	t.Helper()
	if len(p.Sessions) == 0 {
		return 0
	}
	seen := map[sessionlog.StepRef]bool{}
	for _, turn := range p.Sessions[0].Turns {
		for _, st := range turn.Steps {
			ref := sessionlog.StepRef{Turn: turn.Number, Step: st.Number}
			if seen[ref] {
				continue // Derive finds the first step of those numbers only
			}
			seen[ref] = true
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := sessionlog.Derive(f, sessionlog.Options{}, &ref)
			f.Close()
			switch {
			case errors.Is(err, sessionlog.ErrStepNotFound):
				if st.Context != nil {
					t.Errorf("%s step %s: the page has a context, derive finds no request", path, ref)
				}
				continue
			case err != nil:
				t.Fatalf("%s step %s: derive: %v", path, ref, err)
			case st.Context == nil:
				t.Errorf("%s step %s: no context on the page, derive gives %d messages", path, ref, want.Len())
				continue
			}
			got := history(st)
			if len(got) != want.Len() || st.Context.Len != want.Len() {
				t.Errorf("%s step %s: %d messages (Len %d), derive gives %d", path, ref, len(got), st.Context.Len, want.Len())
				continue
			}
			for i, m := range want.All() {
				if want := (Msg{m.Seq(), m.Role(), m.Content(), m.ToolCallID(), m.IsError(), m.Provider(), m.Model()}); got[i] != want {
					t.Errorf("%s step %s message %d: seq %d %s, derive gives seq %d %s", path, ref, i, got[i].Seq, got[i].Role, m.Seq(), m.Role())
				}
			}
			steps++
		}
	}
	return steps
}

// TestContextsAreDerive: every step's context is exactly the projection
// `derive --before-step` gives, for the repository's logs.
func TestContextsAreDerive(t *testing.T) {
	steps := 0
	for _, path := range repoLogs(t) {
		if filepath.Base(path) == "unsupported-version.jsonl" {
			continue // no reader reads it (TestUnreadable)
		}
		steps += checkContexts(t, path, buildFile(t, path, Options{}))
	}
	t.Logf("%d steps compared", steps)
	if steps < 20 {
		t.Fatalf("only %d steps compared", steps)
	}
}

// TestContextsAreDeriveCorpus does the same for every corpus log, and
// requires each to build.
func TestContextsAreDeriveCorpus(t *testing.T) {
	logs, steps := testcorpus.Logs(t), 0
	for _, l := range logs {
		steps += checkContexts(t, l.Path, buildFile(t, l.Path, Options{}))
	}
	t.Logf("%d logs, %d steps compared", len(logs), steps)
}

// TestPageOwnsItsStrings: the decoder reuses each row's memory for the
// next, so a page that kept a view into a row would show a later row's
// bytes; every type, id and header field on the page is still the one its
// row had, checked against a decoder that hands out rows of their own.
func TestPageOwnsItsStrings(t *testing.T) {
	// Besides the repository's logs, one long enough that the decoder's
	// buffers turn over many times, of event types no decoder table holds.
	long := filepath.Join(t.TempDir(), "long.jsonl")
	var b strings.Builder
	b.WriteString(`{"type":"session","version":4,"id":"long-session","createdAt":1,"isSeeded":false,"delegationDepth":0}` + "\n")
	b.WriteString(`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}` + "\n")
	for i := 1; i < 3000; i++ {
		fmt.Fprintf(&b, `{"type":"plugin/event-%d","seq":%d,"time":1,"data":{"pad":"%s"}}`+"\n", i, i, strings.Repeat("x", i%700))
	}
	if err := os.WriteFile(long, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range append(repoLogs(t), long) {
		if filepath.Base(path) == "unsupported-version.jsonl" {
			continue
		}
		p := buildFile(t, path, Options{})
		want := map[int64]string{} // seq → type, of the first session
		seen := map[int64]int{}
		var header *sessionlog.Header
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := sessionlog.NewDecoder(f, sessionlog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for {
			row, err := dec.Next()
			if err != nil {
				break
			}
			if row.Header != nil && header == nil {
				header = row.Header
			}
			for _, e := range row.Events {
				if row.Wrapper == sessionlog.WrapNone || row.SessionID == p.Sessions[0].ID {
					if seen[e.Seq]++; seen[e.Seq] == 1 {
						want[e.Seq] = e.Type
					}
				}
			}
		}
		dec.Close()
		f.Close()
		s := p.Sessions[0]
		for _, r := range s.Rows {
			if r.Count > 0 && s.rowOf.get(r.Seq) == r && r.Type != want[r.Seq] {
				t.Errorf("%s line %d: row type %q, want %q", path, r.Line, r.Type, want[r.Seq])
			}
		}
		for _, turn := range s.Turns {
			for _, n := range turn.Notes {
				if seen[n.Seq] == 1 && n.Type != want[n.Seq] {
					t.Errorf("%s seq %d: note type %q, want %q", path, n.Seq, n.Type, want[n.Seq])
				}
			}
		}
		if header == nil {
			continue
		}
		i := slices.IndexFunc(p.Sessions, func(s *Session) bool { return s.ID == header.ID })
		if i < 0 || p.Sessions[i].Header == nil || *p.Sessions[i].Header != *header {
			t.Errorf("%s: no session with the header %+v", path, header)
		}
	}
}

// TestChildren: subagent sessions known from a root go to the call in
// flight when each was created, one each, else to the header only.
func TestChildren(t *testing.T) {
	p := buildFile(t, filepath.Join("..", "..", "..", "..", "testdata", "dialects", "v4-tools.jsonl"), Options{})
	// call_1 runs 1788000000410–420, call_2 1788000000411–430.
	at, all := children(p.Sessions[0], []Child{{"late", 1788000009999}, {"b", 1788000000416}, {"a", 1788000000415}})
	want := []Link{{Session: "a", Call: "call-call_1"}, {Session: "b", Call: "call-call_2"}, {Session: "late"}}
	if !slices.Equal(all, want) || len(at) != 2 || at["call-call_2"].Session != "b" {
		t.Errorf("got %v (at calls %v), want %v", all, at, want)
	}
	if at, all := children(p.Sessions[0], nil); at != nil || all != nil {
		t.Errorf("no children: got %v %v", at, all)
	}
}

// TestLateClose: a turn superseded by the next turn/start is dangling; the
// turn/end dsh writes for it afterwards closes it late, and the page says
// both, as the trace does (a close_turn span).
func TestLateClose(t *testing.T) {
	const log = `{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":2,"data":{"turn":1,"step":1}}
{"type":"turn/start","seq":2,"time":3,"data":{"turn":2}}
{"type":"turn/end","seq":3,"time":4,"data":{"turn":1,"reason":{"kind":"interrupted"}}}
{"type":"turn/end","seq":4,"time":5,"data":{"turn":2,"reason":{"kind":"completed"}}}
`
	p, err := Build(strings.NewReader(log), Options{Name: "late"})
	if err != nil {
		t.Fatal(err)
	}
	turns := p.Sessions[0].Turns
	if len(turns) != 2 {
		t.Fatalf("%d turns", len(turns))
	}
	t1, t2 := turns[0], turns[1]
	if t1.DanglingCause != "superseded" || t1.Late == nil || t1.LateReason.Kind != "interrupted" || t1.LateSeq != 3 {
		t.Errorf("turn 1: cause %q, late %v, late reason %q at seq %d", t1.DanglingCause, t1.Late, t1.LateReason.Kind, t1.LateSeq)
	}
	if got := reasonLabel(t1); got != "dangling (superseded), closed late: interrupted" {
		t.Errorf("turn 1 reads %q", got)
	}
	if t2.Dangling() || t2.Reason.Kind != "completed" || len(t1.Rows) != 3 || len(t2.Rows) != 2 {
		t.Errorf("turn 2: %q dangling %v; rows %d and %d", t2.Reason.Kind, t2.Dangling(), len(t1.Rows), len(t2.Rows))
	}
	var b strings.Builder
	if err := Render(&b, p, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<b>Closed late.</b> dsh wrote this turn's <a href="#seq-3">turn/end</a>`) {
		t.Error("the page does not say turn 1 closed late")
	}
}
