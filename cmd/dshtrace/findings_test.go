package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// looping writes a session that loops and fails, and returns its path.
func looping(t *testing.T, dir, id string) string {
	t.Helper()
	same := testlog.Call{Tool: "job_output", Args: `{"job":7}`, Result: "running"}
	fail := func(p string) testlog.Call {
		return testlog.Call{Tool: "write", Args: `{"path":"` + p + `"}`, Result: "denied: " + p, Failed: true}
	}
	p := filepath.Join(dir, id+".jsonl")
	must(t, os.WriteFile(p, []byte(testlog.SynthCalls(id, []testlog.Call{same, same, same, fail("/a"), fail("/b"), fail("/c"),
		{Tool: "bash", Args: `{}`, NoResult: true}}, true)), 0o644))
	return p
}

func TestFindingsCommand(t *testing.T) {
	dir := t.TempDir()
	p := looping(t, dir, "loops-1")
	code, out, _ := runCLI(t, "", "findings", p)
	if code != 1 {
		t.Errorf("exit %d, want 1 (findings)", code)
	}
	for _, want := range []string{
		p + ": session loops-1 turn 1: tool_loop: job_output was called 3 times with the same arguments and got the same result each time. (seqs 3, 4, 8, 9, 13, 14; 3 calls call_1, call_2, call_3)",
		p + ": session loops-1 turn 1: tool_error_streak: 3 tool calls in a row failed, with no successful one between them.",
		p + ": session loops-1 turn 1: unanswered_tool_call: dsh ended the turn while 1 tool call never got a result. (seqs 33, 35; 1 call call_7)",
		"3 findings",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	// --json: one object per finding, with what a CI gate needs.
	code, out, _ = runCLI(t, "", "findings", "--json", p, "--loop-repeats", "4")
	if code != 1 {
		t.Errorf("--json: exit %d, want 1", code)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var f findingJSON
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if f.Session != "loops-1" || f.Turn != 1 || len(f.Seqs) == 0 || f.Explanation == "" {
			t.Errorf("incomplete: %+v", f)
		}
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "tool_error_streak,unanswered_tool_call" {
		t.Errorf("--loop-repeats 4: findings %s", got)
	}
	// A clean log: exit 0; a root of several clients; bad input: exit 2.
	if code, out, _ := runCLI(t, "", "findings", repoFile("dialects/v4-tools.jsonl")); code != 0 || strings.TrimSpace(out) != "no findings" {
		t.Errorf("a clean log: exit %d %q", code, out)
	}
	root := t.TempDir()
	for _, who := range []string{"", "alice"} {
		croot, err := sessionroot.ClientRoot(root, who)
		must(t, err)
		put(t, croot, "loops-1", "session.v4.jsonl", []byte(testlog.SynthCalls("loops-1", []testlog.Call{
			{Tool: "job_output", Args: `{}`, Result: "x"}, {Tool: "job_output", Args: `{}`, Result: "x"}, {Tool: "job_output", Args: `{}`, Result: "x"}}, true)))
	}
	code, out, _ = runCLI(t, "", "findings", "--json", root)
	var clients []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var f findingJSON
		must(t, json.Unmarshal([]byte(line), &f))
		clients = append(clients, clientid.Key(f.Client, f.Session))
	}
	if code != 1 || len(clients) != 2 || clients[0] == clients[1] {
		t.Errorf("a root of two clients: exit %d, findings of %q", code, clients)
	}
	if code, _, errs := runCLI(t, "", "findings", filepath.Join(dir, "missing.jsonl")); code != 2 || !strings.HasPrefix(errs, "dshtrace findings: ") {
		t.Errorf("missing input: exit %d %q", code, errs)
	}
}
