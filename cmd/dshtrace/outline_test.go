package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// outlineOf runs an Outliner over a JSONL snippet and returns every turn it
// produced, the open one last.
func outlineOf(t *testing.T, jsonl string) []*Turn {
	t.Helper()
	dec, err := sessionlog.NewDecoder(strings.NewReader(strings.TrimLeft(jsonl, "\n")), sessionlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	o := NewOutliner()
	var turns []*Turn
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range row.Problems {
			t.Fatalf("test input line %d: %s", row.Line, p)
		}
		for i := range row.Events {
			if turn := o.Add(&row.Events[i]); turn != nil {
				turns = append(turns, turn)
			}
		}
	}
	if turn := o.Close(); turn != nil {
		turns = append(turns, turn)
	}
	return turns
}

// oneStep returns the only step of the only turn.
func oneStep(t *testing.T, turns []*Turn) *Step {
	t.Helper()
	if len(turns) != 1 || len(turns[0].Steps) != 1 {
		t.Fatalf("want 1 turn with 1 step, got %d turns", len(turns))
	}
	return turns[0].Steps[0]
}

func TestOutlineAttemptsAndTokens(t *testing.T) {
	const open = `
{"type":"turn/start","seq":0,"time":100,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":100,"data":{"turn":1,"step":1}}
{"type":"request/header","seq":2,"time":100,"data":{"header":{"config":{"provider":"p","model":"m"}},"reason":"initial"}}
`
	const close = `
{"type":"step/end","seq":20,"time":200,"data":{"turn":1,"step":1}}
{"type":"turn/end","seq":21,"time":200,"data":{"turn":1,"reason":{"kind":"completed"}}}
`
	tests := []struct {
		name     string
		body     string
		tokens   Tokens
		hasUsage bool
		attempts int
		model    string
	}{{
		// A failed attempt counts through its usage chunk; the committed
		// one through message.usage, not also its chunk (§8.2).
		name: "v0 retry: failed attempt's chunk plus committed message usage",
		body: `
{"type":"assistant/chunk","seq":3,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":7,"outputTokens":1}}}}
{"type":"assistant/chunk","seq":4,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"error","failure":{"message":"x","code":"RATE_LIMIT"}}}}}
{"type":"llm/retry","seq":5,"time":102,"data":{"retryId":"r","turn":1,"step":1,"provider":"p","mode":"normal","policyKey":"k","retry":1,"maxRetries":1,"delayMs":1,"failure":{"message":"x","code":"RATE_LIMIT"}}}
{"type":"llm/retry-started","seq":6,"time":103,"data":{"retryId":"r","turn":1,"step":1,"retry":1}}
{"type":"assistant/chunk","seq":7,"time":104,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"ok"}}}
{"type":"assistant/chunk","seq":8,"time":104,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":900,"outputTokens":900}}}}
{"type":"assistant/chunk","seq":9,"time":105,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"stop"}}}}
{"type":"assistant/message","seq":10,"time":105,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[{"type":"text","text":"ok"}],"source":{"kind":"model","provider":"dp","model":"dm"}},"usage":{"inputTokens":10,"outputTokens":2,"cacheReadTokens":30,"cacheWriteTokens":4}},"sourceEventSeqs":[7,8,9],"surfaceOp":"append"}
`,
		tokens: Tokens{Input: 17, Cache: 34, Output: 3}, hasUsage: true, attempts: 2, model: "dp/dm",
	}, {
		name: "v0 message without usage falls back to its attempt's usage chunk",
		body: `
{"type":"assistant/chunk","seq":3,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":5,"outputTokens":6,"cacheReadTokens":1}}}}
{"type":"assistant/chunk","seq":4,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"stop"}}}}
{"type":"assistant/message","seq":5,"time":105,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"dp","model":"dm"}}},"sourceEventSeqs":[3,4],"surfaceOp":"append"}
`,
		tokens: Tokens{Input: 5, Cache: 1, Output: 6}, hasUsage: true, attempts: 1, model: "dp/dm",
	}, {
		// Two finish chunks: two attempts, even with no retry event between.
		name: "v0 attempts split at finish chunks",
		body: `
{"type":"assistant/chunk","seq":3,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"error","failure":{"message":"x","code":"CONTEXT_WINDOW_EXCEEDED"}}}}}
{"type":"assistant/chunk","seq":4,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":3,"outputTokens":4}}}}
{"type":"assistant/chunk","seq":5,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"stop"}}}}
{"type":"assistant/message","seq":6,"time":105,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"dp","model":"dm"}}},"sourceEventSeqs":[4,5],"surfaceOp":"append"}
`,
		tokens: Tokens{Input: 3, Output: 4}, hasUsage: true, attempts: 2, model: "dp/dm",
	}, {
		// A cancelled stream has no finish chunk; the interrupted message
		// commits the attempt still streaming.
		name: "v0 interrupted message without sourceEventSeqs commits the open attempt",
		body: `
{"type":"assistant/chunk","seq":3,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"par"}}}
{"type":"assistant/message","seq":4,"time":105,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[{"type":"text","text":"par"}],"source":{"kind":"model","provider":"dp","model":"dm"}},"interrupted":true},"surfaceOp":"append"}
`,
		attempts: 1, model: "dp/dm",
	}, {
		name: "v0 message with no chunks is an attempt of its own",
		body: `
{"type":"assistant/message","seq":3,"time":105,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"dp","model":"dm"}},"usage":{"inputTokens":1,"outputTokens":1}},"surfaceOp":"append"}
`,
		tokens: Tokens{Input: 1, Output: 1}, hasUsage: true, attempts: 1, model: "dp/dm",
	}, {
		// A failed attempt has no message: the model is the latest request
		// record before it, here request/context after request/header.
		name: "failed attempt only: model from the latest request record",
		body: `
{"type":"request/context","seq":3,"time":100,"data":{"provider":"cp","model":"cm"}}
{"type":"assistant/chunk","seq":4,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"error","failure":{"message":"x","code":"AUTH"}}}}}
{"type":"request/context","seq":5,"time":100,"data":{"provider":"later","model":"later"}}
`,
		attempts: 1, model: "cp/cm",
	}, {
		name: "v2+ attempt stream usage plus message usage over its stream usage",
		body: `
{"type":"assistant/attempt","seq":3,"time":101,"data":{"turn":1,"step":1,"stream":[{"type":"chunk","time":101,"chunk":{"type":"usage","usage":{"inputTokens":2,"outputTokens":3}}},{"type":"chunk","time":101,"chunk":{"type":"finish","reason":{"kind":"error","failure":{"message":"x","code":"SERVER"}}}}]}}
{"type":"assistant/attempt","seq":4,"time":101,"data":{"turn":1,"step":1,"stream":[{"type":"chunk","time":101,"chunk":{"type":"finish","reason":{"kind":"aborted","failure":{"message":"x","code":"ABORTED"}}}}]}}
{"type":"assistant/message","seq":5,"time":105,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"dp","model":"dm"}},"usage":{"inputTokens":10,"outputTokens":20},"stream":[{"type":"chunk","time":104,"chunk":{"type":"usage","usage":{"inputTokens":900,"outputTokens":900}}},{"type":"chunk","time":105,"chunk":{"type":"finish","reason":{"kind":"stop"}}}]},"surfaceOp":"append"}
`,
		tokens: Tokens{Input: 12, Output: 23}, hasUsage: true, attempts: 3, model: "dp/dm",
	}, {
		name: "v2+ message without usage counts its stream's usage",
		body: `
{"type":"assistant/message","seq":3,"time":105,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"dp","model":"dm"}},"stream":[{"type":"chunk","time":104,"chunk":{"type":"usage","usage":{"inputTokens":4,"outputTokens":5}}}]},"surfaceOp":"append"}
`,
		tokens: Tokens{Input: 4, Output: 5}, hasUsage: true, attempts: 1, model: "dp/dm",
	}, {
		name:     "no attempt: no model, no usage",
		body:     "",
		attempts: 0, model: "-",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := oneStep(t, outlineOf(t, open+strings.TrimLeft(tt.body, "\n")+strings.TrimLeft(close, "\n")))
			if s.Tokens != tt.tokens || s.HasUsage != tt.hasUsage {
				t.Errorf("tokens = %+v (usage %v), want %+v (usage %v)", s.Tokens, s.HasUsage, tt.tokens, tt.hasUsage)
			}
			if s.Attempts != tt.attempts {
				t.Errorf("attempts = %d, want %d", s.Attempts, tt.attempts)
			}
			if got := modelText(s.Provider, s.Model); got != tt.model {
				t.Errorf("model = %q, want %q", got, tt.model)
			}
		})
	}
}

func TestOutlineToolPairing(t *testing.T) {
	// Results arrive in an order that only the pairing rules untangle: by
	// call id, by the cited tool/call seq, by tool name, then oldest.
	turns := outlineOf(t, `
{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":0,"data":{"turn":1,"step":1}}
{"type":"tool/call","seq":2,"time":10,"data":{"turn":1,"step":1,"callId":"a","name":"read","arguments":"{}"}}
{"type":"tool/call","seq":3,"time":20,"data":{"turn":1,"step":1,"callId":"b","name":"read","arguments":"{}"}}
{"type":"tool/call","seq":4,"time":30,"data":{"turn":1,"step":1,"callId":"c","name":"bash","arguments":"{}"}}
{"type":"tool/call","seq":5,"time":40,"data":{"turn":1,"step":1,"callId":"d","name":"grep","arguments":"{}"}}
{"type":"tool/call","seq":6,"time":50,"data":{"turn":1,"step":1,"callId":"e","name":"glob","arguments":"{}"}}
{"type":"tool/result","seq":7,"time":15,"data":{"turn":1,"step":1,"message":{"role":"tool","toolName":"read","content":"cited b","isError":false}},"surfaceOp":"append","sourceEventSeqs":[3]}
{"type":"tool/result","seq":8,"time":100,"data":{"turn":1,"step":1,"message":{"role":"tool","toolName":"bash","content":"by name c","isError":true}},"surfaceOp":"append"}
{"type":"tool/result","seq":9,"time":110,"data":{"turn":1,"step":1,"message":{"id":"r","role":"tool","toolCallId":"d","source":{"kind":"tool","callId":"d"},"content":[],"isError":true},"error":{"name":"E","code":"DENIED"}},"surfaceOp":"append"}
{"type":"tool/result","seq":10,"time":120,"data":{"turn":1,"step":1,"message":{"role":"tool","content":"oldest a","isError":false}},"surfaceOp":"append"}
{"type":"tool/result","seq":11,"time":130,"data":{"turn":1,"step":1,"message":{"id":"r2","role":"tool","toolCallId":"d","source":{"kind":"tool","callId":"d"},"content":[]}},"surfaceOp":{"op":"replace","startSeq":9,"endSeq":9},"sourceEventSeqs":[9]}
{"type":"step/end","seq":12,"time":140,"data":{"turn":1,"step":1}}
{"type":"step/start","seq":13,"time":150,"data":{"turn":1,"step":2}}
{"type":"tool/result","seq":14,"time":160,"data":{"turn":1,"step":2,"message":{"role":"tool","toolName":"glob","content":"not e: e is step 1's","isError":false}},"surfaceOp":"append"}
{"type":"step/end","seq":15,"time":170,"data":{"turn":1,"step":2}}
`)
	if len(turns) != 1 || len(turns[0].Steps) != 2 {
		t.Fatalf("want 1 open turn with 2 steps, got %+v", turns)
	}
	type want struct {
		id, tool, outcome, code string
		latency                 int64
		ok, clamped             bool
	}
	check := func(c *Call, w want) {
		t.Helper()
		ms, ok, clamped, _ := c.Latency()
		if c.ID != w.id || c.Tool != w.tool || c.Outcome() != w.outcome || c.ErrorCode != w.code || ms != w.latency || ok != w.ok || clamped != w.clamped {
			t.Errorf("call %s %s %s %q latency %d ok %v clamped %v, want %+v", c.ID, c.Tool, c.Outcome(), c.ErrorCode, ms, ok, clamped, w)
		}
	}
	s1, s2 := turns[0].Steps[0], turns[0].Steps[1]
	if len(s1.Calls) != 5 || len(s2.Calls) != 1 {
		t.Fatalf("step calls %d and %d, want 5 and 1", len(s1.Calls), len(s2.Calls))
	}
	check(s1.Calls[0], want{id: "a", tool: "read", outcome: "ok", latency: 110, ok: true})
	check(s1.Calls[1], want{id: "b", tool: "read", outcome: "ok", latency: 0, ok: true, clamped: true})
	check(s1.Calls[2], want{id: "c", tool: "bash", outcome: "error", latency: 70, ok: true})
	check(s1.Calls[3], want{id: "d", tool: "grep", outcome: "error", code: "DENIED", latency: 70, ok: true})
	check(s1.Calls[4], want{id: "e", tool: "glob", outcome: "unknown"})
	// Step 2's result pairs with no call of step 1 by guesswork.
	check(s2.Calls[0], want{id: "", tool: "glob", outcome: "ok"}) // no call id at all
}

func TestOutlineResultWithoutCall(t *testing.T) {
	// Crash repair's TOOL_NOT_STARTED result closes an advertised call that
	// never got a tool/call: it is shown, named from the advertisement.
	turns := outlineOf(t, `
{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":0,"data":{"turn":1,"step":1}}
{"type":"assistant/message","seq":2,"time":0,"data":{"turn":1,"step":1,"message":{"id":"m","role":"assistant","content":[{"type":"tool-call","id":"x","name":"write","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"}}},"surfaceOp":"append"}
{"type":"tool/result","seq":3,"time":0,"data":{"turn":1,"step":1,"message":{"id":"interrupted-tool-result-x-3","role":"user","source":{"kind":"tool","callId":"x"},"content":[{"type":"tool-result","toolCallId":"x","isError":true,"content":[]}]},"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append"}
{"type":"step/end","seq":4,"time":0,"data":{"turn":1,"step":1}}
{"type":"turn/end","seq":5,"time":0,"data":{"turn":1,"reason":{"kind":"interrupted"}}}
`)
	c := oneStep(t, turns).Calls
	if len(c) != 1 || c[0].ID != "x" || c[0].Tool != "write" || c[0].Started || c[0].Outcome() != "error" || c[0].ErrorCode != "TOOL_NOT_STARTED" {
		t.Fatalf("calls = %+v", c)
	}
	if _, ok, _, _ := c[0].Latency(); ok {
		t.Error("a call without tool/call has no latency")
	}
}

func TestOutlineDispatch(t *testing.T) {
	turns := outlineOf(t, `
{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":0,"data":{"turn":1,"step":1}}
{"type":"tool/call","seq":2,"time":10,"data":{"turn":1,"step":1,"callId":"p","name":"run_code","arguments":"{}"}}
{"type":"tool/ptc-dispatch-start","seq":3,"time":20,"data":{"rootCallId":"p","parentCallId":"p","subCallId":"p:ptc:1","name":"bash","arguments":{}}}
{"type":"tool/ptc-dispatch-start","seq":4,"time":21,"data":{"rootCallId":"p","parentCallId":"p:ptc:1","subCallId":"p:ptc:1:ptc:1","name":"read","arguments":{}}}
{"type":"tool/ptc-dispatch","seq":5,"time":25,"data":{"rootCallId":"p","parentCallId":"p:ptc:1","subCallId":"p:ptc:1:ptc:1","name":"read","arguments":{},"isError":false,"content":[]}}
{"type":"tool/ptc-dispatch","seq":6,"time":19,"data":{"rootCallId":"p","parentCallId":"p","subCallId":"p:ptc:1","name":"bash","arguments":{},"isError":true,"error":{"name":"E","code":"DENIED"},"content":[]}}
{"type":"tool/code-dispatch","seq":7,"time":30,"data":{"rootCallId":"gone","parentCallId":"gone","subCallId":"gone:code:1","name":"ls","arguments":{},"isError":false,"content":[]}}
{"type":"tool/result","seq":8,"time":40,"data":{"turn":1,"step":1,"message":{"id":"r","role":"tool","toolCallId":"p","source":{"kind":"tool","callId":"p"},"content":[]}},"sourceEventSeqs":[2],"surfaceOp":"append"}
{"type":"step/end","seq":9,"time":50,"data":{"turn":1,"step":1}}
{"type":"turn/end","seq":10,"time":50,"data":{"turn":1,"reason":{"kind":"completed"}}}
`)
	calls := oneStep(t, turns).Calls
	if len(calls) != 2 {
		t.Fatalf("want the call and one parentless sub-call, got %d calls", len(calls))
	}
	p := calls[0]
	if p.ID != "p" || len(p.Subs) != 1 || p.Subs[0].ID != "p:ptc:1" || len(p.Subs[0].Subs) != 1 || p.Subs[0].Subs[0].ID != "p:ptc:1:ptc:1" {
		t.Fatalf("sub-call tree wrong: %+v", p)
	}
	sub := p.Subs[0]
	if ms, ok, clamped, back := sub.Latency(); ms != 0 || !ok || !clamped || back != 1 || sub.Outcome() != "error" || sub.ErrorCode != "DENIED" {
		t.Errorf("sub-call latency %d ok %v clamped %v back %d outcome %s", ms, ok, clamped, back, sub.Outcome())
	}
	if ms, _, _, _ := sub.Subs[0].Latency(); ms != 4 || sub.Subs[0].Outcome() != "ok" {
		t.Errorf("nested sub-call latency %d outcome %s", ms, sub.Subs[0].Outcome())
	}
	if o := calls[1]; o.ID != "gone:code:1" || !o.Sub || o.Started || o.Outcome() != "ok" {
		t.Errorf("parentless sub-call = %+v", o)
	}
}

func TestOutlineTurnBoundaries(t *testing.T) {
	turns := outlineOf(t, `
{"type":"step/start","seq":5,"time":50,"data":{"turn":3,"step":2}}
{"type":"step/end","seq":6,"time":60,"data":{"turn":3,"step":2}}
{"type":"turn/end","seq":7,"time":70,"data":{"turn":3,"reason":"error"}}
{"type":"turn/start","seq":8,"time":500,"data":{"turn":4}}
{"type":"turn/end","seq":9,"time":400,"data":{"turn":4,"reason":{"kind":"aborted","reason":{"kind":"hook","reason":"no"}}}}
{"type":"turn/start","seq":10,"time":600,"data":{"turn":5}}
{"type":"step/start","seq":11,"time":600,"data":{"turn":5,"step":1}}
{"type":"turn/start","seq":12,"time":700,"data":{"turn":6}}
`)
	if len(turns) != 4 {
		t.Fatalf("got %d turns, want 4", len(turns))
	}
	// A stream joined late: turn 3 has no turn/start, so no duration.
	if tr := turns[0]; tr.Number != 3 || tr.Started || !tr.Ended || reasonText(tr) != "error" || len(tr.Steps) != 1 || !tr.Steps[0].Ended {
		t.Errorf("turn 3 = %+v", tr)
	}
	if _, ok, _, _ := turns[0].Duration(); ok {
		t.Error("turn 3 has no start, so no duration")
	}
	// The clock went back 100ms: clamp at 0 and say so.
	if ms, ok, clamped, back := turns[1].Duration(); ms != 0 || !ok || !clamped || back != 100 {
		t.Errorf("turn 4 duration %d ok %v clamped %v back %d", ms, ok, clamped, back)
	}
	if got := reasonText(turns[1]); got != `aborted (hook: "no")` {
		t.Errorf("turn 4 reason %q", got)
	}
	// turn/start 6 found turn 5 still open: it is returned open, its step too.
	if tr := turns[2]; tr.Number != 5 || tr.Ended || reasonText(tr) != "open" || tr.Steps[0].Ended {
		t.Errorf("turn 5 = %+v", tr)
	}
	if tr := turns[3]; tr.Number != 6 || tr.Ended || len(tr.Steps) != 0 {
		t.Errorf("turn 6 = %+v", tr)
	}
}

// TestOutlineAgreesWithTurnEngine runs every corpus file through the
// Outliner and through internal/turnengine, written independently for the
// collector, and requires the same steps, attempt counts, token totals and
// tool calls (ids, tools, outcomes, error codes, sub-call nesting). The
// engine leaves out a fork's inherited prefix (§10.5), so the Outliner is
// fed only the events after the header's seedLength here.
func TestOutlineAgreesWithTurnEngine(t *testing.T) {
	root := testcorpus.Dir(t)
	for _, rel := range testcorpus.Files(t) {
		f, err := os.Open(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		dec, err := sessionlog.NewDecoder(f, sessionlog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		eng := turnengine.New(turnengine.Config{})
		o := NewOutliner()
		var mine []*Turn
		now := time.Unix(0, 0)
		for {
			row, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			for i := range row.Events {
				e := &row.Events[i]
				eng.Ingest(turnengine.Input{SessionID: "s", Event: e, Format: dec.Format(), Header: dec.Header()}, now)
				if h := dec.Header(); h != nil && h.HasSeedLength && e.Seq < h.SeedLength {
					continue
				}
				if tr := o.Add(e); tr != nil {
					mine = append(mine, tr)
				}
			}
		}
		dec.Close()
		f.Close()
		if tr := o.Close(); tr != nil {
			mine = append(mine, tr)
		}
		eng.Flush(turnengine.CauseEndOfInput, now)
		if got, want := outlineSummary(mine), engineSummary(eng.Drain()); got != want {
			t.Errorf("%s: outline and turn engine disagree:\n--- outline\n%s--- engine\n%s", rel, got, want)
		}
	}
}

// outlineSummary renders the figures TestOutlineAgreesWithTurnEngine compares.
func outlineSummary(turns []*Turn) string {
	var b strings.Builder
	var calls func([]*Call, string)
	calls = func(cs []*Call, indent string) {
		for _, c := range cs {
			fmt.Fprintf(&b, "%s%s %s %s %s\n", indent, c.ID, c.Tool, c.Outcome(), c.ErrorCode)
			calls(c.Subs, indent+" ")
		}
	}
	for _, t := range turns {
		fmt.Fprintf(&b, "turn %d\n", t.Number)
		for _, s := range t.Steps {
			fmt.Fprintf(&b, " step %d attempts %d tokens %d/%d/%d\n", s.Number, s.Attempts, s.Tokens.Input, s.Tokens.Cache, s.Tokens.Output)
			calls(s.Calls, "  ")
		}
	}
	return b.String()
}

// engineSummary renders the turn engine's turns like outlineSummary.
func engineSummary(turns []*turnengine.Turn) string {
	var b strings.Builder
	var calls func([]*turnengine.ToolCall, string)
	calls = func(cs []*turnengine.ToolCall, indent string) {
		for _, c := range cs {
			id := c.CallID
			if c.SubCallID != "" {
				id = c.SubCallID
			}
			fmt.Fprintf(&b, "%s%s %s %s %s\n", indent, id, c.Name, c.Outcome, c.ErrorCode)
			calls(c.SubCalls, indent+" ")
		}
	}
	for _, t := range turns {
		fmt.Fprintf(&b, "turn %d\n", t.Number)
		for _, s := range t.Steps {
			var tok Tokens
			for _, a := range s.Attempts {
				if a.Usage != nil {
					tok.add(a.Usage)
				}
			}
			fmt.Fprintf(&b, " step %d attempts %d tokens %d/%d/%d\n", s.Number, len(s.Attempts), tok.Input, tok.Cache, tok.Output)
			calls(s.Tools, "  ")
		}
	}
	return b.String()
}
