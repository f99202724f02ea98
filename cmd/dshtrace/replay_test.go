package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestReplay: the page goes to -o or standard output, from a plain or a
// zstd file or standard input, with or without content and trace links.
func TestReplay(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join("..", "..", "testdata", "dialects", "v4-tools.jsonl")
	plain, err := os.ReadFile(log)
	must(t, err)
	enc, err := zstd.NewWriter(nil)
	must(t, err)
	compressed := filepath.Join(dir, "session.v4.jsonl.zstd")
	must(t, os.WriteFile(compressed, enc.EncodeAll(plain, nil), 0o644))

	out := filepath.Join(dir, "page.html")
	code, stdout, stderr := runCLI(t, "", "replay", log, "-o", out, "--jaeger", "http://127.0.0.1:16686")
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	page, err := os.ReadFile(out)
	must(t, err)
	fi, err := os.Stat(out)
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("page mode %v: the page holds the session's content, want 0600", fi.Mode().Perm())
	}
	for _, want := range []string{`id="turn-1"`, `id="call-call_1"`, `id="seq-23"`, "Read a.txt", "http://127.0.0.1:16686/trace/"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, args := range [][]string{{"replay", compressed}, {"replay", "-"}} {
		code, got, stderr := runCLI(t, string(plain), args...)
		if code != 0 || !strings.Contains(got, `id="call-call_2"`) {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
	code, got, _ := runCLI(t, "", "replay", "--no-content", log)
	if code != 0 || strings.Contains(got, "Read a.txt") || strings.Contains(got, "/home/alice") || !strings.Contains(got, `id="call-call_2"`) {
		t.Errorf("--no-content: exit %d, or content on the page", code)
	}
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"replay"}, "want exactly one FILE, got 0"},
		{[]string{"replay", log, log}, "want exactly one FILE, got 2"},
		{[]string{"replay", "--jaeger", "javascript:alert(1)", log}, "want the Jaeger UI's URL"},
		{[]string{"replay", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl"},
		{[]string{"replay", "-o", filepath.Join(dir, "no", "such", "dir.html"), log}, "to write it in"},
		{[]string{"replay", filepath.Join("..", "..", "testdata", "hostile", "unsupported-version.jsonl")}, "unsupported session format version"},
	} {
		code, _, stderr := runCLI(t, "", tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.stderr)
		}
	}
}
