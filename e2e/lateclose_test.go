//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// TestLateCloseAfterDangling: an agent is killed mid-turn; its session file
// ends in a torn row. Long after dangling_timeout (3s here) the session is
// resumed and dsh repairs it as it does — the torn tail cut off, the
// closers appended (TOOL_OUTCOME_UNKNOWN for the call in flight,
// TOOL_NOT_STARTED for the one that never ran, step/end, turn/end
// interrupted) — and the next turn runs. In Jaeger: turn 1 has its one
// dangling root (cause timeout) and one late-close span under it saying
// interrupted; turn 2 is exact; dsh.turns.closed_late counts 1; nothing is
// emitted twice.
func TestLateCloseAfterDangling(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	j := newJaegerPorts(t)
	c := newCollector(t, dir, testConfig("suite")).toJaeger(j)
	root := c.sessions()

	log := shiftTimes(t, filepath.Join("..", "testdata", "dialects", "crash-repaired.jsonl"), time.Now().Add(-time.Minute))
	lines := bytes.SplitAfter(log, []byte("\n"))
	id := "6e7f8a9b-0c1d-4e2f-9a3b-4c5d6e7f8a9b" // the file header's
	// Rows 0–13: the header and seqs 0–12, up to tool/call call_w; the
	// repair's rows are seqs 13–16; then turn 2.
	const cut = 14
	path := filepath.Join(root, "--e2e--", id, "session.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	torn := []byte(`{"type":"tool/result","seq":13,"time":1785000000110,"data":{"turn":1,"st`) // the write the kill interrupted
	if err := os.WriteFile(path, append(bytes.Join(lines[:cut], nil), torn...), 0o644); err != nil {
		t.Fatal(err)
	}

	startJaeger(t, dir, "jaeger", j)
	col := c.start("otelcol-dsh")

	trace1, trace2 := turnrender.TraceID(id, 1), turnrender.TraceID(id, 2)
	poll(t, "turn 1 dangling in Jaeger", 30*time.Second, func() error {
		td, err := jaegerTrace(ctx, j.query(), trace1)
		if err != nil {
			return err
		}
		if r := turnReason(td); r != "dangling/timeout" {
			return fmt.Errorf("turn 1 root %q", r)
		}
		return nil
	}, col)

	// The repair: cut the torn tail, append the closers and turn 2.
	if err := os.WriteFile(path, bytes.Join(lines[:cut], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, bytes.Join(lines[cut:], nil))

	var late ptrace.Span
	poll(t, "turn 1's late close and turn 2 in Jaeger", 30*time.Second, func() error {
		td, err := jaegerTrace(ctx, j.query(), trace1)
		if err != nil {
			return err
		}
		found := 0
		for _, s := range allSpans(td) {
			if v, ok := s.Attributes().Get("dsh.turn.closed_late"); ok && v.Bool() {
				late = s
				found++
			}
		}
		if found != 1 {
			return fmt.Errorf("%d late-close spans in turn 1's trace", found)
		}
		if _, err := jaegerTrace(ctx, j.query(), trace2); err != nil {
			return err
		}
		return nil
	}, col)
	time.Sleep(2 * time.Second) // anything emitted twice would have arrived by now

	td1, err := jaegerTrace(ctx, j.query(), trace1)
	if err != nil {
		t.Fatal(err)
	}
	turns, all := turnSpans(td1)
	if turns != 1 || turnReason(td1) != "dangling/timeout" {
		t.Errorf("turn 1: %d roots, reason %q; want its one dangling root", turns, turnReason(td1))
	}
	lateSpans := 0
	for _, s := range allSpans(td1) {
		if strings.HasPrefix(s.Name(), "close_turn") {
			lateSpans++
		}
	}
	if lateSpans != 1 {
		t.Errorf("turn 1: %d late-close spans, want 1 (of %d spans)", lateSpans, all)
	}
	if r, _ := late.Attributes().Get("dsh.turn.end_reason"); r.Str() != "interrupted" {
		t.Errorf("late close says %q, want interrupted", r.Str())
	}
	if c, _ := late.Attributes().Get("dsh.dangling.cause"); c.Str() != "timeout" {
		t.Errorf("late close cause %q, want timeout", c.Str())
	}
	if n, _ := late.Attributes().Get("dsh.tool.calls_outcome_unknown"); n.Int() != 1 {
		t.Errorf("late close: %d calls of unknown outcome, want 1 (call_w)", n.Int())
	}
	if late.ParentSpanID() != turnrender.TurnSpanID(id, 1) {
		t.Errorf("late close parent %s, want turn 1's root", late.ParentSpanID())
	}

	// Turn 2 exactly as the engine maps it.
	td2, err := jaegerTrace(ctx, j.query(), trace2)
	if err != nil {
		t.Fatal(err)
	}
	if turns, _ := turnSpans(td2); turns != 1 || turnReason(td2) != "completed" {
		t.Errorf("turn 2: %d roots, reason %q", turns, turnReason(td2))
	}

	poll(t, "dsh_turns_closed_late_total", 20*time.Second, func() error {
		_, body, err := get(ctx, c.metricsURL())
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "dsh_turns_closed_late_total{") && strings.Contains(l, `dsh_turn_end_reason="interrupted"`) &&
				strings.Contains(l, `dsh_dangling_cause="timeout"`) && strings.HasSuffix(strings.Fields(l)[len(strings.Fields(l))-1], "1") {
				return nil
			}
		}
		return fmt.Errorf("no dsh_turns_closed_late_total{interrupted,timeout} 1 in the scrape")
	}, col)
	if bytes.Contains([]byte(col.output()), []byte("panic:")) {
		t.Errorf("otelcol-dsh panicked:\n%s", col.tail(60))
	}
}

// allSpans lists every span of a trace.
func allSpans(td ptrace.Traces) []ptrace.Span {
	var out []ptrace.Span
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				out = append(out, s)
			}
		}
	}
	return out
}

// lateCloseAfterDangling posts testdata's crash-repaired session as
// "e2e-late-close" to the collector at ingest in two parts — up to the
// crash, and after dangling_timeout the repair and the next turn — and
// waits until Prometheus (prom) counts its late close; jaeger is the query
// API of the collector's Jaeger.
func lateCloseAfterDangling(t *testing.T, ctx context.Context, ingest, jaeger, prom string, procs []*process) {
	t.Helper()
	log := shiftTimes(t, filepath.Join("..", "testdata", "dialects", "crash-repaired.jsonl"), time.Now().Add(-time.Minute))
	lines := bytes.SplitAfter(log, []byte("\n"))
	const cut = 14 // the header and seqs 0–12: up to tool/call call_w
	url := ingest + "/v1/sessions/e2e-late-close/events"
	if r := post(t, url, viaPost, bytes.Join(lines[:cut], nil)); r.code != http.StatusAccepted {
		t.Fatalf("late-close session, before the crash: HTTP %d %s", r.code, r.raw)
	}
	trace := turnrender.TraceID("e2e-late-close", 1)
	poll(t, "the cut turn dangling", 30*time.Second, func() error {
		td, err := jaegerTrace(ctx, jaeger, trace)
		if err == nil && turnReason(td) != "dangling/timeout" {
			err = fmt.Errorf("turn 1 root %q", turnReason(td))
		}
		return err
	}, procs...)
	if r := post(t, url, viaPost, bytes.Join(lines[cut:], nil)); r.code != http.StatusAccepted {
		t.Fatalf("late-close session, the repair: HTTP %d %s", r.code, r.raw)
	}
	poll(t, "dsh_turns_closed_late_total", 30*time.Second, returnsSeries(ctx, prom, `dsh_turns_closed_late_total{dsh_turn_end_reason="interrupted"} >= 1`), procs...)
}
