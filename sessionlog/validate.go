package sessionlog

// Event checks one event (in seq order) under format f and returns the
// relations it breaks. Row-level decoding problems are the caller's; Row
// reports both.
func (v *Validator) Event(e *Event, f Format) []Violation {
	return v.event(e, f, nil)
}

// Row checks one row under format f and returns its violations: the row's
// own decoding problems first, then broken relations, in event order.
func (v *Validator) Row(r *Row, f Format) []Violation {
	out := append([]Violation(nil), r.Problems...)
	switch r.Kind {
	case RowHeader:
		if v.header == nil {
			v.header = r.Header
		}
		return out
	case RowInvalid:
		v.resync = true
		return out
	case RowOther:
		return out
	}
	for i := range r.Events {
		out = v.event(&r.Events[i], f, out)
	}
	return out
}

// Finish checks what can only be judged at the end of the log and returns
// those violations.
func (v *Validator) Finish(f Format) []Violation {
	out := v.flushGaps(nil)
	if v.header != nil && f.FromHeader && f.Version >= 2 && v.header.HasIsSeeded {
		if v.header.IsSeeded && !v.taggedEndSeed {
			out = append(out, Violation{Line: 1, Seq: -1, Code: CodeSeededMismatch,
				Message: "header isSeeded is true but no session/end-seed with inherited:true exists"})
		}
		if !v.header.IsSeeded && v.taggedEndSeed {
			out = append(out, Violation{Line: 1, Seq: -1, Code: CodeSeededMismatch,
				Message: "header isSeeded is false but a session/end-seed with inherited:true exists"})
		}
	}
	return out
}

// event checks one event, in seq order, and appends to out what it
// breaks: first the seq's density (docs/format.md §4, §11.2), then the
// rules of its type, then its surface operation.
func (v *Validator) event(e *Event, f Format, out []Violation) []Violation {
	if !v.started || e.Seq != v.lastSeq+1 {
		var repeated bool
		if out, repeated = v.seqJump(e, f, out); repeated {
			return out // a seq that repeats or goes back: nothing more is judged of it
		}
	}
	v.lastSeq, v.resync = e.Seq, false
	rules := f.RulesVersion()
	surface := IsSurfaceType(e.Type, rules)
	// Surface keys belong to surface types only (docs/format.md §4, §8.1).
	if (e.Surface.Kind != SurfaceNone || e.HasSources) && !surface && knownTypes[e.Type] {
		out = violation(out, e, CodeSurfaceKeysLogged, "%s is a log-only event and may not carry surfaceOp or sourceEventSeqs", e.Type)
	}
	out = v.byType(e, f, rules, surface, out)
	if surface && !v.noSurface {
		out = v.surfaceOp(e, out)
	} else if surface && e.Surface.Kind == SurfaceNone {
		out = violation(out, e, CodeSurfaceOpMissing, "%s is a surface event and must carry surfaceOp", e.Type)
	}
	return out
}

// byType checks the rules of the event's type under the rules of format
// version rules (docs/format.md §11): the turn and step machine, what must
// sit in the open step and its tool calls, and a version's payload rules.
func (v *Validator) byType(e *Event, f Format, rules int, surface bool, out []Violation) []Violation {
	switch e.Type {
	case "turn/start":
		return v.turnStart(e, f, out)
	case "turn/end":
		return v.turnEnd(e, out)
	case "step/start":
		return v.stepStart(e, out)
	case "step/end":
		return v.stepEnd(e, out)
	case "assistant/chunk":
		// A chunk of a turn that was never opened, with no turn open, is a
		// detached model stream: dsh's replay scripts and provider seeds
		// are logs of nothing but these. It belongs to no step.
		if detached := v.openTurn == 0 && e.HasTurn && e.Turn >= v.nextTurn; !detached {
			out, _ = v.inStep(e, out)
		}
	case "assistant/attempt", "llm/retry": // docs/format.md §11.3: a retry sits inside the open step
		out, _ = v.inStep(e, out)
	case "system/message", "developer/message":
		if surface {
			out, _ = v.inStep(e, out)
		}
	case "assistant/message":
		return v.assistantMessage(e, rules, out)
	case "tool/call":
		return v.toolCall(e, f, out)
	case "tool/result":
		return v.toolResult(e, f, rules, out)
	case "request/header":
		if rules >= 3 && e.HasSystem {
			out = violation(out, e, CodeSystemForbidden, "a v%d request/header may not carry header.system (the system prompt is a system/message)", rules)
		}
	case "todo/write":
		if v.openTurn == 0 {
			out = violation(out, e, CodeEventOutsideTurn, "%s needs an open turn", e.Type)
		}
	case "session/end-seed":
		v.taggedEndSeed = v.taggedEndSeed || e.Inherited
	}
	return out
}
