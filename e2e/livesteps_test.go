//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// TestLiveSteps: a turn whose turn/end is withheld shows its finished
// steps in Jaeger — step, chat and tool spans under the root's id — and no
// root; once the turn/end is posted, the root follows, and every span of
// the turn is there once.
func TestLiveSteps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	j := newJaegerPorts(t)
	c := newCollector(t, dir, testConfig("suite")).toJaeger(j)

	log := shiftTimes(t, filepath.Join("..", "testdata", "dialects", "v4-tools.jsonl"), time.Now().Add(-time.Minute))
	lines := bytes.SplitAfter(bytes.TrimSpace(log), []byte("\n"))
	last := -1 // the turn/end's row: it and what follows are withheld
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"type":"turn/end"`)) {
			last = i
		}
	}
	if last < 0 {
		t.Fatal("the sample has no turn/end")
	}
	const id = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d" // the header's
	trace := turnrender.TraceID(id, 1)

	startJaeger(t, dir, "jaeger", j)
	col := c.start("otelcol-dsh")

	url := c.ingestURL() + "/v1/sessions/" + id + "/events"
	if r := post(t, url, viaPost, bytes.Join(lines[:last], nil)); r.code != http.StatusAccepted {
		t.Fatalf("post without the turn/end: %d %s", r.code, r.raw)
	}
	var stepsBefore int
	poll(t, "the running turn's finished steps in Jaeger", 20*time.Second, func() error {
		td, err := jaegerTrace(ctx, j.query(), trace)
		if err != nil {
			return err
		}
		stepsBefore = 0
		for _, s := range allSpans(td) {
			if s.ParentSpanID().IsEmpty() {
				return fmt.Errorf("a root span %q before the turn/end", s.Name())
			}
			if s.Name() == "step" {
				stepsBefore++
				if s.ParentSpanID() != turnrender.TurnSpanID(id, 1) {
					return fmt.Errorf("step parent %s, want the root's id", s.ParentSpanID())
				}
			}
		}
		if stepsBefore == 0 {
			return fmt.Errorf("no step span yet")
		}
		return nil
	}, col)
	// Still no root a while later: the turn is open.
	time.Sleep(time.Second)
	if td, err := jaegerTrace(ctx, j.query(), trace); err == nil {
		if roots, _ := turnSpans(td); roots != 0 {
			t.Fatalf("%d root spans while the turn is open", roots)
		}
	}

	if r := post(t, url, viaPost, bytes.Join(lines[last:], nil)); r.code != http.StatusAccepted {
		t.Fatalf("post of the turn/end: %d %s", r.code, r.raw)
	}
	want := expectedTurn(t, log, id)
	poll(t, "the root after the turn/end", 20*time.Second, func() error {
		td, err := jaegerTrace(ctx, j.query(), trace)
		if err != nil {
			return err
		}
		roots, all := turnSpans(td)
		if roots != 1 || all != want {
			return fmt.Errorf("%d roots, %d spans; want 1, %d", roots, all, want)
		}
		return nil
	}, col)
	t.Logf("%d step spans before the turn/end; %d spans after", stepsBefore, want)
	if strings.Contains(col.output(), "panic:") {
		t.Errorf("otelcol-dsh panicked:\n%s", col.tail(60))
	}
}

// expectedTurn is the number of spans the engine maps the log's turn 1 to.
func expectedTurn(t *testing.T, log []byte, id string) int {
	e := turnengine.New(turnengine.Config{})
	if err := turnengine.Replay(e, bytes.NewReader(log), sessionlog.Options{}, id, time.Now()); err != nil {
		t.Fatal(err)
	}
	return turnrender.Traces("github.com/dshtrace/dshtrace/connector/turnstate", e.Drain()).SpanCount()
}
