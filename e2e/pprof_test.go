//go:build e2e

package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPprofExtension: otelcol-dsh carries the pprof extension, for profiling
// a running collector (docs/operating.md, "Profiling the collector"; bench/vsfilelog.sh
// PROFILE=). With it configured, the collector serves net/http/pprof on its
// endpoint while it runs, and writes the CPU profile of its whole run to
// save_to_file when it stops.
func TestPprofExtension(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	c := newCollector(t, dir, testConfig("pprof")).set("PPROF_FILE", prof)
	pprof := c.addr("PPROF_ENDPOINT")
	p := c.launch("otelcol-dsh")

	var index []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + pprof + "/debug/pprof/")
		if err == nil {
			index, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pprof endpoint %s not serving after 30s (last error %v)\n%s", pprof, err, p.tail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{"goroutine", "heap", "profile"} {
		if !bytes.Contains(index, []byte(want)) {
			t.Errorf("pprof index lacks %q", want)
		}
	}
	if err := p.stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatalf("no CPU profile saved at shutdown: %v\n%s", err, p.tail(30))
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b { // a profile is gzipped protobuf
		t.Fatalf("%s is not a pprof profile (%d bytes)", prof, len(b))
	}
}
