package main

import (
	"slices"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// pairing pairs tool/result events with pending tool/call events
// (docs/format.md §13.3): by the result's call id, else the tool/call its
// sourceEventSeqs[0]
// cites, else the oldest pending call of the same tool name in the result's
// step, else the oldest pending call of that step. V is what the caller
// attaches to a call. `query --call-id` pairs this way as it streams: it
// must decide row by row, while the turn engine, which pairs by the same
// rules for `turns` and `spans`, hands calls out only when their turn
// closes.
type pairing[V any] struct {
	pending []pendingCall[V]
}

// pendingCall is a tool/call still waiting for its result.
type pendingCall[V any] struct {
	callID, name string
	seq, step    int64
	value        V
}

// add records a tool/call.
func (p *pairing[V]) add(e *sessionlog.Event, v V) {
	p.pending = append(p.pending, pendingCall[V]{callID: e.CallID, name: e.ToolName, seq: e.Seq, step: e.Step, value: v})
}

// resolve finds and removes the call a tool/result closes.
func (p *pairing[V]) resolve(e *sessionlog.Event) (v V, ok bool) {
	i := p.find(e)
	if i < 0 {
		return v, false
	}
	v = p.pending[i].value
	p.pending = slices.Delete(p.pending, i, i+1)
	return v, true
}

// find is the index of the pending call e closes, or -1.
func (p *pairing[V]) find(e *sessionlog.Event) int {
	if e.CallID != "" {
		return slices.IndexFunc(p.pending, func(c pendingCall[V]) bool { return c.callID == e.CallID })
	}
	if len(e.Sources) > 0 {
		if i := slices.IndexFunc(p.pending, func(c pendingCall[V]) bool { return c.seq == e.Sources[0] }); i >= 0 {
			return i
		}
	}
	// The guesses stay inside the result's step: an older step's call with
	// no result is unresolved, not this result's call.
	inStep := func(c pendingCall[V]) bool { return !e.HasStep || c.step == e.Step }
	if e.ToolName != "" {
		if i := slices.IndexFunc(p.pending, func(c pendingCall[V]) bool { return inStep(c) && c.name == e.ToolName }); i >= 0 {
			return i
		}
	}
	return slices.IndexFunc(p.pending, inStep)
}

// reset forgets every pending call (at a turn boundary).
func (p *pairing[V]) reset() { p.pending = p.pending[:0] }
