package main

import (
	"slices"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// Turn is the outline of one turn: its end reason, its timing and its steps.
type Turn struct {
	Number int64
	// Started is false for a turn whose turn/start was not seen (a stream
	// joined late); StartTime is then meaningless.
	Started   bool
	StartTime int64
	// Ended is false for an open turn (no turn/end); Reason and EndTime are
	// then meaningless.
	Ended   bool
	EndTime int64
	Reason  sessionlog.Reason
	Steps   []*Step
}

// Duration is the turn's wall time in milliseconds, clamped at 0 (§3: time
// is not monotonic). ok is false when the start or the end is unknown;
// clamped is true when the end came before the start, back is then by how
// much.
func (t *Turn) Duration() (ms int64, ok, clamped bool, back int64) {
	if !t.Started || !t.Ended {
		return 0, false, false, 0
	}
	ms, clamped, back = elapsed(t.StartTime, t.EndTime)
	return ms, true, clamped, back
}

// Step is the outline of one step: the model that served it, the tokens its
// model attempts spent, and the tool calls it made.
type Step struct {
	Number int64
	// Ended is false for a step with no step/end.
	Ended bool
	// Provider and Model name the model (§8.2): the assistant/message
	// source, else the latest request/header or request/context before the
	// step's last attempt. Both empty when unknown.
	Provider, Model string
	// Tokens sums the usage of the step's attempts, each counted once
	// (§8.2). HasUsage is false when no attempt reported any usage.
	Tokens   Tokens
	HasUsage bool
	// Attempts is the number of model attempts.
	Attempts int
	// Calls are the step's tool calls in tool/call order, each with its
	// dispatch sub-calls.
	Calls []*Call

	attempts   []attempt
	open       int // index of the v0 attempt still streaming, -1 if none
	advertised []sessionlog.ToolCallRef
}

// Tokens are disjoint token counts (§8.1): uncached input, cache (read plus
// write) and output.
type Tokens struct {
	Input, Cache, Output int64
}

// add counts one usage record.
func (t *Tokens) add(u *sessionlog.Usage) {
	t.Input += u.InputTokens
	t.Cache += u.CacheReadTokens + u.CacheWriteTokens
	t.Output += u.OutputTokens
}

// attempt is one model attempt of a step. In v0/v1 it is a run of
// assistant/chunk events ended by a finish chunk; in v2+ an
// assistant/attempt or the committed assistant/message.
type attempt struct {
	firstSeq, lastSeq int64
	// usage is the attempt's usage chunk; message the committing
	// assistant/message's usage, which wins for the committed attempt.
	usage, message *sessionlog.Usage
	committed      bool
	// provider and model are the latest request model when the attempt began.
	provider, model string
}

// Call is one tool call or dispatch sub-call and its outcome.
type Call struct {
	// ID is the callId, or a sub-call's subCallId.
	ID   string
	Tool string
	// Sub is true for a tool/ptc-dispatch* or tool/code-dispatch* sub-call.
	Sub bool
	// Started: the tool/call (or dispatch start) was seen, at StartTime.
	Started   bool
	StartTime int64
	// Settled: the tool/result (or dispatch settle) was seen, at EndTime,
	// with IsError and ErrorCode.
	Settled   bool
	EndTime   int64
	IsError   bool
	ErrorCode string
	// ParentID is a sub-call's parentCallId.
	ParentID string
	// Subs are the dispatch sub-calls made under this call, in start order.
	Subs []*Call
}

// Outcome is "ok", "error" or "unknown" (no result).
func (c *Call) Outcome() string {
	switch {
	case !c.Settled:
		return "unknown"
	case c.IsError || c.ErrorCode != "":
		return "error"
	}
	return "ok"
}

// Latency is the call's tool/call → tool/result time in milliseconds,
// clamped at 0; ok is false when either end is missing.
func (c *Call) Latency() (ms int64, ok, clamped bool, back int64) {
	if !c.Started || !c.Settled {
		return 0, false, false, 0
	}
	ms, clamped, back = elapsed(c.StartTime, c.EndTime)
	return ms, true, clamped, back
}

// elapsed is to − from clamped at 0; back is how far the clock went back.
func elapsed(from, to int64) (ms int64, clamped bool, back int64) {
	if to < from {
		return 0, true, from - to
	}
	return to - from, false, 0
}

// Outliner builds the turn outline of one session from its events in seq
// order. It holds only the open turn (and the latest request model), so
// memory stays bounded by the largest turn, not the log.
type Outliner struct {
	turn *Turn
	step *Step
	// calls pairs tool results with the open turn's calls.
	calls pairing[*Call]
	// subs are the open turn's dispatch sub-calls by subCallId.
	subs map[string]*Call
	// provider and model are the latest request/header or request/context.
	provider, model string
}

// NewOutliner returns an Outliner for one session.
func NewOutliner() *Outliner {
	return &Outliner{subs: map[string]*Call{}}
}

// Add folds one event into the outline. It returns the turn the event
// completed (its turn/end, or a turn/start that found the previous turn
// still open), else nil.
func (o *Outliner) Add(e *sessionlog.Event) *Turn {
	switch e.Type {
	case "request/header", "request/context":
		if e.Provider != "" || e.Model != "" {
			o.provider, o.model = e.Provider, e.Model
		}
		return nil
	case "turn/start":
		done := o.closeTurn()
		o.turn = &Turn{Number: e.Turn, Started: true, StartTime: e.Time}
		return done
	case "turn/end":
		t := o.turnFor(e)
		t.Ended, t.EndTime, t.Reason = true, e.Time, e.Reason
		return o.closeTurn()
	case "step/start":
		t := o.turnFor(e)
		o.step = &Step{Number: e.Step, open: -1}
		t.Steps = append(t.Steps, o.step)
	case "step/end":
		if o.step != nil {
			o.step.Ended = true
		}
		o.step = nil
	case "assistant/chunk":
		if o.turn == nil {
			return nil // a detached model stream belongs to no turn
		}
		o.chunk(o.stepFor(e), e)
	case "llm/retry-started":
		if s := o.step; s != nil {
			s.open = -1 // the next chunk starts the retry's attempt
		}
	case "assistant/attempt":
		s := o.stepFor(e)
		a := o.newAttempt(s, e.Seq)
		if e.Stream != nil {
			a.usage = e.Stream.Usage
		}
	case "assistant/message":
		o.message(o.stepFor(e), e)
	case "tool/call":
		s := o.stepFor(e)
		c := &Call{ID: e.CallID, Tool: e.ToolName, Started: true, StartTime: e.Time}
		s.Calls = append(s.Calls, c)
		o.calls.add(e, c)
	case "tool/result":
		if e.Surface.Kind == sessionlog.SurfaceReplace {
			return nil // a rewrite of an earlier result, not an execution (§5.5)
		}
		s := o.stepFor(e)
		c, ok := o.calls.resolve(e)
		if !ok {
			// A result with no started call: crash repair's TOOL_NOT_STARTED,
			// or a broken log. Show it as a call that has no tool/call.
			c = &Call{ID: e.CallID, Tool: e.ToolName}
			if i := slices.IndexFunc(s.advertised, func(r sessionlog.ToolCallRef) bool { return r.ID == e.CallID }); i >= 0 && c.Tool == "" {
				c.Tool = s.advertised[i].Name
			}
			s.Calls = append(s.Calls, c)
		}
		c.Settled, c.EndTime, c.IsError, c.ErrorCode = true, e.Time, e.IsError, e.ErrorCode
	case "tool/ptc-dispatch-start", "tool/code-dispatch-start", "tool/ptc-dispatch", "tool/code-dispatch":
		if o.turn == nil {
			return nil
		}
		o.dispatch(e)
	}
	return nil
}

// Close returns the turn still open at the end of the input, if any.
func (o *Outliner) Close() *Turn { return o.closeTurn() }

// closeTurn settles the open turn's steps and returns the turn, forgetting
// the turn's state.
func (o *Outliner) closeTurn() *Turn {
	t := o.turn
	if t != nil {
		for _, s := range t.Steps {
			s.finish()
		}
	}
	o.turn, o.step = nil, nil
	o.calls.reset()
	clear(o.subs)
	return t
}

// turnFor is the open turn, or a turn opened for an event of a turn whose
// turn/start was not seen.
func (o *Outliner) turnFor(e *sessionlog.Event) *Turn {
	if o.turn == nil {
		o.turn = &Turn{Number: e.Turn}
	}
	return o.turn
}

// stepFor is the open step, or a step opened for an event of a step whose
// step/start was not seen.
func (o *Outliner) stepFor(e *sessionlog.Event) *Step {
	if o.step == nil {
		t := o.turnFor(e)
		o.step = &Step{Number: e.Step, open: -1}
		t.Steps = append(t.Steps, o.step)
	}
	return o.step
}

// newAttempt starts an attempt of s at seq, noting the request model then
// in force.
func (o *Outliner) newAttempt(s *Step, seq int64) *attempt {
	s.attempts = append(s.attempts, attempt{firstSeq: seq, lastSeq: seq, provider: o.provider, model: o.model})
	return &s.attempts[len(s.attempts)-1]
}

// chunk adds a v0/v1 assistant/chunk to the attempt it belongs to: a finish
// chunk ends the attempt (§12.2 #4).
func (o *Outliner) chunk(s *Step, e *sessionlog.Event) {
	var a *attempt
	if s.open >= 0 {
		a = &s.attempts[s.open]
		a.lastSeq = e.Seq
	} else {
		a = o.newAttempt(s, e.Seq)
		s.open = len(s.attempts) - 1
	}
	if e.Chunk == nil {
		return
	}
	switch e.Chunk.Type {
	case "usage":
		if e.Chunk.Usage != nil {
			a.usage = e.Chunk.Usage
		}
	case "finish":
		s.open = -1
	}
}

// message commits an attempt: in v2+ the message is its own attempt with
// its embedded stream; in v0/v1 it commits the chunk attempt its
// sourceEventSeqs cite, else the attempt still streaming or the last one
// not yet committed, else it stands for an attempt whose chunks were not
// logged.
func (o *Outliner) message(s *Step, e *sessionlog.Event) {
	if e.Provider != "" || e.Model != "" {
		s.Provider, s.Model = e.Provider, e.Model
	}
	for _, c := range e.Advertised { // ids and names only: arguments can be large
		s.advertised = append(s.advertised, sessionlog.ToolCallRef{ID: c.ID, Name: c.Name})
	}
	if e.Stream != nil {
		a := o.newAttempt(s, e.Seq)
		a.committed, a.usage, a.message = true, e.Stream.Usage, e.Usage
		return
	}
	i := -1
	switch {
	case len(e.Sources) > 0:
		i = slices.IndexFunc(s.attempts, func(a attempt) bool {
			return !a.committed && slices.ContainsFunc(e.Sources, func(n int64) bool { return n >= a.firstSeq && n <= a.lastSeq })
		})
	case e.HasSources: // [] = the provider stream is known to be empty
	case s.open >= 0:
		i = s.open
	case len(s.attempts) > 0 && !s.attempts[len(s.attempts)-1].committed:
		i = len(s.attempts) - 1
	}
	var a *attempt
	if i >= 0 {
		a = &s.attempts[i]
		if i == s.open {
			s.open = -1
		}
	} else {
		a = o.newAttempt(s, e.Seq)
	}
	a.committed, a.message = true, e.Usage
}

// dispatch records a dispatch sub-call's start or settle under its parent.
func (o *Outliner) dispatch(e *sessionlog.Event) {
	c := o.subs[e.SubCallID]
	if c == nil {
		c = &Call{ID: e.SubCallID, Tool: e.ToolName, Sub: true, ParentID: e.CallID}
		o.subs[e.SubCallID] = c
		if p := o.parent(e); p != nil {
			p.Subs = append(p.Subs, c)
		} else {
			s := o.stepFor(e)
			s.Calls = append(s.Calls, c)
		}
	}
	if e.Type == "tool/ptc-dispatch-start" || e.Type == "tool/code-dispatch-start" {
		c.Started, c.StartTime = true, e.Time
		return
	}
	c.Settled, c.EndTime, c.IsError, c.ErrorCode = true, e.Time, e.IsError, e.ErrorCode
}

// parent finds a sub-call's parent: the call or sub-call named by
// parentCallId, else the root call.
func (o *Outliner) parent(e *sessionlog.Event) *Call {
	if p := o.subs[e.CallID]; p != nil && e.CallID != e.SubCallID {
		return p
	}
	for _, id := range []string{e.CallID, e.RootCallID} {
		if id == "" {
			continue
		}
		for _, s := range slices.Backward(o.turn.Steps) {
			for _, c := range slices.Backward(s.Calls) {
				if c.ID == id && !c.Sub {
					return c
				}
			}
		}
	}
	return nil
}

// finish settles the step's derived figures: attempts, tokens and model.
func (s *Step) finish() {
	s.Attempts = len(s.attempts)
	s.Tokens, s.HasUsage = Tokens{}, false
	for _, a := range s.attempts {
		u := a.usage
		if a.committed && a.message != nil {
			u = a.message // authoritative for the committed attempt (§8.2)
		}
		if u != nil {
			s.Tokens.add(u)
			s.HasUsage = true
		}
	}
	if s.Provider == "" && s.Model == "" && len(s.attempts) > 0 {
		last := s.attempts[len(s.attempts)-1]
		s.Provider, s.Model = last.provider, last.model
	}
}

// pairing pairs tool/result events with pending tool/call events (§12.2
// #6): by the result's call id, else the tool/call its sourceEventSeqs[0]
// cites, else the oldest pending call of the same tool name in the result's
// step, else the oldest pending call of that step. V is what the caller
// attaches to a call.
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
