// Package testcorpus locates the real dsh session logs that conformance
// tests run against, and the repository's own hand-written logs under
// testdata/ that every run has.
//
// The corpus is looked for, in order, at $DSH_CORPUS, at
// ../shared/dsh-corpus beside the repository, and at .corpus/dsh-corpus
// inside it (what `make corpus` fills). When none is there the tests that
// need it are skipped, the first one of a test binary saying how to enable
// them; with CI=true a missing corpus fails instead.
package testcorpus

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Hint is the one line that says how to run the conformance tests.
const Hint = "set DSH_CORPUS to a dsh corpus folder, put one at ../shared/dsh-corpus, or run `make corpus`"

// Local is the folder, relative to the repository root, that `make corpus`
// fills.
const Local = ".corpus/dsh-corpus"

// ErrNotFound is returned by Find when no corpus is present.
var ErrNotFound = errors.New("dsh corpus not found")

// Find returns the corpus directory without a test: $DSH_CORPUS when set
// (it must then exist), else the first of ../shared/dsh-corpus and
// .corpus/dsh-corpus that exists beside or inside the repository root found
// above the working directory. A missing corpus is ErrNotFound.
func Find() (string, error) {
	if d := os.Getenv("DSH_CORPUS"); d != "" {
		st, err := os.Stat(d)
		if err != nil {
			return "", fmt.Errorf("DSH_CORPUS=%s: %w", d, err)
		}
		if !st.IsDir() {
			return "", fmt.Errorf("DSH_CORPUS=%s is not a directory", d)
		}
		return d, nil
	}
	root, err := Root()
	if err != nil {
		return "", err
	}
	for _, c := range []string{
		filepath.Join(filepath.Dir(root), "shared", "dsh-corpus"),
		filepath.Join(root, filepath.FromSlash(Local)),
	} {
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			return c, nil
		}
	}
	return "", ErrNotFound
}

// Root returns the repository root: the nearest directory above the working
// directory that holds go.mod and testdata/. (cmd/otelcol-dsh has a go.mod
// of its own, which this skips.)
func Root() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if isFile(filepath.Join(dir, "go.mod")) && isDir(filepath.Join(dir, "testdata")) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("repository root (go.mod with testdata/) not found above %s", wd)
		}
	}
}

func isFile(p string) bool { st, err := os.Stat(p); return err == nil && !st.IsDir() }
func isDir(p string) bool  { st, err := os.Stat(p); return err == nil && st.IsDir() }

// InCI reports whether CI is set to a true value: a missing corpus is then
// a failure.
func InCI() bool {
	v, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && v
}

var skipOnce sync.Once

// Dir returns the corpus directory. When there is none the test is skipped
// (the first skip of the binary carries the hint, later ones say so
// briefly); under CI=true, or when $DSH_CORPUS names something missing, it
// fails.
func Dir(t testing.TB) string {
	t.Helper()
	d, err := Find()
	if err == nil {
		return d
	}
	if !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if InCI() {
		t.Fatalf("%v and CI=true: %s", err, Hint)
	}
	first := false
	skipOnce.Do(func() { first = true })
	if first {
		t.Skipf("%v: conformance tests skipped (%s)", err, Hint)
	}
	t.Skip("no dsh corpus (see the first skip)")
	return ""
}

// Files lists every session log of the corpus (*.jsonl), sorted, as paths
// relative to Dir. It skips like Dir.
func Files(t testing.TB) []string {
	t.Helper()
	root := Dir(t)
	out, err := list(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no .jsonl files under %s", root)
	}
	return out
}

// Testdata returns the repository's own session logs, the ones every run
// has: testdata/dialects and testdata/seed (*.jsonl), as absolute paths,
// sorted. testdata/hostile is left out: those files break the format on
// purpose.
func Testdata(t testing.TB) []string {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, sub := range []string{"dialects", "seed"} {
		dir := filepath.Join(root, "testdata", sub)
		files, err := list(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			out = append(out, filepath.Join(dir, f))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no .jsonl files under %s/testdata", root)
	}
	sort.Strings(out)
	return out
}

// Log is one session log a test runs over.
type Log struct {
	// Name is the path relative to the corpus (v0/..., wire/...) or to the
	// repository (testdata/dialects/...), slash-separated.
	Name string
	// Path is the absolute path.
	Path string
	// Stream marks a live stream in one of the line wrappers rather than a
	// session file: the corpus's wire/ folder, testdata's wrap-*.jsonl.
	Stream bool
}

// Logs returns every session log a run has: the repository's own (those of
// Testdata) and, when a corpus is found, every corpus file after them. A
// missing corpus is no skip here (the repository's logs still run) except
// under CI=true, where it fails like Dir.
func Logs(t testing.TB) []Log {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	var out []Log
	for _, p := range Testdata(t) {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Log{Name: filepath.ToSlash(rel), Path: p,
			Stream: strings.HasPrefix(filepath.Base(p), "wrap-")})
	}
	d, err := Find()
	switch {
	case err == nil:
		files, err := list(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			out = append(out, Log{Name: f, Path: filepath.Join(d, filepath.FromSlash(f)),
				Stream: strings.HasPrefix(f, "wire/")})
		}
	case !errors.Is(err, ErrNotFound):
		t.Fatal(err)
	case InCI():
		t.Fatalf("%v and CI=true: %s", err, Hint)
	}
	return out
}

// All is the paths of Logs.
func All(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, l := range Logs(t) {
		out = append(out, l.Path)
	}
	return out
}

// Available reports whether tests should go on to corpus files: false only
// when no corpus is found and CI is not set (then Dir would skip). Under
// CI=true, or with a $DSH_CORPUS that names nothing, it is true, so that the
// Dir or Path that follows fails loudly.
func Available() bool {
	_, err := Find()
	return !errors.Is(err, ErrNotFound) || InCI()
}

// Path is a corpus file's absolute path, rel being slash-separated and
// relative to Dir. It skips like Dir.
func Path(t testing.TB, rel string) string {
	t.Helper()
	return filepath.Join(Dir(t), filepath.FromSlash(rel))
}

func list(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// typeField finds the "type" members of a row, nested ones included.
var typeField = regexp.MustCompile(`"type":"[^"]*"`)

// SeedRows returns real rows of every log All finds, up to maxLen bytes:
// for each shape (the row's "type" members in order) the shortest and the
// longest. Fuzzers start from every kind of row dsh writes, without the
// thousands of near-duplicates that would fill a short -fuzztime with
// baseline coverage.
func SeedRows(t testing.TB, maxLen int) [][]byte {
	t.Helper()
	type pick struct{ short, long []byte }
	picks := map[string]*pick{}
	var shapes []string
	for _, path := range All(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(line) == 0 || len(line) > maxLen {
				continue
			}
			shape := string(bytes.Join(typeField.FindAll(line, -1), []byte(",")))
			p := picks[shape]
			if p == nil {
				p = &pick{line, line}
				picks[shape] = p
				shapes = append(shapes, shape)
			}
			if len(line) < len(p.short) {
				p.short = line
			}
			if len(line) > len(p.long) {
				p.long = line
			}
		}
	}
	var out [][]byte
	for _, shape := range shapes {
		p := picks[shape]
		out = append(out, p.short)
		if !bytes.Equal(p.long, p.short) {
			out = append(out, p.long)
		}
	}
	return out
}
