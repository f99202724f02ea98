package testcorpus

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// Dialects lists the repository's own sample logs — one per dialect and
// feature in testdata/dialects, and the seed sample — as absolute paths,
// sorted. They are always there, so a test over them runs on a bare clone.
func Dialects(t testing.TB) []string {
	t.Helper()
	root := repoRoot(t)
	var out []string
	for _, pat := range []string{"testdata/dialects/*.jsonl", "testdata/seed/*.jsonl"} {
		m, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) == 0 {
		t.Fatalf("no sample logs under %s/testdata", root)
	}
	sort.Strings(out)
	return out
}

// repoRoot is the folder of the module's go.mod above the working directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "testdata")); err == nil {
				return dir
			}
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("repository root not found above " + wd)
		}
	}
}
