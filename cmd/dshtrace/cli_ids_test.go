package main

import (
	"strings"
	"testing"
)

// The ids the CLI prints are usable with it: a nested dispatch's call id
// that turns prints is found by query --call-id, and in a stream of
// several sessions every command can pick one with --session and names
// the one it reads.
func TestPrintedIDsAreUsable(t *testing.T) {
	ends := repoFile("dialects/v4-end-reasons.jsonl")
	code, out, _ := runCLI(t, "", "turns", ends)
	if code != 0 || !strings.Contains(out, "prog_1:ptc:1") {
		t.Fatalf("turns: exit %d, no nested call id prog_1:ptc:1 in\n%.600s", code, out)
	}
	code, out, errs := runCLI(t, "", "query", ends, "--call-id", "prog_1:ptc:1")
	if code != 0 || strings.TrimSpace(out) == "" {
		t.Errorf("query --call-id prog_1:ptc:1: exit %d, stdout %q, stderr %q", code, out, errs)
	}

	stream := repoFile("dialects/wrap-jsonrpc.jsonl")
	for _, cmd := range [][]string{{"derive"}, {"turns"}, {"spans"}, {"query", "--turn", "1"}} {
		for _, id := range []string{"sess-parent", "sess-child"} {
			args := append(append([]string{}, cmd...), stream, "--session", id)
			code, out, errs := runCLI(t, "", args...)
			if code != 0 {
				t.Errorf("%s: exit %d, stderr %q", strings.Join(args, " "), code, errs)
				continue
			}
			other := "sess-child"
			if id == other {
				other = "sess-parent"
			}
			if strings.Contains(out, other) {
				t.Errorf("%s: the other session %s in its output", strings.Join(args, " "), other)
			}
		}
	}
}
