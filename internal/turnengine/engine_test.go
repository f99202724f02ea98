package turnengine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		if dangling != len(rep.DanglingTurns) {
			t.Errorf("%s: %d dangling turns, %d open at the end", rel, dangling, len(rep.DanglingTurns))
		}
		if e.OpenTurns() != 0 {
			t.Errorf("%s: %d turns still open after the flush", rel, e.OpenTurns())
		}
	}
}
