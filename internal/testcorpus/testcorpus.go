// Package testcorpus locates the real dsh session logs that tests run
// against: ../shared/dsh-corpus beside the repository, or $DSH_CORPUS.
package testcorpus

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Dir returns the corpus directory. A missing corpus fails the test rather
// than skipping it: CI always has ../shared beside the checkout.
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("DSH_CORPUS"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			c := filepath.Join(filepath.Dir(dir), "shared", "dsh-corpus")
			if _, err := os.Stat(c); err != nil {
				t.Fatalf("dsh corpus not found at %s (set DSH_CORPUS): %v", c, err)
			}
			return c
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("repository root not found above " + wd)
		}
	}
}

// Files lists every session log of the corpus (*.jsonl), sorted, as paths
// relative to Dir.
func Files(t testing.TB) []string {
	t.Helper()
	root := Dir(t)
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no .jsonl files under %s", root)
	}
	sort.Strings(out)
	return out
}
