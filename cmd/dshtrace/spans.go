package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
	"github.com/dshtrace/dshtrace/sessionlog"
)

func runSpans(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("spans", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print OTLP JSON, one ExportTraceServiceRequest (one turn) per line")
	endpoint := fs.String("otlp-endpoint", "", "send the spans over OTLP/HTTP to this URL (e.g. http://localhost:4318)")
	agent := fs.String("agent-name", turnengine.DefaultAgentName, "agent name when the header has no agentPreset")
	capture := fs.Bool("capture-content", false, "put prompts, outputs and tool payloads on spans")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	if fs.NArg() != 1 {
		return &exitError{code: 2, err: errors.New("spans: exactly one FILE expected")}
	}
	name := fs.Arg(0)
	f, err := openInput(name, stdin)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	defer f.Close()
	eng := turnengine.New(turnengine.Config{AgentName: *agent, CaptureContent: *capture})
	// A log without a header or wrapper names no session: use the file name.
	fallback := strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	if err := turnengine.Replay(eng, f, sessionlog.Options{}, fallback, time.Now()); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("%s: %w", name, err)}
	}
	turns := eng.Drain()
	if *endpoint != "" {
		if err := sendOTLP(*endpoint, turnrender.Traces(scopeName, turns)); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	if *asJSON {
		var m ptrace.JSONMarshaler
		for _, t := range turns {
			b, err := m.MarshalTraces(turnrender.Traces(scopeName, []*turnengine.Turn{t}))
			if err != nil {
				return err
			}
			stdout.Write(append(b, '\n'))
		}
		return nil
	}
	if *endpoint != "" {
		fmt.Fprintf(stdout, "sent %d turns to %s\n", len(turns), *endpoint)
		return nil
	}
	printSpanTree(stdout, turnrender.Traces(scopeName, turns))
	return nil
}

// sendOTLP posts traces as OTLP/HTTP protobuf; a bare endpoint gets the
// standard /v1/traces path.
func sendOTLP(endpoint string, td ptrace.Traces) error {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("--otlp-endpoint %q: want a URL such as http://localhost:4318", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	body, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post(u.String(), "application/x-protobuf", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("sending to %s: %w", u, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("sending to %s: HTTP %d: %s", u, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

// printSpanTree prints each trace as an indented tree of spans.
func printSpanTree(w io.Writer, td ptrace.Traces) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		spans := rss.At(i).ScopeSpans().At(0).Spans()
		children := map[string][]ptrace.Span{}
		var roots []ptrace.Span
		for j := 0; j < spans.Len(); j++ {
			s := spans.At(j)
			if s.ParentSpanID().IsEmpty() {
				roots = append(roots, s)
				continue
			}
			children[s.ParentSpanID().String()] = append(children[s.ParentSpanID().String()], s)
		}
		var walk func(s ptrace.Span, depth int)
		walk = func(s ptrace.Span, depth int) {
			dur := time.Duration(s.EndTimestamp() - s.StartTimestamp())
			fmt.Fprintf(w, "%s%s  %s%s\n", strings.Repeat("  ", depth), s.Name(), dur, spanSummary(s))
			for _, c := range children[s.SpanID().String()] {
				walk(c, depth+1)
			}
		}
		for _, r := range roots {
			fmt.Fprintf(w, "trace %s\n", r.TraceID())
			walk(r, 1)
		}
	}
}

// spanSummary lists the attributes worth a glance.
func spanSummary(s ptrace.Span) string {
	var parts []string
	a := s.Attributes()
	for _, k := range []string{"dsh.turn", "dsh.turn.end_reason", "dsh.dangling.cause", "dsh.step", "dsh.attempt",
		"gen_ai.tool.call.id", "dsh.tool.outcome", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "error.type"} {
		if v, ok := a.Get(k); ok {
			parts = append(parts, k+"="+v.AsString())
		}
	}
	if v, ok := a.Get("gen_ai.response.finish_reasons"); ok {
		parts = append(parts, "finish="+v.AsString())
	}
	if s.Status().Code() == ptrace.StatusCodeError {
		parts = append(parts, "ERROR")
	}
	if len(parts) == 0 {
		return ""
	}
	return "  " + strings.Join(parts, " ")
}

// scopeName is the instrumentation scope of the spans the CLI renders.
const scopeName = "github.com/dshtrace/dshtrace/cmd/dshtrace"
