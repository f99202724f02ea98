package turnengine

import (
	"math"
	"time"
)

// finishStep hands the open turn's step that just ended to the engine when
// steps are emitted live (Config.LiveSteps): its spans go out as a
// fragment of the turn — same ids, parent the turn's root, which follows
// at the turn's end — its usage joins the turn's totals, and the engine
// forgets it, so an open turn holds only its open step. The step is
// clamped into the turn's start (its end is not known yet). restoring: the
// step's events are being re-applied after a restart, and the engine that
// applied them first emitted it already.
func (s *session) finishStep(restoring bool, now time.Time) {
	ot := s.turn
	if !s.e.cfg.LiveSteps || ot == nil || len(ot.t.Steps) == 0 {
		return
	}
	t := ot.t
	st := t.Steps[len(t.Steps)-1]
	clampStep(st, t.StartTime, math.MaxInt64)
	addUsage(&t.Usage, st)
	t.Steps[len(t.Steps)-1] = nil // not held by the backing array either
	t.Steps = t.Steps[:len(t.Steps)-1]
	ot.stepsEmitted++
	// Priced into the turn's totals, which the root carries at the turn's
	// end — a replayed step too, though it is not emitted again.
	s.e.price(t, st)
	t.LiveModelCalls += len(st.Attempts)
	t.LiveToolCalls += len(st.Tools)
	frag := &Turn{SessionID: t.SessionID, Number: t.Number, Agent: t.Agent, StartTime: t.StartTime,
		StartSeq: t.StartSeq, EndSeq: -1, Fragment: true, Steps: []*Step{st}, Of: t, Replayed: restoring}
	s.e.obs.Closed(frag, now)
	if !restoring {
		s.e.closed = append(s.e.closed, frag)
	}
}
