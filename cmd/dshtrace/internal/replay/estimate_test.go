package replay

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
)

// TestEstimate: the estimate Grow is given never goes down and ends above
// the heap the built page holds, with content and without; and an error
// from Grow stops the build. (The heap's peak while building, garbage
// included, is logged: it moves with the collector's pacing.)
func TestEstimate(t *testing.T) {
	log := testlog.Synth("long", 3000, 3, true)
	for _, noContent := range []bool{false, true} {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		var calls int
		var est int64
		var peak uint64
		p, err := Build(strings.NewReader(log), Options{Name: "long", NoContent: noContent, Grow: func(b int64) error {
			if b < est {
				t.Errorf("the estimate went down: %d after %d", b, est)
			}
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc-min(base, ms.HeapAlloc))
			est, calls = b, calls+1
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		kept := ms.HeapAlloc - min(base, ms.HeapAlloc)
		runtime.KeepAlive(p)
		t.Logf("no content %v: %d calls, estimate %d B, heap kept %d B, peak while building %d B", noContent, calls, est, kept, peak)
		if calls < 2 || uint64(est) < kept {
			t.Errorf("no content %v: %d calls, estimate %d B below the heap the page holds, %d B", noContent, calls, est, kept)
		}
	}
	stop := errors.New("over budget")
	if _, err := Build(strings.NewReader(log), Options{Name: "long", Grow: func(int64) error { return stop }}); !errors.Is(err, stop) {
		t.Errorf("Grow's error: Build returned %v", err)
	}
}
