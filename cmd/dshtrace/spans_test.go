package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

func TestSpansTree(t *testing.T) {
	code, out, errOut := runCLI(t, "", "spans", seedSample)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := []string{
		"  invoke_agent dsh  90ms  dsh.turn=1 dsh.turn.end_reason=completed",
		"    step  70ms  dsh.turn=1 dsh.step=1",
		"      chat unknown  40ms  dsh.turn=1 dsh.step=1 dsh.attempt=1",
		"      execute_tool bash  10ms  dsh.turn=1 dsh.step=1 gen_ai.tool.call.id=call_1 dsh.tool.outcome=ok",
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("spans output lacks %q:\n%s", w, out)
		}
	}
}

// --json prints one ExportTraceServiceRequest per turn, one per line, and
// an open turn comes out closed as dangling.
func TestSpansJSON(t *testing.T) {
	in := corpusFile(t, "v0/examples/acp-agent/tests/snapshots/max-tokens-continue/session.jsonl")
	code, out, errOut := runCLI(t, "", "spans", "--json", in)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want one per turn (2)", len(lines))
	}
	var u ptrace.JSONUnmarshaler
	for i, l := range lines {
		td, err := u.UnmarshalTraces([]byte(l))
		if err != nil {
			t.Fatalf("line %d is not OTLP JSON: %v", i+1, err)
		}
		root := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
		if !strings.HasPrefix(root.Name(), "invoke_agent ") {
			t.Fatalf("line %d starts with span %q", i+1, root.Name())
		}
	}
	code, out, _ = runCLI(t, "", "spans", "--json", corpusFile(t, "v0/packages/test-support/acp-snapshot/tests/fixtures/suite/pin-turn/session.jsonl"))
	if code != 0 || !strings.Contains(out, `"dsh.dangling.cause"`) || !strings.Contains(out, `"end_of_input"`) {
		t.Fatalf("open turn not closed as dangling at end of input (exit %d): %s", code, out)
	}
}

// --otlp-endpoint sends the spans as OTLP/HTTP protobuf to /v1/traces.
func TestSpansOTLPEndpoint(t *testing.T) {
	var mu sync.Mutex
	var got []ptrace.Traces
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "unexpected "+r.URL.Path+" "+r.Header.Get("Content-Type"), http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(r.Body)
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req.Traces())
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	code, out, errOut := runCLI(t, "", "spans", "--otlp-endpoint", srv.URL, seedSample)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if len(got) != 1 || got[0].SpanCount() != 4 {
		t.Fatalf("received %d requests; want one with 4 spans", len(got))
	}
	code, _, errOut = runCLI(t, "", "spans", "--otlp-endpoint", srv.URL+"/elsewhere", seedSample)
	if code != 2 || !strings.Contains(errOut, "HTTP 400") {
		t.Fatalf("a refusing endpoint: exit %d, %s", code, errOut)
	}
}

func corpusFile(t *testing.T, rel string) string {
	t.Helper()
	return inputPath(t, rel)
}
