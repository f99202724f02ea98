package pipeline

import (
	"context"
	"os"
	"os/exec"
	"testing"
)

// corpus is BENCH_CORPUS (a bench/gen output directory), or a small mixed
// corpus written with bench/gen into a temp dir.
func corpus(b *testing.B) (string, Manifest) {
	dir := os.Getenv("BENCH_CORPUS")
	if dir == "" {
		dir = b.TempDir()
		cmd := exec.Command("go", "run", "github.com/dshtrace/dshtrace/bench/gen", "-out", dir, "-force",
			"-sessions", "24", "-turns", "20", "-format", "mix")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("bench/gen: %v\n%s", err, out)
		}
	}
	m, err := ReadManifest(dir)
	if err != nil {
		b.Fatal(err)
	}
	return dir, m
}

func BenchmarkFilePipeline(b *testing.B) {
	dir, m := corpus(b)
	b.SetBytes(m.Bytes)
	b.ReportAllocs()
	start, cpu0 := Start()
	for range b.N {
		if err := Run(context.Background(), dir, m, Sink{}); err != nil {
			b.Fatal(err)
		}
	}
	ReportPerEvent(b, m, start, cpu0)
}
