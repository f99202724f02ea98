package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/klauspost/compress/zstd"
)

// lines returns the given 1-based lines of text (a file's physical rows),
// each with its newline, in the order given.
func lines(t *testing.T, text string, nums ...int) string {
	t.Helper()
	all := strings.SplitAfter(text, "\n")
	var b strings.Builder
	for _, n := range nums {
		if n < 1 || n > len(all) || all[n-1] == "" {
			t.Fatalf("line %d out of range", n)
		}
		b.WriteString(all[n-1])
	}
	return b.String()
}

// lineRange is the line numbers from..to inclusive.
func lineRange(from, to int) []int {
	var out []int
	for n := from; n <= to; n++ {
		out = append(out, n)
	}
	return out
}

// queryCase is one query and the exact physical lines it must print.
type queryCase struct {
	args  []string
	lines []int // nil: nothing matches, exit 1
}

// runQueryCases runs each case against path, whose content is text.
func runQueryCases(t *testing.T, path, text string, cases []queryCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errs := runCLI(t, "", append([]string{"query", path}, c.args...)...)
			if c.lines == nil {
				if code != 1 || out != "" {
					t.Errorf("exit %d, output %q; want exit 1 and no output", code, out)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			if want := lines(t, text, c.lines...); out != want {
				t.Errorf("got rows\n%s\nwant lines %v:\n%s", out, c.lines, want)
			}
		})
	}
}

func TestQueryCorpus(t *testing.T) {
	files := []struct {
		path  string
		cases []queryCase
	}{{
		// v0 with packed chunk rows: line 12 holds seqs 10–27, line 14
		// seqs 29–59, line 25 seqs 70–91. Line 2 (seq 0) is an inbox
		// enqueue before the turn.
		path: "v0/examples/acp-agent/tests/snapshots/bash-tool-turn/session.jsonl",
		cases: []queryCase{
			{[]string{"--turn", "1"}, lineRange(3, 35)},
			{[]string{"--turn", "2"}, nil},
			// The message cites seqs 9–63: eight rows, each packed row once.
			{[]string{"--sources", "64"}, lineRange(11, 18)},
			{[]string{"--sources", "99"}, lineRange(24, 32)},
			{[]string{"--sources", "66"}, []int{20}},
			{[]string{"--sources", "66", "--transitive"}, []int{20}},
			{[]string{"--sources", "65"}, nil}, // tool/call cites nothing
			{[]string{"--call-id", "call_00_fkbBRJsUrGKd1pWVc4Gn8233"}, []int{19, 20, 21}},
			{[]string{"--call-id", "call_00"}, nil}, // ids match whole, not by prefix
		},
	}, {
		path: "v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl",
		cases: []queryCase{
			{[]string{"--call-id", "call_read_a"}, []int{19, 20, 22}},
			{[]string{"--call-id", "call_read_b"}, []int{19, 21, 23}},
			{[]string{"--sources", "21"}, []int{21}},
			{[]string{"--turn", "1"}, lineRange(3, 33)},
		},
	}, {
		// The compaction replacement (seq 21) cites [19, 20, 4]: printed in
		// file order, not citation order.
		path: "v0/examples/headless-agent/tests/snapshots/compaction-recovery/session.jsonl",
		cases: []queryCase{
			{[]string{"--sources", "21"}, []int{6, 21, 22}},
			{[]string{"--sources", "21", "--transitive"}, []int{6, 21, 22}},
			{[]string{"--sources", "28"}, lineRange(25, 29)},
		},
	}, {
		// Crash repair: the synthetic result closes the call; turn 2 follows
		// an end-seed and an inbox enqueue (lines 10–11) outside any turn.
		path: "v0/examples/headless-agent/tests/semantic-checkpoint-snapshots/tool-outcome-unknown/session.expected.jsonl",
		cases: []queryCase{
			{[]string{"--call-id", "unknown-outcome-call"}, []int{5, 6, 7}},
			{[]string{"--turn", "1"}, lineRange(2, 9)},
			{[]string{"--turn", "2"}, lineRange(12, 25)},
			{[]string{"--sources", "5"}, []int{6}},
		},
	}, {
		// The turn never ends: it runs to the end of the file.
		path: "v0/packages/test-support/acp-snapshot/tests/fixtures/suite/pin-turn/session.jsonl",
		cases: []queryCase{
			{[]string{"--turn", "1"}, []int{4}},
		},
	}, {
		// v4: line = seq + 2. The run_code call's round trip includes its
		// PTC dispatch start and settle.
		path: "v4/snapshots/sdk/tool-error-details/session.v4.jsonl",
		cases: []queryCase{
			{[]string{"--call-id", "denied-code"}, lineRange(23, 27)},
			{[]string{"--call-id", "denied-native"}, lineRange(15, 17)},
			{[]string{"--sources", "18"}, []int{9}},
			{[]string{"--sources", "25"}, []int{24}},
			{[]string{"--turn", "1"}, lineRange(6, 32)},
		},
	}}
	root := testcorpus.Dir(t)
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f.path)), func(t *testing.T) {
			path := filepath.Join(root, f.path)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			runQueryCases(t, path, string(b), f.cases)
		})
	}
}

func TestQuerySeed(t *testing.T) {
	b, err := os.ReadFile(seedSample)
	if err != nil {
		t.Fatal(err)
	}
	// No header: line = seq + 1. The tool/result (seq 7) names no call id;
	// it cites the tool/call at seq 6, which is how it joins call_1.
	runQueryCases(t, seedSample, string(b), []queryCase{
		{[]string{"--turn", "1"}, lineRange(1, 10)},
		{[]string{"--turn", "2"}, nil},
		{[]string{"--call-id", "call_1"}, []int{6, 7, 8}},
		{[]string{"--call-id", "call_2"}, nil},
		{[]string{"--sources", "7"}, []int{7}},
		{[]string{"--sources", "7", "--transitive"}, []int{7}},
		{[]string{"--sources", "5"}, []int{4, 5}},
		{[]string{"--sources", "2"}, []int{1}},
		{[]string{"--sources", "0"}, nil},
		{[]string{"--sources", "99"}, nil},
	})
}

// transitiveLog has a citation chain the corpus lacks: a replacement (seq
// 10) cites a tool result (9) and an assistant message (7); the result
// cites its call (8), the message its chunks (3–5 in one packed row, 6).
// Seq 8 is also cited directly by seq 10, and must still print once.
const transitiveLog = `{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}
{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}
{"type":"user/message","seq":2,"time":1,"data":{"id":"u","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}},"surfaceOp":"append"}
{"type":"text-chunks","seq0":3,"time0":2,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}}
{"type":"assistant/chunk","seq":6,"time":5,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"tool-calls"}}}}
{"type":"assistant/message","seq":7,"time":5,"data":{"turn":1,"step":1,"message":{"id":"m","role":"assistant","content":[{"type":"text","text":"abc"},{"type":"tool-call","id":"c1","name":"bash","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"}}},"sourceEventSeqs":[3,4,5,6],"surfaceOp":"append"}
{"type":"tool/call","seq":8,"time":6,"data":{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{}"}}
{"type":"tool/result","seq":9,"time":7,"data":{"turn":1,"step":1,"message":{"id":"r","role":"user","source":{"kind":"tool","callId":"c1"},"content":[{"type":"tool-result","toolCallId":"c1","content":[],"isError":false}]}},"sourceEventSeqs":[8],"surfaceOp":"append"}
{"type":"user/message","seq":10,"time":8,"data":{"id":"s","role":"user","content":[],"source":{"kind":"plugin","plugin":"compact"}},"surfaceOp":{"op":"replace","start":7,"end":9},"sourceEventSeqs":[9,7,8]}
{"type":"step/end","seq":11,"time":9,"data":{"turn":1,"step":1}}
{"type":"turn/end","seq":12,"time":9,"data":{"turn":1,"reason":{"kind":"completed"}}}
`

func TestQueryTransitive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(path, []byte(transitiveLog), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []queryCase{
		{[]string{"--sources", "10"}, []int{7, 8, 9}},
		// Line 5 is the packed row holding seqs 3–5: once.
		{[]string{"--sources", "10", "--transitive"}, []int{5, 6, 7, 8, 9}},
		{[]string{"--sources", "7"}, []int{5, 6}},
		{[]string{"--call-id", "c1"}, []int{7, 8, 9}},
		{[]string{"--turn", "1"}, lineRange(2, 12)},
	}
	runQueryCases(t, path, transitiveLog, cases)

	// Standard input gives the same rows; --sources buffers it for its
	// second pass. Flags may come before FILE.
	for _, c := range cases {
		code, out, errs := runCLI(t, transitiveLog, append(append([]string{"query"}, c.args...), "-")...)
		if want := lines(t, transitiveLog, c.lines...); code != 0 || out != want {
			t.Errorf("query %v - (stdin): exit %d, stderr %q, output\n%s\nwant\n%s", c.args, code, errs, out, want)
		}
	}
}

// TestQuerySessions: wrapped rows of two interleaved sessions keep their
// turns and seqs apart.
func TestQuerySessions(t *testing.T) {
	const wire = `{"type":"session_event","sessionId":"A","event":{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}}
{"type":"session_event","sessionId":"B","event":{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}}
{"type":"session_event","sessionId":"A","event":{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}}
{"type":"session_event","sessionId":"B","event":{"type":"user/message","seq":1,"time":2,"data":{"id":"u","role":"user","content":[],"source":{"kind":"user"}},"surfaceOp":"append","sourceEventSeqs":[0]}}
{"type":"session_event","sessionId":"A","event":{"type":"turn/start","seq":2,"time":3,"data":{"turn":2}}}
{"type":"session_event","sessionId":"B","event":{"type":"turn/end","seq":2,"time":3,"data":{"turn":1,"reason":{"kind":"completed"}}}}
`
	path := filepath.Join(t.TempDir(), "wire.jsonl")
	if err := os.WriteFile(path, []byte(wire), 0o644); err != nil {
		t.Fatal(err)
	}
	runQueryCases(t, path, wire, []queryCase{
		{[]string{"--turn", "1"}, []int{1, 2, 3, 4, 6}},
		{[]string{"--turn", "2"}, []int{5}},
		{[]string{"--sources", "1"}, []int{2}}, // B's seq 1 cites B's seq 0, not A's
	})
}

func TestQueryErrors(t *testing.T) {
	tests := []struct {
		name   string
		stdin  string
		args   []string
		stderr string
	}{
		{"no mode", "", []string{"query", seedSample}, "want exactly one of"},
		{"two modes", "", []string{"query", seedSample, "--turn", "1", "--call-id", "x"}, "want exactly one of"},
		{"transitive alone", "", []string{"query", seedSample, "--turn", "1", "--transitive"}, "--transitive needs --sources"},
		{"no file", "", []string{"query", "--turn", "1"}, "want exactly one FILE"},
		{"two files", "", []string{"query", seedSample, seedSample, "--turn", "1"}, "want exactly one FILE"},
		{"bad number", "", []string{"query", seedSample, "--turn", "one"}, "invalid value"},
		{"negative turn", "", []string{"query", seedSample, "--turn", "-1"}, "not negative"},
		{"negative seq", "", []string{"query", seedSample, "--sources", "-1"}, "not negative"},
		{"empty call id", "", []string{"query", seedSample, "--call-id", ""}, "non-empty"},
		{"unknown flag", "", []string{"query", seedSample, "--seq", "1"}, "unknown flag --seq"},
		{"missing file", "", []string{"query", "testdata/does-not-exist.jsonl", "--turn", "1"}, "does-not-exist.jsonl"},
		{"missing file, two passes", "", []string{"query", "testdata/does-not-exist.jsonl", "--sources", "1"}, "does-not-exist.jsonl"},
		{"unsupported version", `{"type":"session","version":5,"id":"s","createdAt":0,"delegationDepth":0}` + "\n",
			[]string{"query", "-", "--turn", "1"}, "-: line 1: unsupported session format version 5"},
		{"corrupt zstd", "\x28\xb5\x2f\xfd\x00\x00\x00\x00garbage\n", []string{"query", "-", "--sources", "1"}, "-: line 1: undecodable zstd stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tt.stdin, tt.args...)
			if code != 2 || out != "" || !strings.Contains(errs, tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, no output and %q", code, out, errs, tt.stderr)
			}
		})
	}
}

// TestQueryOpenTurn: a turn with no turn/end runs until the next turn/start,
// which belongs to the next turn.
func TestQueryOpenTurn(t *testing.T) {
	const log = `{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}
{"type":"turn/start","seq":2,"time":2,"data":{"turn":2}}
{"type":"turn/end","seq":3,"time":3,"data":{"turn":2,"reason":"completed"}}
`
	for args, want := range map[string][]int{"1": {1, 2}, "2": {3, 4}} {
		code, out, _ := runCLI(t, log, "query", "-", "--turn", args)
		if code != 0 || out != lines(t, log, want...) {
			t.Errorf("--turn %s: exit %d, output\n%s", args, code, out)
		}
	}
}

// TestQueryZstd: a zstd file (one frame for the header, one per append
// batch, as dsh writes it) answers like its plain form, read twice by
// --sources from a file and buffered from standard input.
func TestQueryZstd(t *testing.T) {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	var z []byte
	rows := strings.SplitAfter(transitiveLog, "\n")
	for _, batch := range []string{rows[0], strings.Join(rows[1:6], ""), strings.Join(rows[6:], "")} {
		z = enc.EncodeAll([]byte(batch), z)
	}
	path := filepath.Join(t.TempDir(), "session.jsonl.zstd")
	if err := os.WriteFile(path, z, 0o644); err != nil {
		t.Fatal(err)
	}
	want := lines(t, transitiveLog, 5, 6, 7, 8, 9)
	for _, in := range []struct{ file, stdin string }{{path, ""}, {"-", string(z)}} {
		code, out, errs := runCLI(t, in.stdin, "query", in.file, "--sources", "10", "--transitive")
		if code != 0 || out != want {
			t.Errorf("query %s: exit %d, stderr %q, output\n%s", in.file, code, errs, out)
		}
	}
	code, out, _ := runCLI(t, "", "turns", path)
	if code != 0 || !bytes.HasPrefix([]byte(out), []byte("turn 1  completed  8ms  cost -\n  step 1  p/m  in -  cache -  out -  cost -  attempts 1\n    c1  bash  ok  1ms\n")) {
		t.Errorf("turns of the zstd file: exit %d, output\n%s", code, out)
	}
}
