package turnengine

import "math"

// finishStep hands the open turn's step that just ended to the engine when
// steps are emitted live (Config.LiveSteps): its spans go out as a
// fragment of the turn — same ids, parent the turn's root, which follows
// at the turn's end — its usage joins the turn's totals, and the engine
// forgets it, so an open turn holds only its open step. The step is
// clamped into the turn's start (its end is not known yet). restoring: the
// step's events are being re-applied after a restart, and the engine that
// applied them first emitted it already.
func (s *session) finishStep(restoring bool) {
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
	// Its model calls are priced now, into the turn's totals, which its
	// root carries at the turn's end.
	steps := []*Step{st}
	priceSteps(s.e.metrics.prices, t, steps)
	t.liveInferences += len(st.Attempts)
	t.liveTools += len(st.Tools)
	if restoring {
		return
	}
	frag := &Turn{SessionID: t.SessionID, Number: t.Number, Agent: t.Agent, StartTime: t.StartTime,
		StartSeq: t.StartSeq, EndSeq: -1, Fragment: true, Steps: steps}
	s.e.metrics.recordSteps(frag)
	s.e.closed = append(s.e.closed, frag)
}

// recordSteps aggregates the model and tool calls of a turn's steps
// (priced already).
func (m *Metrics) recordSteps(t *Turn) {
	trace := TraceID(t.SessionID, t.Number)
	for _, st := range t.Steps {
		for _, a := range st.Attempts {
			m.recordAttempt(t, st, a, trace)
		}
		for _, tc := range st.Tools {
			m.recordTool(t, st, tc, trace)
		}
	}
}
