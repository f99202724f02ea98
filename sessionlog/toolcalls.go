package sessionlog

import (
	"hash/maphash"
	"slices"
	"strings"
)

// argsSeed seeds the hashes of advertised arguments (compared within one
// process only).
var argsSeed = maphash.MakeSeed()

// assistantMessage checks an assistant/message: the chunks it cites
// explain held gaps, its tool requests are advertised in the open step,
// and from v3 on its stream, not its sources, is the evidence.
func (v *Validator) assistantMessage(e *Event, rules int, out []Violation) []Violation {
	v.citeGaps(e)
	var ok bool
	if out, ok = v.inStep(e, out); ok {
		for _, c := range e.Advertised {
			v.advertised = append(v.advertised, advertisedCall{ID: strings.Clone(c.ID), Name: strings.Clone(c.Name),
				args: maphash.String(argsSeed, c.Arguments)})
		}
	}
	if rules >= 3 && e.HasSources {
		out = violation(out, e, CodeSourcesForbidden, "a v%d assistant/message may not carry sourceEventSeqs (its stream is the evidence)", rules)
	}
	return out
}

// toolCall starts a call the open step advertised, once.
func (v *Validator) toolCall(e *Event, f Format, out []Violation) []Violation {
	var ok bool
	if out, ok = v.inStep(e, out); !ok {
		return out
	}
	if v.pending.Has(e.CallID) {
		return violation(out, e, CodeToolCallDuplicate, "tool/call %q is already started in this step", e.CallID)
	}
	idx := slices.IndexFunc(v.advertised, func(c advertisedCall) bool { return c.ID == e.CallID && !c.started })
	switch {
	case idx < 0:
		out = violation(out, e, CodeToolCallNotAdvertised, "tool/call %q (%s) matches no tool-call block of this step's assistant/message", e.CallID, e.ToolName)
	case v.advertised[idx].Name != e.ToolName:
		out = violation(out, e, CodeToolCallNotAdvertised, "tool/call %q names tool %q but the assistant message advertised %q", e.CallID, e.ToolName, v.advertised[idx].Name)
	case !f.Seed && v.advertised[idx].args != maphash.String(argsSeed, e.Arguments):
		// The seed dialect's tool_use carries an object, re-encoded here, so
		// only real dsh arguments are compared byte for byte.
		out = violation(out, e, CodeToolCallNotAdvertised, "tool/call %q arguments differ from the advertised call's", e.CallID)
	}
	if idx >= 0 {
		v.advertised[idx].started = true
	}
	v.pending.Add(e.CallID, e.ToolName, e.Seq, v.openStep)
	return out
}

// toolResult checks a tool/result: from v4 on its error needs its flag; a
// replacing one (crash repair) needs an open turn, any other closes a call
// of the open step.
func (v *Validator) toolResult(e *Event, f Format, rules int, out []Violation) []Violation {
	if rules >= 4 && e.HasErrorDetail && !e.IsError {
		out = violation(out, e, CodeErrorWithoutIsError, "a v4 tool/result may carry error only with isError: true")
	}
	if e.Surface.Kind == SurfaceReplace {
		if v.openTurn == 0 {
			out = violation(out, e, CodeEventOutsideTurn, "a replacing tool/result needs an open turn")
		}
		return out
	}
	var ok bool
	if out, ok = v.inStep(e, out); ok {
		out = v.resolve(e, f, out)
	}
	return out
}

// resolve closes the call a result answers, by the turn model's pairing
// rules (turnmodel.Calls).
func (v *Validator) resolve(e *Event, f Format, out []Violation) []Violation {
	callID := e.CallID
	if call, ok := v.pending.Resolve(e.ToolResult(f, v.openStep)); ok {
		callID = call.ID
	} else {
		// A call that never started may only be closed by crash repair's
		// TOOL_NOT_STARTED result (docs/format.md §11.3, §11.4).
		notStarted := e.SyntheticResult && e.ErrorCode == "TOOL_NOT_STARTED" &&
			slices.ContainsFunc(v.advertised, func(c advertisedCall) bool { return c.ID == e.CallID && !c.started })
		if !notStarted {
			return violation(out, e, CodeToolResultNoCall, "tool/result for call %q closes no started tool/call of step %s", e.CallID, v.stepName())
		}
	}
	for k := range v.advertised {
		if v.advertised[k].ID == callID && !v.advertised[k].resolved {
			v.advertised[k].resolved = true
			break
		}
	}
	return out
}
