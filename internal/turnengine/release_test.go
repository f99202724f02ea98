package turnengine

import (
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

// Release lets go of a session mid-turn without a span, a metric or a
// forgotten id; a later event of it starts it afresh.
func TestReleaseClosesNothing(t *testing.T) {
	for _, l := range testcorpus.Logs(t) {
		inputs := loadFile(t, l.Path, "s")
		if len(inputs) < 4 {
			continue
		}
		e := New(Config{})
		var k int
		for k = 0; k < len(inputs) && e.OpenTurns() == 0; k++ {
			e.Ingest(inputs[k], epoch)
		}
		if e.OpenTurns() == 0 {
			continue
		}
		e.Drain()
		before := e.Stats()
		open, ok := e.Release("s")
		if !open || !ok {
			t.Fatalf("%s: Release = %v, %v; want an open turn", l.Name, open, ok)
		}
		if e.OpenTurns() != 0 || e.Sessions() != 0 || len(e.Drain()) != 0 || len(e.DrainForgotten()) != 0 {
			t.Fatalf("%s: released session left state or output behind", l.Name)
		}
		e.Sweep(epoch.Add(24 * time.Hour))
		if len(e.Drain()) != 0 || e.Stats().Dangling[CauseTimeout] != before.Dangling[CauseTimeout] {
			t.Fatalf("%s: a released session was swept", l.Name)
		}
		if _, ok := e.Release("s"); ok {
			t.Fatalf("%s: released twice", l.Name)
		}
		return
	}
	t.Fatal("no corpus log opens a turn")
}
