//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// The fake secrets of testdata/secret-session.jsonl: an API key in the
// prompt, in a tool's arguments (as a bearer token) and in its result, and a
// database password in the arguments and the result.
const (
	secretKey      = "sk-proj-Zq8v2LmN4xR7tY1wK9pB3cD6"
	secretPassword = "hunter2-Tr0ub4dor"
	secretSession  = "5ec2e7aa-1111-4222-8333-444455556666"
)

// The overlay on deploy/collector/redact-content.yaml: loopback addresses
// come from its environment variables; the traces go to the test's OTLP
// sink instead of Jaeger. Everything else — the processors, the connector's
// capture_content — is the shipped file's.
const redactOverlay = `
exporters:
  otlp_http/sink:
    traces_endpoint: http://%s/v1/traces
    compression: none
    retry_on_failure:
      enabled: false
service:
  pipelines:
    traces:
      exporters: [otlp_http/sink]
`

// traceSink is an OTLP/HTTP traces endpoint that keeps what it receives.
type traceSink struct {
	mu    sync.Mutex
	spans []ptrace.Span
}

func (s *traceSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	for _, rs := range req.Traces().ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				c := ptrace.NewSpan()
				sp.CopyTo(c)
				s.spans = append(s.spans, c)
			}
		}
	}
	s.mu.Unlock()
	resp, _ := ptraceotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(resp)
}

// freePorts returns n loopback addresses free at the moment.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

func (s *traceSink) snapshot() []ptrace.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ptrace.Span(nil), s.spans...)
}

// TestRedactContent runs deploy/collector/redact-content.yaml (content
// capture on, the transform and redaction processors in the traces
// pipeline), posts a session whose prompt, tool arguments and tool result
// hold a fake API key and password, and requires of the exported spans: no
// secret anywhere, the masks where they were, and the rest of the captured
// content intact.
func TestRedactContent(t *testing.T) {
	bin := lookPath(t, "OTELCOL_DSH", toolsHint)
	body, err := os.ReadFile(filepath.Join("testdata", "secret-session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// The fixture really holds the secrets.
	for _, s := range []string{secretKey, "password=" + secretPassword, "Bearer " + secretKey} {
		if strings.Count(string(body), s) == 0 {
			t.Fatalf("testdata/secret-session.jsonl lacks %q", s)
		}
	}
	// Every address of the collector under this test is a free loopback
	// port of the moment: none is shared with the other tests.
	ports := freePorts(t, 6)
	ingest, health := ports[0], ports[1]

	sink := &traceSink{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: sink}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	dir := t.TempDir()
	overlay := filepath.Join(dir, "overlay.yaml")
	if err := os.WriteFile(overlay, []byte(fmt.Sprintf(redactOverlay, l.Addr())), 0o644); err != nil {
		t.Fatal(err)
	}
	sessions := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(sessions, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"HEALTH_ENDPOINT=" + health, "SESSION_EVENT_ENDPOINT=" + ingest,
		"OTLP_GRPC_ENDPOINT=" + ports[2], "OTLP_HTTP_ENDPOINT=" + ports[3],
		"PROMETHEUS_ENDPOINT=" + ports[4], "TELEMETRY_HOST=127.0.0.1", "TELEMETRY_PORT=" + addrPort(ports[5]),
		"STATE_DIR=" + filepath.Join(dir, "state"), "DSH_SESSIONS=" + sessions,
	}
	col := start(t, dir, "otelcol-dsh", bin, env,
		"--config=../deploy/collector/redact-content.yaml", "--config="+overlay)
	poll(t, "otelcol-dsh healthy", 30*time.Second, httpOK("http://"+health+"/"), col)

	res := post(t, "http://"+ingest+"/v1/sessions/"+secretSession+"/events", viaPost, body)
	if res.code != http.StatusAccepted || res.Accepted == 0 {
		t.Fatalf("post: HTTP %d %s", res.code, res.raw)
	}
	trace := turnrender.TraceID(secretSession, 1)
	var spans []ptrace.Span
	poll(t, "the turn's spans exported", 30*time.Second, func() error {
		spans = sink.snapshot()
		for _, sp := range spans {
			if sp.TraceID() == trace && sp.ParentSpanID().IsEmpty() {
				return nil
			}
		}
		return fmt.Errorf("%d spans exported, not the turn's root yet", len(spans))
	}, col)

	// Every string attribute of every exported span, by span name and key.
	attrs := map[string]string{}
	for _, sp := range spans {
		for k, v := range sp.Attributes().All() {
			attrs[sp.Name()+" "+k] += v.AsString()
		}
	}
	all := strings.Join(func() []string {
		var out []string
		for k, v := range attrs {
			out = append(out, k+"="+v)
		}
		return out
	}(), "\n")
	for _, secret := range []string{secretKey, secretPassword, "Zq8v2LmN4xR7"} {
		if strings.Contains(all, secret) {
			t.Errorf("exported spans still hold %q:\n%s", secret, all)
		}
	}

	// The masks are where the secrets were, and the content around them is
	// still there.
	want := map[string][]string{
		"chat deepseek-v4-flash gen_ai.input.messages": {
			"Deploy with my key [REDACTED] and check the database login."},
		"execute_tool bash gen_ai.tool.call.arguments": {
			"psql 'host=db user=app password=***'", "-c 'select 1'",
			"Authorization: Bearer [REDACTED]", "https://deploy.example/v1/release"},
		"execute_tool bash gen_ai.tool.call.result": {
			"connected as app (password=***)", "release accepted for token [REDACTED]"},
		"chat deepseek-v4-flash gen_ai.output.messages": {
			"Checking the login, then deploying.", "The database login works and the release was accepted."},
		// summary: info counts the masked attributes: arguments and result.
		"execute_tool bash redaction.masked.count": {"2"},
	}
	for key, parts := range want {
		got, ok := attrs[key]
		if !ok {
			t.Errorf("no exported span attribute %q", key)
			continue
		}
		for _, p := range parts {
			if !strings.Contains(got, p) {
				t.Errorf("%s = %s\nwant it to contain %q", key, got, p)
			}
		}
	}
	if t.Failed() {
		t.Logf("exported attributes:\n%s", all)
	}
}
