package turnrender

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// epoch is the arrival clock of every test: fixed, so goldens are stable.
var epoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// loadInputs decodes a log into engine inputs.
// testScope is the scope the connector gives its spans.
const testScope = "github.com/dshtrace/dshtrace/connector/turnstate"

func loadInputs(t *testing.T, r io.Reader, session string) []turnengine.Input {
	t.Helper()
	var out []turnengine.Input
	for _, row := range testlog.Read(t, r, session) {
		for i := range row.Events {
			out = append(out, turnengine.Input{SessionID: session, Event: &row.Events[i], Format: row.Format, Header: row.Header})
		}
	}
	return out
}

func loadFile(t *testing.T, path, session string) []turnengine.Input {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return loadInputs(t, f, session)
}

// newEngine returns an engine observed by fresh Metrics, as the connector
// runs it.
func newEngine(cfg turnengine.Config) (*turnengine.Engine, *Metrics) {
	m := NewMetrics(0)
	cfg.Observer = m
	return turnengine.New(cfg), m
}

// run feeds inputs to a fresh engine, flushes it and renders what it
// closed.
func run(cfg turnengine.Config, inputs []turnengine.Input) (*turnengine.Engine, *Metrics, ptrace.Traces) {
	e, m := newEngine(cfg)
	for _, in := range inputs {
		e.Ingest(in, epoch)
	}
	e.Flush(turnengine.CauseEndOfInput, epoch)
	return e, m, Traces(testScope, e.Drain())
}

// replayFile runs a whole log through a fresh engine.
func replayFile(t *testing.T, path string, cfg turnengine.Config) (*turnengine.Engine, *Metrics, []*turnengine.Turn) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e, m := newEngine(cfg)
	if err := turnengine.Replay(e, f, sessionlog.Options{}, strings.TrimSuffix(filepath.Base(path), ".jsonl"), epoch); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return e, m, e.Drain()
}
