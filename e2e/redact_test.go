//go:build e2e

package e2e

import (
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

// The fake secrets of testdata/secret-session.jsonl: an API key in the
// prompt, in a tool's arguments (as a bearer token) and in its result, and a
// database password in the arguments and the result.
const (
	secretKey      = "sk-proj-Zq8v2LmN4xR7tY1wK9pB3cD6"
	secretPassword = "hunter2-Tr0ub4dor"
	secretSession  = "5ec2e7aa-1111-4222-8333-444455556666"
)

// TestRedactContent runs deploy/collector/redact-content.yaml (content
// capture on, the transform and redaction processors in the traces
// pipeline), posts a session whose prompt, tool arguments and tool result
// hold a fake API key and password, and requires of the exported spans: no
// secret anywhere, the masks where they were, and the rest of the captured
// content intact.
func TestRedactContent(t *testing.T) {
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
	sink := startSink(t)
	c := newCollector(t, t.TempDir(), shippedConfig("redact-content"), testConfig("redact-to-sink")).toSink(sink)
	if err := os.MkdirAll(c.sessions(), 0o755); err != nil {
		t.Fatal(err)
	}
	col := c.start("otelcol-dsh")

	res := post(t, c.ingestURL()+"/v1/sessions/"+secretSession+"/events", viaPost, body)
	if res.code != http.StatusAccepted || res.Accepted == 0 {
		t.Fatalf("post: HTTP %d %s", res.code, res.raw)
	}
	trace := turnrender.TraceID(secretSession, 1)
	var spans []ptrace.Span
	poll(t, "the turn's spans exported", 30*time.Second, func() error {
		spans = allSpans(sink.receivedTraces())
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
