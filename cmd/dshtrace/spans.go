package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// runSpans prints, or sends, the trace of every turn of one input, from
// the turn engine and span mapping the connector uses.
func runSpans(e *env, args []string) error {
	fs := newFlags("spans")
	asJSON := fs.Bool("json", false, "print OTLP JSON, one ExportTraceServiceRequest (one turn) per line")
	endpoint := fs.String("otlp-endpoint", "", "send the spans over OTLP/HTTP to `URL` (e.g. http://localhost:4318)")
	agent := fs.String("agent-name", turnengine.DefaultAgentName, "agent `NAME` when the header has no agentPreset")
	capture := fs.Bool("capture-content", false, "put prompts, outputs and tool payloads on spans")
	session := sessionFlag(fs)
	files, err := parseArgs(e, fs, args, oneFile)
	if err != nil {
		return err
	}
	name := files[0]
	f, err := openInput(name, e.stdin)
	if err != nil {
		return err
	}
	defer f.Close()
	in, err := newInput(name, f, *session, e.stderr, false)
	if err != nil {
		return err
	}
	defer in.Close()
	eng := turnengine.New(turnengine.Config{AgentName: *agent, CaptureContent: *capture})
	if err := replayTurns(eng, in, time.Now()); err != nil {
		return err
	}
	turns := eng.Drain()
	if *endpoint != "" {
		if err := sendOTLP(*endpoint, turnrender.Traces(scopeName, turns)); err != nil {
			return err
		}
	}
	if *asJSON {
		var m ptrace.JSONMarshaler
		w := bufio.NewWriter(e.stdout)
		defer w.Flush()
		for _, t := range turns {
			b, err := m.MarshalTraces(turnrender.Traces(scopeName, []*turnengine.Turn{t}))
			if err != nil {
				return err
			}
			w.Write(append(b, '\n'))
		}
		return nil
	}
	if *endpoint != "" {
		fmt.Fprintf(e.stdout, "sent %s to %s\n", plural(len(turns), "turn"), *endpoint)
		return nil
	}
	printSpanTree(e.stdout, turnrender.Traces(scopeName, turns))
	return nil
}

// replayTurns feeds every event of the input to the engine, each filed
// under its session (a file's rows under its header's id, else the file's
// name: a log with no header or wrapper names no session), as
// turnengine.Replay does; what is open at the end closes as dangling,
// cause end_of_input.
func replayTurns(eng *turnengine.Engine, in *input, now time.Time) error {
	for {
		row, err := in.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		id, _ := in.sessionOf(row)
		for i := range row.Events {
			eng.Ingest(turnengine.Input{SessionID: id, Event: &row.Events[i], Format: in.Format(), Header: in.Header()}, now)
		}
	}
	eng.Flush(turnengine.CauseEndOfInput, now)
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
