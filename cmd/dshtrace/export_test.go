package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exportedCall is the part of an export line the tests judge.
type exportedCall struct {
	Request    json.RawMessage   `json:"request"`
	Tools      []json.RawMessage `json:"tools"`
	Answer     answer            `json:"answer"`
	Provenance provenance        `json:"provenance"`
}

// exportLines runs export and decodes its lines.
func exportLines(t *testing.T, args ...string) (int, []exportedCall, string) {
	t.Helper()
	code, out, stderr := runCLI(t, "", append([]string{"export"}, args...)...)
	var calls []exportedCall
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		var c exportedCall
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		calls = append(calls, c)
	}
	return code, calls, stderr
}

// Each step's request is the history derive --before-step prints for it,
// with the header's tools, the step's answer and the seqs behind them.
func TestExportRequestIsDerivedHistory(t *testing.T) {
	log := repoFile("dialects/v4-tools.jsonl")
	code, calls, stderr := exportLines(t, log)
	if code != 0 || len(calls) != 2 {
		t.Fatalf("exit %d, %d lines, want 0 and 2 (stderr %q)", code, len(calls), stderr)
	}
	for i, step := range []string{"1.1", "1.2"} {
		_, want, _ := runCLI(t, "", "derive", "--json", "--before-step", step, log)
		var got, wantBuf bytes.Buffer
		must(t, json.Compact(&got, calls[i].Request))
		must(t, json.Compact(&wantBuf, []byte(want)))
		if got.String() != wantBuf.String() {
			t.Errorf("step %s: request\n%s\nderive --before-step prints\n%s", step, got.String(), wantBuf.String())
		}
		p := calls[i].Provenance
		if p.Turn != 1 || p.Step != int64(i+1) || p.Model != "deepseek-v4-flash" || p.Provider != "deepseek-official" {
			t.Errorf("step %s: provenance %+v", step, p)
		}
		if !containsAll(p.Seqs, 9, calls[i].Answer.Seq) {
			t.Errorf("step %s: seqs %v lack the request header (9) or the answer (%d)", step, p.Seqs, calls[i].Answer.Seq)
		}
		if len(calls[i].Tools) != 2 {
			t.Errorf("step %s: %d tools, want read and write", step, len(calls[i].Tools))
		}
	}
	if calls[0].Answer.Seq != 13 || calls[1].Answer.Seq != 20 {
		t.Errorf("answers at seqs %d and %d, want 13 and 20", calls[0].Answer.Seq, calls[1].Answer.Seq)
	}
}

func containsAll(seqs []int64, want ...int64) bool {
	have := map[int64]bool{}
	for _, s := range seqs {
		have[s] = true
	}
	for _, w := range want {
		if !have[w] {
			return false
		}
	}
	return true
}

func TestExportFilters(t *testing.T) {
	loops, tools := repoFile("findings/loops.jsonl"), repoFile("dialects/v4-tools.jsonl")
	open := repoFile("dialects/open-turn.jsonl")
	for _, tc := range []struct {
		name  string
		args  []string
		exit  int
		lines int
		file  string // the file every line comes from
	}{
		{"finding selects the looping turn only", []string{"--finding", "tool_loop", tools, loops}, 0, 7, loops},
		{"finding absent", []string{tools, "--finding", "tool_loop"}, 1, 0, ""},
		{"reason", []string{"--reason", "completed", tools}, 0, 2, tools},
		{"reason absent", []string{"--reason", "error", tools}, 1, 0, ""},
		{"model", []string{"--model", "deepseek-official/deepseek-v4-flash", loops, tools}, 0, 2, tools},
		{"filters all hold", []string{"--finding", "tool_loop", "--reason", "error", loops}, 1, 0, ""},
		{"a turn never closed is dangling", []string{"--reason", "dangling", tools, open}, 0, 1, open},
		{"agent absent", []string{"--agent", "nobody", tools}, 1, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, calls, stderr := exportLines(t, tc.args...)
			if code != tc.exit || len(calls) != tc.lines {
				t.Fatalf("exit %d, %d lines, want %d and %d (stderr %q)", code, len(calls), tc.exit, tc.lines, stderr)
			}
			for _, c := range calls {
				if c.Provenance.File != tc.file {
					t.Errorf("a line from %s, want only %s", c.Provenance.File, tc.file)
				}
			}
			if tc.exit == 1 && !strings.HasPrefix(stderr, "dshtrace export: no model call matched") {
				t.Errorf("stderr %q, want it to say no model call matched", stderr)
			}
		})
	}
}

func TestExportErrors(t *testing.T) {
	good := repoFile("dialects/v4-tools.jsonl")
	for kind, p := range badInputs(t) {
		t.Run(kind, func(t *testing.T) {
			want := 2
			if kind == "malformed" {
				want = 1 // its rows that decode hold no model call
			}
			code, out, stderr := runCLI(t, "", "export", p)
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if code != want || out != "" || !strings.HasPrefix(lines[len(lines)-1], "dshtrace export: ") {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d ending in a dshtrace export: line", code, out, stderr, want)
			}
		})
	}
	if code, out, _ := runCLI(t, "", "export", "--help"); code != 0 || !strings.HasPrefix(out, "usage: dshtrace export ") {
		t.Errorf("--help: exit %d, %q", code, out)
	}
	abs, _ := filepath.Abs(good)
	for _, o := range []string{good, abs, filepath.Dir(good), os.DevNull} {
		if code, _, stderr := runCLI(t, "", "export", "-o", o, good); code != 2 || !strings.HasPrefix(stderr, "dshtrace export: -o ") {
			t.Errorf("-o %s: exit %d, stderr %q; want it refused", o, code, stderr)
		}
	}
}

// -o writes what standard output gets, and nothing when nothing matched.
func TestExportOutputFile(t *testing.T) {
	good := repoFile("dialects/v4-tools.jsonl")
	dir := t.TempDir()
	out := filepath.Join(dir, "calls.jsonl")
	_, want, _ := runCLI(t, "", "export", good)
	if code, stdout, stderr := runCLI(t, "", "export", good, "-o", out); code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	got, err := os.ReadFile(out)
	must(t, err)
	if string(got) != want {
		t.Errorf("-o wrote\n%s\nstandard output gets\n%s", got, want)
	}
	none := filepath.Join(dir, "none.jsonl")
	if code, _, _ := runCLI(t, "", "export", "--reason", "error", "-o", none, good); code != 1 {
		t.Errorf("no match: exit %d, want 1", code)
	}
	if _, err := os.Stat(none); err == nil {
		t.Errorf("no match still wrote %s", none)
	}
}
