package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

// update rewrites the golden files instead of comparing against them.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// seedSample is the seed dialect's sample log (dsh-format.md §11).
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
	root := testcorpus.Dir(t)
	for _, rel := range testcorpus.Files(t) {
		path := filepath.Join(root, rel)
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
	code, out, _ = runCLI(t, torn, "turns", "-")
	if code != 0 || !strings.HasPrefix(out, string(want)) || !strings.Contains(out, "note: -: line 11: torn tail") {
		t.Errorf("torn tail: exit %d, output\n%s", code, out)
	}
	code, out, _ = runCLI(t, "", "turns", "-")
	if code != 0 || out != "no turns\n" {
		t.Errorf("empty input: exit %d, output %q", code, out)
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
turn 1  completed  1ms
session B
turn 1  blocked  2ms
session A
turn 2  open  -
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
	const want = `turn 1  completed  1ms
(the turns above are inherited from parent session P; this session's own events start at seq 2)
turn 2  completed  2ms
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
		{"unknown flag", "", []string{"turns", "--bogus", "x"}, "flag provided but not defined"},
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
