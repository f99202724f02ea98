package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// update rewrites the golden files instead of comparing against them.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// seedSample is the seed dialect's sample log (docs/format.md §12).
const seedSample = "../../testdata/seed/sample.jsonl"

// turnsGoldens are the inputs whose outlines are pinned, each checked by
// hand against its file: corpus paths (relative to the corpus) or, with a
// "../" prefix, repository files.
var turnsGoldens = []struct {
	input, golden string
}{
	{"v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl", "v0-parallel-tool-calls.txt"},
	{"v0/examples/acp-agent/tests/snapshots/error-finish/session.jsonl", "v0-error-finish.txt"},
	{"v0/examples/acp-agent/tests/snapshots/cancel/session.jsonl", "v0-cancel.txt"},
	{"v0/examples/acp-agent/tests/snapshots/max-tokens-continue/session.jsonl", "v0-max-tokens-continue.txt"},
	{"v0/examples/acp-agent/tests/snapshots/code-mode-turn/session.jsonl", "v0-code-mode-turn.txt"},
	{"v0/examples/acp-agent/tests/snapshots/subagent-fork-in-process/session.1.jsonl", "v0-subagent-fork-child.txt"},
	{"v0/examples/headless-agent/tests/semantic-checkpoint-snapshots/tool-outcome-unknown/session.expected.jsonl", "v0-tool-outcome-unknown.txt"},
	{"v0/examples/headless-agent/tests/snapshots/compaction-recovery/session.jsonl", "v0-compaction-recovery.txt"},
	{"v0/packages/test-support/acp-snapshot/tests/fixtures/suite/pin-turn/session.jsonl", "v0-pin-turn.txt"},
	{"v4/snapshots/sdk/tool-error-details/session.v4.jsonl", "v4-tool-error-details.txt"},
	{"v4/snapshots/sdk/max-tokens-continue/session.v4.jsonl", "v4-max-tokens-continue.txt"},
	{"v4/snapshots/session/error-finish/writer.expected.jsonl", "v4-error-finish.txt"},
	{"wire/v0/examples/headless-agent/tests/snapshots/provider-retry/stream-json.expected.jsonl", "wire-v0-provider-retry.txt"},
	{"../" + seedSample, "seed-sample.txt"},
}

// inputPath resolves a turnsGoldens input.
func inputPath(t *testing.T, input string) string {
	if rest, ok := strings.CutPrefix(input, "../"); ok {
		return rest
	}
	return filepath.Join(testcorpus.Dir(t), input)
}

// runCLI drives the command line and returns its exit code and output.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestTurnsGolden(t *testing.T) {
	for _, g := range turnsGoldens {
		t.Run(g.golden, func(t *testing.T) {
			code, out, errs := runCLI(t, "", "turns", inputPath(t, g.input))
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			path := filepath.Join("testdata", "golden", g.golden)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if out != string(want) {
				t.Errorf("outline of %s differs from %s:\n--- got\n%s--- want\n%s", g.input, path, out, want)
			}
		})
	}
}

// negative finds a negative number standing alone in an outline.
var negative = regexp.MustCompile(`(^|\s)-[0-9]`)

// TestTurnsCorpus outlines every corpus file: each must be readable and
// produce an outline, each turn/start must give one turn line, and no
// duration may be negative however the clock jumped.
func TestTurnsCorpus(t *testing.T) {
	for _, l := range testcorpus.Logs(t) {
		rel, path := l.Name, l.Path
		code, out, errs := runCLI(t, "", "turns", path)
		if code != 0 {
			t.Errorf("%s: exit %d, stderr %q", rel, code, errs)
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		starts := bytes.Count(b, []byte(`"type":"turn/start"`))
		lines := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "turn ") {
				lines++
			}
		}
		if lines != starts {
			t.Errorf("%s: %d turn lines for %d turn/start events", rel, lines, starts)
		}
		if m := negative.FindString(out); m != "" {
			t.Errorf("%s: negative figure %q in outline:\n%s", rel, m, out)
		}
	}
}

func TestTurnsStdinAndTail(t *testing.T) {
	sample, err := os.ReadFile(seedSample)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "golden", "seed-sample.txt"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, string(sample), "turns", "-")
	if code != 0 || out != string(want) {
		t.Errorf("turns - (stdin): exit %d, output\n%s", code, out)
	}
	// A final record without its newline is a torn tail: not decoded, noted.
	torn := string(sample) + `{"type":"turn/start","seq":10,"time":1755000000100,"data":{"turn":2}}`
	code, out, errs := runCLI(t, torn, "turns", "-")
	if code != 0 || out != string(want) || errs != "-:11: note: torn tail: final record of 69 bytes has no newline\n" {
		t.Errorf("torn tail: exit %d, stderr %q, output\n%s", code, errs, out)
	}
	code, out, errs = runCLI(t, "", "turns", "-")
	if code != 2 || out != "" || errs != "dshtrace turns: -: no readable row: the input is empty\n" {
		t.Errorf("empty input: exit %d, output %q, stderr %q", code, out, errs)
	}
}

// TestTurnsSessions: wrapped rows of interleaved sessions get an outline
// each, with a session line whenever the output switches session.
func TestTurnsSessions(t *testing.T) {
	const wire = `{"type":"session_event","sessionId":"A","event":{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}}
{"type":"session_event","sessionId":"B","event":{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}}
{"jsonrpc":"2.0","method":"session.status","params":{"sessionId":"B","status":"running"}}
{"type":"session_event","sessionId":"A","event":{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}}
{"type":"session_event","sessionId":"A","event":{"type":"turn/start","seq":2,"time":3,"data":{"turn":2}}}
{"type":"session_event","sessionId":"B","event":{"type":"turn/end","seq":1,"time":3,"data":{"turn":1,"reason":{"kind":"blocked"}}}}
`
	const want = `session A
turn 1  completed  1ms  cost -
session B
turn 1  blocked  2ms  cost -
session A
turn 2  dangling (end_of_input)  -  cost -
`
	code, out, errs := runCLI(t, wire, "turns", "-")
	if code != 0 || out != want {
		t.Errorf("exit %d, stderr %q, output\n%s\nwant\n%s", code, errs, out, want)
	}
}

// TestTurnsInherited: in v2+ a tagged session/end-seed marks where a fork's
// inherited prefix ends; the outline says so at that point.
func TestTurnsInherited(t *testing.T) {
	const log = `{"type":"session","version":4,"id":"c","createdAt":0,"isSeeded":true,"delegationDepth":0,"parentSession":"P"}
{"type":"turn/start","seq":0,"time":10,"data":{"turn":1}}
{"type":"turn/end","seq":1,"time":11,"data":{"turn":1,"reason":{"kind":"completed"}}}
{"type":"session/end-seed","seq":2,"time":12,"data":{"inherited":true}}
{"type":"turn/start","seq":3,"time":13,"data":{"turn":2}}
{"type":"turn/end","seq":4,"time":15,"data":{"turn":2,"reason":{"kind":"completed"}}}
`
	const want = `turn 1  completed  1ms  cost -
(the turns above are inherited from parent session P; this session's own events start at seq 2)
turn 2  completed  2ms  cost -
`
	code, out, errs := runCLI(t, log, "turns", "-")
	if code != 0 || out != want {
		t.Errorf("exit %d, stderr %q, output\n%s\nwant\n%s", code, errs, out, want)
	}
}

func TestTurnsErrors(t *testing.T) {
	tests := []struct {
		name, stdin string
		args        []string
		stderr      string
	}{
		{"no file", "", []string{"turns"}, "want exactly one FILE"},
		{"two files", "", []string{"turns", "a", "b"}, "want exactly one FILE"},
		{"unknown flag", "", []string{"turns", "--bogus", "x"}, "unknown flag --bogus"},
		{"missing file", "", []string{"turns", "testdata/does-not-exist.jsonl"}, "does-not-exist.jsonl"},
		{"unsupported version", `{"type":"session","version":9,"id":"s","createdAt":0,"delegationDepth":0}` + "\n",
			[]string{"turns", "-"}, "-: line 1: unsupported session format version 9"},
		{"corrupt zstd", "\x28\xb5\x2f\xfd\x00\x00\x00\x00garbage\n", []string{"turns", "-"}, "-: line 1: undecodable zstd stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runCLI(t, tt.stdin, tt.args...)
			if code != 2 || !strings.Contains(errs, tt.stderr) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, errs, tt.stderr)
			}
		})
	}
}

// outline runs `turns -` over a JSONL snippet, which must decode without
// problems, and returns the outline.
func outline(t *testing.T, jsonl string) string {
	t.Helper()
	jsonl = strings.TrimLeft(jsonl, "\n")
	dec, err := sessionlog.NewDecoder(strings.NewReader(jsonl), sessionlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
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
	}
	code, out, errs := runCLI(t, jsonl, "turns", "-")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	return out
}

// TestTurnsAttemptsAndTokens: a step's attempts, tokens and model (docs/format.md §9.2),
// v0/v1 attempts split from chunks and v2+ attempts recorded whole.
func TestTurnsAttemptsAndTokens(t *testing.T) {
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
		name, body, step string
	}{{
		// A failed attempt counts through its usage chunk; the committed
		// one through message.usage, not also its chunk (docs/format.md §9.2).
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
		step: "  step 1  dp/dm  in 51  cache read 30 write 4  out 3  cost -  attempts 2",
	}, {
		name: "v0 message without usage falls back to its attempt's usage chunk",
		body: `
{"type":"assistant/chunk","seq":3,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":5,"outputTokens":6,"cacheReadTokens":1}}}}
{"type":"assistant/chunk","seq":4,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"stop"}}}}
{"type":"assistant/message","seq":5,"time":105,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"dp","model":"dm"}}},"sourceEventSeqs":[3,4],"surfaceOp":"append"}
`,
		step: "  step 1  dp/dm  in 6  cache read 1 write 0  out 6  cost -  attempts 1",
	}, {
		// Two finish chunks: two attempts, even with no retry event between.
		name: "v0 attempts split at finish chunks",
		body: `
{"type":"assistant/chunk","seq":3,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"error","failure":{"message":"x","code":"CONTEXT_WINDOW_EXCEEDED"}}}}}
{"type":"assistant/chunk","seq":4,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"usage","usage":{"inputTokens":3,"outputTokens":4}}}}
{"type":"assistant/chunk","seq":5,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"stop"}}}}
{"type":"assistant/message","seq":6,"time":105,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"dp","model":"dm"}}},"sourceEventSeqs":[4,5],"surfaceOp":"append"}
`,
		step: "  step 1  dp/dm  in 3  cache read 0 write 0  out 4  cost -  attempts 2",
	}, {
		// A cancelled stream has no finish chunk; the interrupted message
		// commits the attempt still streaming.
		name: "v0 interrupted message without sourceEventSeqs commits the open attempt",
		body: `
{"type":"assistant/chunk","seq":3,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"par"}}}
{"type":"assistant/message","seq":4,"time":105,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[{"type":"text","text":"par"}],"source":{"kind":"model","provider":"dp","model":"dm"}},"interrupted":true},"surfaceOp":"append"}
`,
		step: "  step 1  dp/dm  in -  cache -  out -  cost -  attempts 1",
	}, {
		name: "v0 message with no chunks is an attempt of its own",
		body: `
{"type":"assistant/message","seq":3,"time":105,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"dp","model":"dm"}},"usage":{"inputTokens":1,"outputTokens":1}},"surfaceOp":"append"}
`,
		step: "  step 1  dp/dm  in 1  cache read 0 write 0  out 1  cost -  attempts 1",
	}, {
		// A failed attempt has no message: the model is the latest request
		// record before it, here request/context after request/header.
		name: "failed attempt only: model from the latest request record",
		body: `
{"type":"request/context","seq":3,"time":100,"data":{"provider":"cp","model":"cm"}}
{"type":"assistant/chunk","seq":4,"time":101,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"error","error":{"message":"x","code":"AUTH"}}}}}
{"type":"request/context","seq":5,"time":100,"data":{"provider":"later","model":"later"}}
`,
		step: "  step 1  cp/cm  in -  cache -  out -  cost -  attempts 1",
	}, {
		name: "v2+ attempt stream usage plus message usage over its stream usage",
		body: `
{"type":"assistant/attempt","seq":3,"time":101,"data":{"turn":1,"step":1,"stream":[{"type":"chunk","time":101,"chunk":{"type":"usage","usage":{"inputTokens":2,"outputTokens":3}}},{"type":"chunk","time":101,"chunk":{"type":"finish","reason":{"kind":"error","failure":{"message":"x","code":"SERVER"}}}}]}}
{"type":"assistant/attempt","seq":4,"time":101,"data":{"turn":1,"step":1,"stream":[{"type":"chunk","time":101,"chunk":{"type":"finish","reason":{"kind":"aborted","failure":{"message":"x","code":"ABORTED"}}}}]}}
{"type":"assistant/message","seq":5,"time":105,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"dp","model":"dm"}},"usage":{"inputTokens":10,"outputTokens":20},"stream":[{"type":"chunk","time":104,"chunk":{"type":"usage","usage":{"inputTokens":900,"outputTokens":900}}},{"type":"chunk","time":105,"chunk":{"type":"finish","reason":{"kind":"stop"}}}]},"surfaceOp":"append"}
`,
		step: "  step 1  dp/dm  in 12  cache read 0 write 0  out 23  cost -  attempts 3",
	}, {
		name: "v2+ message without usage counts its stream's usage",
		body: `
{"type":"assistant/message","seq":3,"time":105,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[],"source":{"kind":"model","provider":"dp","model":"dm"}},"stream":[{"type":"chunk","time":104,"chunk":{"type":"usage","usage":{"inputTokens":4,"outputTokens":5}}}]},"surfaceOp":"append"}
`,
		step: "  step 1  dp/dm  in 4  cache read 0 write 0  out 5  cost -  attempts 1",
	}, {
		name: "no attempt: no model, no usage",
		body: "",
		step: "  step 1  -  in -  cache -  out -  cost -  attempts 0",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outline(t, open+strings.TrimLeft(tt.body, "\n")+strings.TrimLeft(close, "\n"))
			if want := "turn 1  completed  100ms  cost -\n" + tt.step + "\n"; got != want {
				t.Errorf("got\n%swant\n%s", got, want)
			}
		})
	}
}

// TestTurnsOutline pins how turns, tool calls and dispatch sub-calls are
// outlined: pairing, outcomes, clamped times, open and unseen boundaries.
func TestTurnsOutline(t *testing.T) {
	tests := []struct {
		name, log, want string
	}{{
		// Results arrive in an order that only the pairing rules (docs/format.md §13.3,
		// turnmodel.Calls) untangle: by call id, by the cited tool/call seq,
		// by tool name; a seed-dialect result with no evidence closes no
		// call (a is left unknown); a rewrite (surfaceOp replace) is not an
		// execution.
		// The guesses stay in the result's step: step 2's result is not
		// step 1's call e. A call known only from its result is named from
		// its step's advertisement, which this seed-style log has none of.
		name: "tool pairing",
		log: `
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
{"type":"tool/result","seq":10,"time":120,"data":{"turn":1,"step":1,"message":{"role":"tool","content":"no evidence: closes no call","isError":false}},"surfaceOp":"append"}
{"type":"tool/result","seq":11,"time":130,"data":{"turn":1,"step":1,"message":{"id":"r2","role":"tool","toolCallId":"d","source":{"kind":"tool","callId":"d"},"content":[]}},"surfaceOp":{"op":"replace","startSeq":9,"endSeq":9},"sourceEventSeqs":[9]}
{"type":"step/end","seq":12,"time":140,"data":{"turn":1,"step":1}}
{"type":"step/start","seq":13,"time":150,"data":{"turn":1,"step":2}}
{"type":"tool/result","seq":14,"time":160,"data":{"turn":1,"step":2,"message":{"role":"tool","toolName":"glob","content":"not e: e is step 1's","isError":false}},"surfaceOp":"append"}
{"type":"step/end","seq":15,"time":170,"data":{"turn":1,"step":2}}
`,
		want: `turn 1  dangling (end_of_input)  -  cost -
  step 1  -  in -  cache -  out -  cost -  attempts 0
    a  read  unknown         -
    b  read  ok              0s (clamped: clock went back 5ms)
    c  bash  error           70ms
    d  grep  error (DENIED)  70ms
    e  glob  unknown         -
    -  -     ok              - (no tool/call)
  step 2  -  in -  cache -  out -  cost -  attempts 0
    -  glob  ok              - (no tool/call)
`,
	}, {
		// Crash repair's TOOL_NOT_STARTED result closes an advertised call
		// that never got a tool/call: it is shown, named from the
		// advertisement, with no latency.
		name: "result without call",
		log: `
{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":0,"data":{"turn":1,"step":1}}
{"type":"assistant/message","seq":2,"time":0,"data":{"turn":1,"step":1,"message":{"id":"m","role":"assistant","content":[{"type":"tool-call","id":"x","name":"write","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"}}},"surfaceOp":"append"}
{"type":"tool/result","seq":3,"time":0,"data":{"turn":1,"step":1,"message":{"id":"interrupted-tool-result-x-3","role":"user","source":{"kind":"tool","callId":"x"},"content":[{"type":"tool-result","toolCallId":"x","isError":true,"content":[]}]},"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append"}
{"type":"step/end","seq":4,"time":0,"data":{"turn":1,"step":1}}
{"type":"turn/end","seq":5,"time":0,"data":{"turn":1,"reason":{"kind":"interrupted"}}}
`,
		want: `turn 1  interrupted  0s  cost -
  step 1  p/m  in -  cache -  out -  cost -  attempts 1
    x  write  error (TOOL_NOT_STARTED)  - (no tool/call)
`,
	}, {
		// Sub-calls nest under the call or sub-call their parentCallId
		// names; latencies are the logged ones, not clamped into the parent
		// (a settle 1ms before its start is reported as such). A settle
		// with no dispatch start has no call to hang from and is left out.
		name: "dispatch",
		log: `
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
`,
		want: `turn 1  completed  50ms  cost -
  step 1  -  in -  cache -  out -  cost -  attempts 0
    p                  run_code  ok              30ms
      p:ptc:1          bash      error (DENIED)  0s (clamped: clock went back 1ms)
        p:ptc:1:ptc:1  read      ok              4ms
`,
	}, {
		// A stream joined late: turn 3's turn/start was never seen, so its
		// events belong to no turn the engine opened and are left out.
		// Turn 4 ends 100ms before it starts: clamped at 0, and said so.
		// turn/start 6 finds turn 5 still open: 5 is dangling, superseded,
		// with its step open; 6 is dangling too, left open at the end of the
		// input.
		name: "turn boundaries",
		log: `
{"type":"step/start","seq":5,"time":50,"data":{"turn":3,"step":2}}
{"type":"step/end","seq":6,"time":60,"data":{"turn":3,"step":2}}
{"type":"turn/end","seq":7,"time":70,"data":{"turn":3,"reason":"error"}}
{"type":"turn/start","seq":8,"time":500,"data":{"turn":4}}
{"type":"turn/end","seq":9,"time":400,"data":{"turn":4,"reason":{"kind":"aborted","reason":{"kind":"hook","reason":"no"}}}}
{"type":"turn/start","seq":10,"time":600,"data":{"turn":5}}
{"type":"step/start","seq":11,"time":600,"data":{"turn":5,"step":1}}
{"type":"turn/start","seq":12,"time":700,"data":{"turn":6}}
`,
		want: `turn 4  aborted (hook: "no")  0s (clamped: clock went back 100ms)  cost -
turn 5  dangling (superseded)  -  cost -
  step 1 (open)  -  in -  cache -  out -  cost -  attempts 0
turn 6  dangling (end_of_input)  -  cost -
`,
	}, {
		name: "abort causes and error codes",
		log: `
{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}
{"type":"turn/end","seq":1,"time":1,"data":{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"user"}}}}
{"type":"turn/start","seq":2,"time":2,"data":{"turn":2}}
{"type":"turn/end","seq":3,"time":4,"data":{"turn":2,"reason":{"kind":"error","error":{"message":"x","code":"AUTH"}}}}
{"type":"turn/start","seq":4,"time":4,"data":{"turn":3}}
{"type":"turn/end","seq":5,"time":7,"data":{"turn":3,"reason":{"kind":"blocked"}}}
`,
		want: `turn 1  aborted (user)  1ms  cost -
turn 2  error (AUTH)  2ms  cost -
turn 3  blocked  3ms  cost -
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := outline(t, tt.log); got != tt.want {
				t.Errorf("got\n%swant\n%s", got, tt.want)
			}
		})
	}
}

// TestTurnsCost: a step priced by the built-in table shows its cost, the
// turn the sum of its steps', worked out by hand. The turn is on
// 2026-08-04, after DeepSeek's cache-hit cut: deepseek-v4-flash costs
// $0.14 per 1M uncached input tokens, $0.0028 cache read, $0.14 cache
// write (billed as a miss) and $0.28 output.
//
//	step 1: 1000×0.14 + 8000×0.0028 + 500×0.14 + 200×0.28 = 140 + 22.4 + 70 + 56 = 288.4 µ$
//	step 2: an unknown model — no price, no cost
func TestTurnsCost(t *testing.T) {
	const log = `{"type":"session","version":4,"id":"c","createdAt":0,"isSeeded":false,"delegationDepth":0}
{"type":"turn/start","seq":0,"time":1785821460000,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":1785821460000,"data":{"turn":1,"step":1}}
{"type":"assistant/message","seq":2,"time":1785821461000,"data":{"turn":1,"step":1,"message":{"id":"a","role":"assistant","content":[{"type":"text","text":"ok"}],"source":{"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"}},"usage":{"inputTokens":1000,"outputTokens":200,"cacheReadTokens":8000,"cacheWriteTokens":500}},"surfaceOp":"append"}
{"type":"step/end","seq":3,"time":1785821461000,"data":{"turn":1,"step":1}}
{"type":"step/start","seq":4,"time":1785821461000,"data":{"turn":1,"step":2}}
{"type":"assistant/message","seq":5,"time":1785821462000,"data":{"turn":1,"step":2,"message":{"id":"b","role":"assistant","content":[{"type":"text","text":"ok"}],"source":{"kind":"model","provider":"acme","model":"acme-1"}},"usage":{"inputTokens":10,"outputTokens":1}},"surfaceOp":"append"}
{"type":"step/end","seq":6,"time":1785821462000,"data":{"turn":1,"step":2}}
{"type":"turn/end","seq":7,"time":1785821462000,"data":{"turn":1,"reason":{"kind":"completed"}}}
`
	const want = `turn 1  completed  2s  cost $0.0002884 (+1 unpriced)
  step 1  deepseek-official/deepseek-v4-flash  in 9500  cache read 8000 write 500  out 200  cost $0.0002884  attempts 1
  step 2  acme/acme-1                          in 10    cache read 0 write 0       out 1    cost -           attempts 1
`
	if got := outline(t, log); got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
}

// spansReason finds, in `spans` output, each turn's end reason as its
// trace tells it: dsh.turn.end_reason, with dsh.dangling.cause for a
// dangling turn.
var spansReason = regexp.MustCompile(`invoke_agent .*dsh\.turn=(\d+) dsh\.turn\.end_reason=(\S+)(?: dsh\.dangling\.cause=(\S+))?`)

// TestTurnsSayWhatSpansSay: for every turn of the repository's dialect
// logs, `turns` names the end reason the turn's trace carries — a dangling
// turn as dangling, with its cause, never as "open".
func TestTurnsSayWhatSpansSay(t *testing.T) {
	files, err := filepath.Glob("../../testdata/dialects/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dialect logs: %v", err)
	}
	dangling := 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, spans, _ := runCLI(t, "", "spans", f)
			_, outline, _ := runCLI(t, "", "turns", f)
			for _, m := range spansReason.FindAllStringSubmatch(spans, -1) {
				want := m[2]
				if m[2] == "dangling" {
					want = "dangling (" + m[3] + ")"
					dangling++
				}
				line := regexp.MustCompile(`(?m)^turn ` + m[1] + `  (.*?)  `).FindStringSubmatch(outline)
				if line == nil || !strings.HasPrefix(line[1], want) {
					t.Errorf("turn %s: spans say %q, turns says %v:\n%s", m[1], want, line, outline)
				}
			}
		})
	}
	if dangling == 0 {
		t.Error("no dangling turn in the dialect logs: the test checks nothing of them")
	}
}

// TestCheckSaysDangling: check names a turn the log never ends as the
// traces do — dangling, cause end_of_input — in text and in JSON.
func TestCheckSaysDangling(t *testing.T) {
	f := "../../testdata/dialects/open-turn.jsonl"
	_, spans, _ := runCLI(t, "", "spans", f)
	if !strings.Contains(spans, "dsh.turn=2 dsh.turn.end_reason=dangling dsh.dangling.cause=end_of_input") {
		t.Fatalf("spans do not close turn 2 as dangling at the end of input:\n%s", spans)
	}
	_, text, _ := runCLI(t, "", "check", f)
	text = strings.ReplaceAll(text, f, "FILE") // its name says open
	if !strings.Contains(text, "dangling turn [2] (never ended: cause end_of_input)") || strings.Contains(text, "open") {
		t.Errorf("check:\n%s", text)
	}
	_, doc, _ := runCLI(t, "", "check", "--json", f)
	doc = strings.ReplaceAll(doc, f, "FILE")
	if !strings.Contains(doc, `"dangling_turns":[2]`) || !strings.Contains(doc, `"turn":2,"reason":"dangling"`) || strings.Contains(doc, "open") {
		t.Errorf("check --json:\n%s", doc)
	}
}
