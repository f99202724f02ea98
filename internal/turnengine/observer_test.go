package turnengine

import (
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"strings"
	"testing"
	"time"
)

// countingObserver records what the engine tells its observer.
type countingObserver struct {
	events, violations     int
	turns, fragments, late int
	unpriced               int // the turns' UnpricedCalls when told
	lastNow                time.Time
}

func (o *countingObserver) Event(_ string, now time.Time)     { o.events++; o.lastNow = now }
func (o *countingObserver) Violation(_ string, now time.Time) { o.violations++; o.lastNow = now }
func (o *countingObserver) Closed(t *Turn, now time.Time) {
	switch {
	case t.Late != nil:
		o.late++
	case t.Fragment:
		o.fragments++
	default:
		o.turns++
		o.unpriced += t.UnpricedCalls
	}
	o.lastNow = now
}

// The engine is a state machine with an observer: an observer of one's
// own gets every event, violation and closed turn, with the arrival time
// passed in.
func TestObserver(t *testing.T) {
	obs := &countingObserver{}
	e := New(Config{Observer: obs, LiveSteps: true})
	inputs := loadInputs(t, strings.NewReader(testlog.Synth("s", 2, 3, false)), "s")
	at := epoch.Add(time.Hour)
	for _, in := range inputs {
		e.Ingest(in, at)
	}
	if obs.events != len(inputs) || obs.violations != 0 {
		t.Errorf("observer saw %d events (%d violations), want %d (0)", obs.events, obs.violations, len(inputs))
	}
	if obs.turns != 2 || obs.fragments != 6 || obs.late != 0 {
		t.Errorf("observer saw %d turns, %d fragments, %d late closes; want 2, 6, 0", obs.turns, obs.fragments, obs.late)
	}
	// Each model call reported usage, of a model the built-in prices do
	// not know: the turns come priced to the observer.
	if obs.unpriced != 6 {
		t.Errorf("observer saw %d unpriced calls, want 6 (priced before it is told)", obs.unpriced)
	}
	if !obs.lastNow.Equal(at) {
		t.Errorf("observer told time %v, want the arrival time %v", obs.lastNow, at)
	}
	if n := len(e.Drain()); n != 8 {
		t.Errorf("drained %d, want 8 (6 step fragments, 2 roots)", n)
	}
}
