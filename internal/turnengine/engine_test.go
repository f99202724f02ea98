package turnengine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// epoch is the arrival clock of every test: fixed, so goldens are stable.
var epoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// replayFile runs a whole log through a fresh engine.
func replayFile(t *testing.T, path string, cfg Config) (*Engine, []*Turn) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e := New(cfg)
	if err := Replay(e, f, sessionlog.Options{}, strings.TrimSuffix(filepath.Base(path), ".jsonl"), epoch); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return e, e.Drain()
}

// checkTree asserts the structural rules every emitted trace keeps: one
// trace per turn, a single root, every parent present, unique span ids,
// no negative duration, children within their parents.
func checkTree(t *testing.T, name string, td ptrace.Traces) {
	t.Helper()
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		spans := rss.At(i).ScopeSpans().At(0).Spans()
		byID := map[pcommon.SpanID]ptrace.Span{}
		roots := map[pcommon.TraceID]int{}
		for j := 0; j < spans.Len(); j++ {
			s := spans.At(j)
			if _, dup := byID[s.SpanID()]; dup {
				t.Errorf("%s: duplicate span id %s (%s)", name, s.SpanID(), s.Name())
			}
			byID[s.SpanID()] = s
			if s.ParentSpanID().IsEmpty() {
				roots[s.TraceID()]++
			}
			if s.EndTimestamp() < s.StartTimestamp() {
				t.Errorf("%s: span %s ends before it starts", name, s.Name())
			}
		}
		for tr, n := range roots {
			if n != 1 {
				t.Errorf("%s: trace %s has %d roots", name, tr, n)
			}
		}
		for _, s := range byID {
			if s.ParentSpanID().IsEmpty() {
				continue
			}
			p, ok := byID[s.ParentSpanID()]
			if !ok {
				t.Errorf("%s: span %s has no parent in its trace", name, s.Name())
				continue
			}
			if p.TraceID() != s.TraceID() {
				t.Errorf("%s: span %s crosses traces", name, s.Name())
			}
			if s.StartTimestamp() < p.StartTimestamp() || s.EndTimestamp() > p.EndTimestamp() {
				t.Errorf("%s: span %s lies outside its parent %s", name, s.Name(), p.Name())
			}
		}
	}
}

// Every log — the repository's own and the corpus's — maps with zero
// violations and well-formed traces; each turn the checker counts becomes
// one trace.
func TestCorpusMaps(t *testing.T) {
	for _, l := range testcorpus.Logs(t) {
		rel, path := l.Name, l.Path
		e, turns := replayFile(t, path, Config{})
		st := e.Stats()
		if st.Violations != 0 {
			t.Errorf("%s: %d violations", rel, st.Violations)
		}
		f, _ := os.Open(path)
		rep, err := sessionlog.Check(f, sessionlog.Options{})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, tn := range rep.Turns {
			// Turns a fork inherited are its parent's: not emitted again (docs/format.md §11.5).
			if h := rep.Header; h == nil || !h.HasSeedLength || tn.StartSeq >= h.SeedLength {
				want++
			}
		}
		if len(turns) != want {
			t.Errorf("%s: %d turns emitted, want %d", rel, len(turns), want)
		}
		dangling := 0
		for _, tn := range turns {
			if tn.Dangling() {
				dangling++
			}
		}
		if dangling != len(rep.OpenTurns) {
			t.Errorf("%s: %d dangling turns, %d open at the end", rel, dangling, len(rep.OpenTurns))
		}
		checkTree(t, rel, Traces(turns))
		if e.OpenTurns() != 0 {
			t.Errorf("%s: %d turns still open after the flush", rel, e.OpenTurns())
		}
	}
}
