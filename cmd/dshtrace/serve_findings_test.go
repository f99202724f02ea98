package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeFindings: the list shows each session's findings with their
// counts and filters by one; a session's page shows its turns' findings,
// with content or without.
func TestServeFindings(t *testing.T) {
	loops, err := os.ReadFile(filepath.Join("..", "..", "testdata", "findings", "loops.jsonl"))
	must(t, err)
	for _, noContent := range []bool{false, true} {
		root := t.TempDir()
		put(t, root, "loops", "session.v4.jsonl", loops)
		put(t, root, "v4-tools", "session.v4.jsonl", dialect(t, "v4-tools"))
		srv := startServer(t, serverConfig{NoContent: noContent}, root)

		_, list := get(t, srv, "/")
		for _, want := range []string{
			`<span class="badge finding">1 tool_loop</span> <span class="badge finding">1 tool_error_streak</span> <span class="badge finding">1 unanswered_tool_call</span>`,
			`<option value="tool_loop">tool_loop</option>`, `<option value="unanswered_tool_call">unanswered_tool_call</option>`,
		} {
			if !strings.Contains(list, want) {
				t.Errorf("no content %v: the list lacks %s", noContent, want)
			}
		}
		if strings.Contains(list, "over_cost") {
			t.Errorf("no content %v: the list offers a finding no session has", noContent)
		}
		for _, tt := range []struct{ query, want, not string }{
			{"?finding=tool_loop", `href="/s/loops"`, `href="/s/v4-tools"`},
			{"?finding=unanswered_tool_call&reason=completed", `href="/s/loops"`, `href="/s/v4-tools"`},
			{"?finding=tool_error_streak", `<option value="tool_error_streak" selected>`, `href="/s/v4-tools"`},
			{"?finding=over_cost", "No session matches", `href="/s/loops"`},
			{"?finding=tool_loop&agent=nobody", "No session matches", `href="/s/loops"`},
		} {
			_, l := get(t, srv, "/"+tt.query)
			if !strings.Contains(l, tt.want) || strings.Contains(l, tt.not) {
				t.Errorf("no content %v: list %s: want %q and not %q", noContent, tt.query, tt.want, tt.not)
			}
		}

		_, page := get(t, srv, "/s/loops")
		for _, want := range []string{`<span class="badge finding">1 tool_loop</span>`, `<span class="badge finding">tool_loop</span>`, `<a href="#seq-33">33</a>`, `<a href="#call-call_7">call_7</a>`} {
			if !strings.Contains(page, want) {
				t.Errorf("no content %v: the page of loops lacks %s", noContent, want)
			}
		}
		if _, page := get(t, srv, "/s/v4-tools"); strings.Contains(page, `class="badge finding"`) {
			t.Errorf("no content %v: the page of v4-tools shows a finding", noContent)
		}
	}
}
