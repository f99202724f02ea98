package turnmodel

import "strings"

// Event is what the turn model reads of a session event: its type and seq,
// the turn and step it names, and the few fields that decide which model
// attempt or tool call it belongs to. sessionlog.Event.TurnModel builds it.
type Event struct {
	Type string
	Seq  int64
	// Turn and Step are data.turn and data.step where the event has them.
	Turn, Step       int64
	HasTurn, HasStep bool
	// CallID is a tool/call's callId, the call id a tool/result's message
	// names, a dispatch's parent call id, approval/asked's callId.
	CallID string
	// SubCallID is a dispatch event's own id.
	SubCallID string
	// ToolName is a tool/call's name, or a seed-dialect tool/result's.
	ToolName string
	// Sources is sourceEventSeqs, expanded.
	Sources []int64
	// Finish: an assistant/chunk of type finish, which ends its attempt.
	Finish bool
	// Streamed: an assistant/message or assistant/attempt that carries its
	// own stream record (v2+): it is an attempt of its own.
	Streamed bool
	// Replace: a tool/result whose surfaceOp replaces history; it closes no
	// call.
	Replace bool
	// Seed: the event was written in the seed dialect.
	Seed bool
}

// Kind says which span of a turn's trace an event belongs to.
type Kind uint8

// Span kinds.
const (
	// KindNone: no span — between turns, or a stray event.
	KindNone Kind = iota
	KindTurn
	KindStep
	KindChat
	KindTool
)

// Stray says why an event that names a turn or step fits no open one.
type Stray uint8

// Strays.
const (
	NotStray Stray = iota
	// Late: the event names a turn already closed.
	Late
	// Orphan: the event names a turn or step that is not open, or a call
	// that was never started.
	Orphan
)

// Place is where an event belongs.
type Place struct {
	Kind Kind
	// Session is the session whose trace the span is in: the parent's for a
	// fork's inherited events (Inherited).
	Session   string
	Inherited bool
	// Turn and Step are the span's turn (its trace) and step; Attempt the
	// model call (from 1) of a chat span; CallID and SubCallID the tool
	// call of a tool span (SubCallID for a nested dispatch).
	Turn, Step        int64
	Attempt           int
	CallID, SubCallID string
	// Stray is set for an event of a turn/step/model/tool type that fits no
	// open turn or step; Kind is then KindNone.
	Stray Stray
	// NewAttempt: the event starts its model attempt.
	NewAttempt bool
	// Superseded: a turn/start closed a turn that was still open; a
	// step/start a step that was still open.
	Superseded bool
	// Paired: a tool/result closed the pending call started at CallSeq.
	Paired  bool
	CallSeq int64
	// NoSpan: no collector emits the span of this place — an inherited
	// event of a fork whose parent is unknown, or a fork's own event in a
	// turn its inherited prefix opened (the connector skips that turn's
	// start as the parent's, so it builds no span of it for the fork).
	NoSpan bool
}

// Spanned reports whether the event's place is a span some collector
// emits: its ids are worth putting on the event's record.
func (p Place) Spanned() bool { return p.Kind != KindNone && !p.NoSpan }

// IDs are the trace and span ids of the span the event belongs to (zero
// for KindNone).
func (p Place) IDs() (TraceID, SpanID) {
	switch p.Kind {
	case KindTurn, KindStep, KindChat, KindTool:
		return TraceIDOf(p.Session, p.Turn), p.SpanID()
	}
	return TraceID{}, SpanID{}
}

// SpanID is the second of IDs alone (the trace id depends on the session
// and turn only, so a caller that has it for them need not hash it again).
func (p Place) SpanID() SpanID {
	switch p.Kind {
	case KindTurn:
		return TurnSpanID(p.Session, p.Turn)
	case KindStep:
		return StepSpanID(p.Session, p.Turn, p.Step)
	case KindChat:
		return ChatSpanID(p.Session, p.Turn, p.Step, p.Attempt)
	case KindTool:
		return ToolSpanID(p.Session, p.Turn, p.Step, p.CallID, p.SubCallID)
	}
	return SpanID{}
}

// Cursor follows one session's events in seq order and answers where each
// belongs. Its state is the open turn and step, the open step's model
// attempts and tool calls, the open turn's nested dispatches, the last
// closed turn and a fork's cut: a few words plus the open step.
//
// The rules (docs: the turn model):
//   - turn/start opens turn data.turn (a still open turn is closed first,
//     Superseded) unless it names a turn already closed (Late);
//   - turn/end closes the open turn when it names it;
//   - step/start opens a step of the open turn (closing an open one);
//     step/end closes the open step it names;
//   - model and tool events (assistant/*, tool/call, tool/result) belong
//     to the open step they name; a v0 chunk run is one attempt until its
//     finish chunk, an assistant/attempt or a v2+ message with a stream is
//     an attempt of its own, a v0 message commits the attempt whose chunks
//     it cites (else the one still streaming, else a new one);
//   - a tool/result closes a call by the rules of Calls;
//   - dispatch starts belong to their parent call in the open step, their
//     settles to the dispatch they settle;
//   - approval/asked belongs to its call when that is in the open step;
//   - everything else belongs to the open step, else the open turn, else
//     to nothing.
//
// Whoever closes a turn by other means (a dangling timeout) tells the
// cursor with CloseTurn.
type Cursor struct {
	session string
	// A fork's events before seedLength are its parent's.
	parent     string
	seedLength int64

	turn int64 // the open turn, 0: none (turns are numbered from 1)
	// turnInherited: the open turn's turn/start was inherited.
	turnInherited bool
	lastClosed    int64
	stepOpen      bool
	step          int64

	attempts []attempt
	calls    Calls
	// started are the call ids started in the open step, with the ids of
	// their dispatches (a dispatch's parent may be another dispatch).
	started []string
	// subs are the open turn's dispatches by subCallId.
	subs map[string]subCall
}

type attempt struct {
	first, last       int64
	committed, closed bool
}

type subCall struct {
	step   int64
	callID string
}

// NewCursor returns a cursor for session (copied).
func NewCursor(session string) *Cursor {
	return &Cursor{session: strings.Clone(session)}
}

// Session is the cursor's session id.
func (c *Cursor) Session() string { return c.session }

// SetFork marks the session a fork whose first seedLength events are
// inherited from parent: those events belong to the parent's spans (to
// none of this session's when parent is unknown).
func (c *Cursor) SetFork(parent string, seedLength int64) {
	c.parent, c.seedLength = strings.Clone(parent), seedLength
}

// Fork is the fork cut SetFork set: the parent and how many events are
// inherited from it (none: "" and 0).
func (c *Cursor) Fork() (parent string, seedLength int64) { return c.parent, c.seedLength }

// OpenTurn is the open turn (0: none); OpenStep the open step and whether
// one is open.
func (c *Cursor) OpenTurn() int64 { return c.turn }

// OpenStep is the open step and whether one is open.
func (c *Cursor) OpenStep() (int64, bool) { return c.step, c.stepOpen }

// TurnInherited reports whether the open turn's turn/start was one of a
// fork's inherited events: the turn is the parent's, not the session's.
func (c *Cursor) TurnInherited() bool { return c.turn != 0 && c.turnInherited }

// LastClosed is the number of the last turn closed (0: none).
func (c *Cursor) LastClosed() int64 { return c.lastClosed }

// CloseTurn closes the open turn from outside (a dangling timeout, an
// eviction): its later events are late.
func (c *Cursor) CloseTurn() {
	if c.turn != 0 {
		c.lastClosed = max(c.lastClosed, c.turn)
	}
	c.turn = 0
	c.closeStep()
	clear(c.subs)
}

// SetLastClosed sets the last closed turn, for a session resumed from a
// mark (its earlier turns are not replayed).
func (c *Cursor) SetLastClosed(n int64) { c.lastClosed = n }

func (c *Cursor) closeStep() {
	c.stepOpen, c.step = false, 0
	c.attempts = c.attempts[:0]
	c.calls.Reset()
	c.started = c.started[:0]
}

func (c *Cursor) openStep(n int64) {
	c.closeStep()
	c.stepOpen, c.step = true, n
}

// stray classifies an event naming a turn that is not open.
func (c *Cursor) stray(e *Event) Stray {
	if e.HasTurn && e.Turn <= c.lastClosed {
		return Late
	}
	return Orphan
}

// inStep reports whether e names the open step (data.step may be absent).
func (c *Cursor) inStep(e *Event) bool {
	return c.turn != 0 && c.stepOpen && e.HasTurn && e.Turn == c.turn && (!e.HasStep || e.Step == c.step)
}

func (c *Cursor) startedInStep(id string) bool {
	for _, s := range c.started {
		if s == id {
			return true
		}
	}
	return false
}

// Advance moves the cursor past e and returns where e belongs.
func (c *Cursor) Advance(e *Event) Place {
	inTurn := c.turn != 0 && c.turnInherited
	p := c.advance(e)
	switch {
	case p.Inherited && c.parent == "":
		p.NoSpan = true
	case !p.Inherited && p.Kind != KindNone && inTurn && p.Turn != 0 && (e.Type != "turn/start" || p.Stray != NotStray):
		p.NoSpan = true
	}
	if e.Type == "turn/start" && p.Kind == KindTurn {
		c.turnInherited = p.Inherited
	}
	return p
}

func (c *Cursor) advance(e *Event) Place {
	p := Place{Session: c.session, CallSeq: -1}
	if e.Seq < c.seedLength {
		p.Inherited = true
		if c.parent != "" {
			p.Session = c.parent
		}
	}
	switch e.Type {
	case "turn/start":
		c.turnStart(e, &p)
	case "turn/end":
		c.turnEnd(e, &p)
	case "step/start", "step/end":
		c.stepBoundary(e, &p)
	case "assistant/chunk", "assistant/attempt", "assistant/message":
		c.modelEvent(e, &p)
	case "tool/call":
		c.toolCall(e, &p)
	case "tool/result":
		c.toolResult(e, &p)
	case "tool/ptc-dispatch-start", "tool/code-dispatch-start", "tool/ptc-dispatch", "tool/code-dispatch":
		c.dispatch(e, &p)
	case "approval/asked":
		if c.turn != 0 && c.stepOpen && e.CallID != "" && c.startedInStep(e.CallID) {
			c.atTool(&p, e.CallID, "", c.step)
		} else {
			c.here(&p)
		}
	default:
		c.here(&p)
	}
	return p
}

// here places p in the open step, else the open turn, else nowhere.
func (c *Cursor) here(p *Place) {
	switch {
	case c.turn == 0:
	case c.stepOpen:
		p.Kind, p.Turn, p.Step = KindStep, c.turn, c.step
	default:
		p.Kind, p.Turn = KindTurn, c.turn
	}
}

// atChat places p in the open step's model attempt i (from 0).
func (c *Cursor) atChat(p *Place, i int, isNew bool) {
	p.Kind, p.Turn, p.Step, p.Attempt, p.NewAttempt = KindChat, c.turn, c.step, i+1, isNew
}

// atTool places p on a tool call (a nested dispatch when subCallID is set).
func (c *Cursor) atTool(p *Place, callID, subCallID string, step int64) {
	p.Kind, p.Turn, p.Step, p.CallID, p.SubCallID = KindTool, c.turn, step, callID, subCallID
}

// turnStart opens the event's turn, closing one still open (superseded).
// A turn/start of a turn already closed is late; one with no valid number
// an orphan.
func (c *Cursor) turnStart(e *Event, p *Place) {
	switch {
	case e.HasTurn && e.Turn <= c.lastClosed:
		p.Stray = Late
		return
	case !e.HasTurn || e.Turn <= 0: // turns are numbered from 1
		p.Stray = Orphan
		return
	}
	if c.turn != 0 {
		p.Superseded = true
		c.CloseTurn()
	}
	c.turn = e.Turn
	p.Kind, p.Turn = KindTurn, c.turn
}

// turnEnd closes the open turn when the event names it.
func (c *Cursor) turnEnd(e *Event, p *Place) {
	if c.turn == 0 || !e.HasTurn || e.Turn != c.turn {
		p.Stray = c.stray(e)
		return
	}
	p.Kind, p.Turn = KindTurn, c.turn
	c.CloseTurn()
}

// stepBoundary opens (closing one still open: superseded) or closes a step
// of the open turn.
func (c *Cursor) stepBoundary(e *Event, p *Place) {
	if e.Type == "step/start" {
		if c.turn == 0 || e.Turn != c.turn {
			p.Stray = c.stray(e)
			return
		}
		p.Superseded = c.stepOpen
		c.openStep(e.Step)
		p.Kind, p.Turn, p.Step = KindStep, c.turn, c.step
		return
	}
	if !c.inStep(e) {
		p.Stray = c.stray(e)
		return
	}
	p.Kind, p.Turn, p.Step = KindStep, c.turn, c.step
	c.closeStep()
}

// modelEvent places an assistant event in its model attempt
// (docs/format.md §13.2): a chunk in the attempt still streaming, an attempt record in a
// new one, a message in the attempt it commits.
func (c *Cursor) modelEvent(e *Event, p *Place) {
	if !c.inStep(e) {
		p.Stray = c.stray(e)
		return
	}
	switch e.Type {
	case "assistant/chunk":
		i, isNew := c.current(e.Seq)
		a := &c.attempts[i]
		a.last = e.Seq
		if e.Finish {
			a.closed = true
		}
		c.atChat(p, i, isNew)
	case "assistant/attempt":
		i := c.start(e.Seq)
		c.attempts[i].closed = true
		c.atChat(p, i, true)
	default: // assistant/message
		i, isNew := c.committed(e)
		c.attempts[i].committed, c.attempts[i].closed = true, true
		c.atChat(p, i, isNew)
	}
}

// toolCall starts a pending call in the open step.
func (c *Cursor) toolCall(e *Event, p *Place) {
	if !c.inStep(e) {
		p.Stray = c.stray(e)
		return
	}
	c.calls.Add(e.CallID, e.ToolName, e.Seq, c.step)
	c.started = append(c.started, strings.Clone(e.CallID))
	c.atTool(p, e.CallID, "", c.step)
}

// toolResult closes the pending call the pairing rules choose (Calls); a
// result that rewrites history closes none.
func (c *Cursor) toolResult(e *Event, p *Place) {
	if e.Replace {
		c.here(p) // rewrites history; closes no call
		return
	}
	if !c.inStep(e) {
		p.Stray = c.stray(e)
		return
	}
	r := Result{CallID: e.CallID, ToolName: e.ToolName, Step: c.step, Seed: e.Seed}
	if len(e.Sources) > 0 {
		r.Cites, r.HasCites = e.Sources[0], true
	}
	call, ok := c.calls.Resolve(r)
	if !ok {
		// No started call: a call known only from its result (crash
		// repair's TOOL_NOT_STARTED), or a result of no call.
		c.started = append(c.started, strings.Clone(e.CallID))
		c.atTool(p, e.CallID, "", c.step)
		return
	}
	p.Paired, p.CallSeq = true, call.Seq
	c.atTool(p, call.ID, "", c.step)
}

// dispatch places a nested dispatch under the call it runs in: its start
// under a call started in the open step, its settle under its start's
// call. Either without what it hangs on is an orphan.
func (c *Cursor) dispatch(e *Event, p *Place) {
	if e.Type == "tool/ptc-dispatch-start" || e.Type == "tool/code-dispatch-start" {
		if c.turn == 0 || !c.stepOpen || !c.startedInStep(e.CallID) {
			p.Stray = Orphan
			return
		}
		if c.subs == nil {
			c.subs = map[string]subCall{}
		}
		c.subs[strings.Clone(e.SubCallID)] = subCall{step: c.step, callID: strings.Clone(e.CallID)}
		c.started = append(c.started, strings.Clone(e.SubCallID))
		c.atTool(p, e.CallID, e.SubCallID, c.step)
		return
	}
	sub, ok := c.subs[e.SubCallID]
	if c.turn == 0 || !ok {
		p.Stray = Orphan
		return
	}
	delete(c.subs, e.SubCallID)
	c.atTool(p, sub.callID, e.SubCallID, sub.step)
}

// current is the index of the step's attempt still streaming, starting a
// new one when none is.
func (c *Cursor) current(seq int64) (int, bool) {
	if n := len(c.attempts); n > 0 && !c.attempts[n-1].closed {
		return n - 1, false
	}
	return c.start(seq), true
}

// start begins the step's next attempt at the event seq.
func (c *Cursor) start(seq int64) int {
	c.attempts = append(c.attempts, attempt{first: seq, last: seq})
	return len(c.attempts) - 1
}

// committed is the attempt an assistant/message commits: a message with
// its own stream is one; a v0/v1 (or seed) message commits the newest
// uncommitted attempt whose chunks it cites, else the one still streaming,
// else a new one.
func (c *Cursor) committed(e *Event) (int, bool) {
	if e.Streamed {
		return c.start(e.Seq), true
	}
	for i := len(c.attempts) - 1; i >= 0; i-- {
		a := c.attempts[i]
		if !a.committed && (cites(e.Sources, a.last) || cites(e.Sources, a.first)) {
			return i, false
		}
	}
	if n := len(c.attempts); n > 0 && !c.attempts[n-1].closed {
		return n - 1, false
	}
	return c.start(e.Seq), true
}

func cites(sources []int64, seq int64) bool {
	for _, s := range sources {
		if s == seq {
			return true
		}
	}
	return false
}
