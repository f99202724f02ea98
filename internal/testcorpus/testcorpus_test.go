package testcorpus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// recorder stands in for a test: it records how Dir ended it.
type recorder struct {
	testing.TB
	how string // "skip", "fatal" or ""
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Skip(args ...any) {
	r.how, r.msg = "skip", fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.how, r.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) {
	r.how, r.msg = "fatal", fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.how, r.msg = "fatal", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// callDir runs Dir on a recorder in its own goroutine, as the testing
// package runs a test, so that Skip and Fatal can end it.
func callDir(base testing.TB) (dir string, r *recorder) {
	r = &recorder{TB: base}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		dir = Dir(r)
	}()
	wg.Wait()
	return dir, r
}

// inBareClone makes the working directory a repository with nothing beside
// it: a go.mod and testdata/ in a fresh temporary folder.
func inBareClone(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "clone")
	if err := os.MkdirAll(filepath.Join(root, "testdata", "dialects"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(root, "some", "pkg")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(pkg)
	return root
}

func TestDirSkipsOnceWithHint(t *testing.T) {
	inBareClone(t)
	t.Setenv("DSH_CORPUS", "")
	t.Setenv("CI", "")
	skipOnce = sync.Once{}
	_, first := callDir(t)
	_, second := callDir(t)
	if first.how != "skip" || !strings.Contains(first.msg, Hint) {
		t.Errorf("first: %s %q, want a skip with the hint", first.how, first.msg)
	}
	if second.how != "skip" || strings.Contains(second.msg, Hint) {
		t.Errorf("second: %s %q, want a brief skip", second.how, second.msg)
	}
}

func TestDirFailsInCI(t *testing.T) {
	inBareClone(t)
	t.Setenv("DSH_CORPUS", "")
	t.Setenv("CI", "true")
	_, r := callDir(t)
	if r.how != "fatal" || !strings.Contains(r.msg, "CI=true") {
		t.Errorf("%s %q, want a failure naming CI=true", r.how, r.msg)
	}
}

func TestDirMissingDSHCorpusFails(t *testing.T) {
	inBareClone(t)
	t.Setenv("CI", "")
	t.Setenv("DSH_CORPUS", filepath.Join(t.TempDir(), "nope"))
	_, r := callDir(t)
	if r.how != "fatal" || !strings.Contains(r.msg, "DSH_CORPUS=") {
		t.Errorf("%s %q, want a failure naming DSH_CORPUS", r.how, r.msg)
	}
}

func TestFindOrder(t *testing.T) {
	root := inBareClone(t)
	t.Setenv("CI", "")
	t.Setenv("DSH_CORPUS", "")
	if _, err := Find(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bare clone: %v, want ErrNotFound", err)
	}
	local := filepath.Join(root, filepath.FromSlash(Local))
	if err := os.MkdirAll(local, 0o755); err != nil {
		t.Fatal(err)
	}
	if d, err := Find(); err != nil || d != local {
		t.Errorf("with %s: %q %v", Local, d, err)
	}
	shared := filepath.Join(filepath.Dir(root), "shared", "dsh-corpus")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if d, err := Find(); err != nil || d != shared {
		t.Errorf("with ../shared: %q %v, want %s", d, err, shared)
	}
	env := t.TempDir()
	t.Setenv("DSH_CORPUS", env)
	if d, err := Find(); err != nil || d != env {
		t.Errorf("with DSH_CORPUS: %q %v, want %s", d, err, env)
	}
}

func TestTestdataHasTheDialects(t *testing.T) {
	files := Testdata(t)
	var dialects int
	for _, f := range files {
		if !filepath.IsAbs(f) {
			t.Errorf("%s is not absolute", f)
		}
		if strings.Contains(filepath.ToSlash(f), "/testdata/hostile/") {
			t.Errorf("%s: hostile files are not session logs to conform", f)
		}
		if strings.Contains(filepath.ToSlash(f), "/testdata/dialects/") {
			dialects++
		}
	}
	if dialects == 0 {
		t.Errorf("no testdata/dialects files in %v", files)
	}
}

func TestLogsWithoutCorpus(t *testing.T) {
	root := inBareClone(t)
	t.Setenv("DSH_CORPUS", "")
	t.Setenv("CI", "")
	for _, name := range []string{"dialects/v4-x.jsonl", "dialects/wrap-y.jsonl", "seed/z.jsonl", "hostile/h.jsonl"} {
		p := filepath.Join(root, "testdata", filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logs := Logs(t)
	var got []string
	for _, l := range logs {
		got = append(got, fmt.Sprintf("%s stream=%v", l.Name, l.Stream))
		if !filepath.IsAbs(l.Path) {
			t.Errorf("%s: path %s is not absolute", l.Name, l.Path)
		}
	}
	want := []string{"testdata/dialects/v4-x.jsonl stream=false", "testdata/dialects/wrap-y.jsonl stream=true", "testdata/seed/z.jsonl stream=false"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Logs = %v, want %v", got, want)
	}

	shared := filepath.Join(filepath.Dir(root), "shared", "dsh-corpus", "wire", "v0")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shared, "n.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs = Logs(t)
	if last := logs[len(logs)-1]; len(logs) != 4 || last.Name != "wire/v0/n.jsonl" || !last.Stream {
		t.Errorf("with a corpus: %+v", logs)
	}
}
