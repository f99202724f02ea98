package sessionlog

import "fmt"

// The turn and step state machine (docs/format.md §11.2): turns open and
// close in order, steps within them, and what belongs to a step sits
// inside the open one.

// turnStart opens a turn: the next one, and none may be open.
func (v *Validator) turnStart(e *Event, f Format, out []Violation) []Violation {
	out = v.flushGaps(out)
	if !e.HasTurn {
		return violation(out, e, CodeEnvelopeInvalid, "turn/start needs an integer data.turn")
	}
	if v.openTurn != 0 {
		out = violation(out, e, CodeTurnAlreadyOpen, "turn/start %d while turn %d is still open", e.Turn, v.openTurn)
	}
	// A stream joined late (first seq > 0 without a header) may begin at any turn.
	lateJoin := !v.turnSeen && !f.FromHeader && v.joinedAt > 0
	if e.Turn != v.nextTurn && !lateJoin {
		out = violation(out, e, CodeTurnNotNext, "turn/start %d, but the next turn number is %d", e.Turn, v.nextTurn)
	}
	v.turnSeen = true
	v.openTurn, v.openStep, v.nextStep = e.Turn, 0, 1
	v.resetStep()
	return out
}

// turnEnd closes the open turn, after its last step.
func (v *Validator) turnEnd(e *Event, out []Violation) []Violation {
	out = v.flushGaps(out)
	if !e.HasTurn {
		return violation(out, e, CodeEnvelopeInvalid, "turn/end needs an integer data.turn")
	}
	if v.openTurn == 0 || e.Turn != v.openTurn {
		out = violation(out, e, CodeTurnEndNotOpen, "turn/end %d, but the open turn is %s", e.Turn, optNum(v.openTurn != 0, v.openTurn))
	}
	if v.openStep != 0 {
		out = violation(out, e, CodeTurnEndStepOpen, "turn/end %d while step %d is still open (dsh closes every step first)", e.Turn, v.openStep)
		out = v.unresolved(e, out)
	}
	v.openTurn, v.openStep = 0, 0
	v.nextTurn = e.Turn + 1
	v.turnSeen = true
	v.resetStep()
	return out
}

// stepStart opens a step: the next one of the open turn, and none may be
// open.
func (v *Validator) stepStart(e *Event, out []Violation) []Violation {
	out = v.flushGaps(out)
	if !e.HasTurn || !e.HasStep {
		return violation(out, e, CodeEnvelopeInvalid, "step/start needs integer data.turn and data.step")
	}
	switch {
	case v.openTurn == 0:
		out = violation(out, e, CodeStepOutsideTurn, "step/start %d.%d outside any turn", e.Turn, e.Step)
	case e.Turn != v.openTurn:
		out = violation(out, e, CodeStepOutsideTurn, "step/start %d.%d names turn %d but turn %d is open", e.Turn, e.Step, e.Turn, v.openTurn)
	case v.openStep != 0:
		out = violation(out, e, CodeStepAlreadyOpen, "step/start %d.%d while step %d is still open", e.Turn, e.Step, v.openStep)
	case e.Step != v.nextStep:
		out = violation(out, e, CodeStepNotNext, "step/start %d.%d, but the next step number is %d", e.Turn, e.Step, v.nextStep)
	}
	v.openStep = e.Step
	v.resetStep()
	return out
}

// stepEnd closes the open step, whose advertised calls must all have
// their results.
func (v *Validator) stepEnd(e *Event, out []Violation) []Violation {
	out = v.flushGaps(out)
	if !e.HasTurn || !e.HasStep {
		return violation(out, e, CodeEnvelopeInvalid, "step/end needs integer data.turn and data.step")
	}
	if v.openStep == 0 || e.Turn != v.openTurn || e.Step != v.openStep {
		out = violation(out, e, CodeStepEndNotOpen, "step/end %d.%d, but the open step is %s", e.Turn, e.Step, v.stepName())
	} else {
		out = v.unresolved(e, out)
	}
	v.openStep = 0
	v.nextStep = e.Step + 1
	v.resetStep()
	return out
}

// inStep reports whether the event names the open step, and appends the
// violation when it does not.
func (v *Validator) inStep(e *Event, out []Violation) ([]Violation, bool) {
	if e.HasTurn && e.HasStep && e.Turn == v.openTurn && e.Step == v.openStep && v.openStep != 0 {
		return out, true
	}
	return v.outsideStep(e, out), false
}

// outsideStep appends the violation of an event outside the open step.
func (v *Validator) outsideStep(e *Event, out []Violation) []Violation {
	return violation(out, e, CodeEventOutsideStep, "%s names turn %s step %s but the open step is %s", e.Type,
		optNum(e.HasTurn, e.Turn), optNum(e.HasStep, e.Step), v.stepName())
}

func optNum(ok bool, n int64) string {
	if !ok {
		return "none"
	}
	return fmt.Sprint(n)
}

func (v *Validator) stepName() string {
	if v.openStep == 0 {
		if v.openTurn == 0 {
			return "none (no open turn)"
		}
		return fmt.Sprintf("none (turn %d open)", v.openTurn)
	}
	return fmt.Sprintf("%d.%d", v.openTurn, v.openStep)
}

func (v *Validator) resetStep() {
	v.advertised = v.advertised[:0]
	v.pending.Reset()
}

// unresolved reports advertised calls of the closing step with no result (docs/format.md §11.3).
func (v *Validator) unresolved(e *Event, out []Violation) []Violation {
	for _, c := range v.advertised {
		if !c.resolved {
			out = violation(out, e, CodeToolCallUnresolved, "%s closes step %s while call %q (%s) has no tool/result", e.Type, v.stepName(), c.ID, c.Name)
		}
	}
	return out
}
