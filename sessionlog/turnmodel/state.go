package turnmodel

import (
	"maps"
	"slices"
	"strings"
)

// Clone returns an independent copy of the cursor: a receiver saves one
// before a batch whose delivery may fail and puts it back when the batch
// is refused, so a retried batch is placed the same way.
func (c *Cursor) Clone() *Cursor {
	d := *c
	d.attempts = slices.Clone(c.attempts)
	d.calls.pending = slices.Clone(c.calls.pending)
	d.started = slices.Clone(c.started)
	d.subs = maps.Clone(c.subs)
	return &d
}

// SetSession names the cursor's session when its stored state did not.
func (c *Cursor) SetSession(session string) {
	if c.session == "" {
		c.session = strings.Clone(session)
	}
}

// State is a cursor's state in a stored form (JSON), so a restarted
// process places the rest of a session as the one before it would have.
type State struct {
	// Form is StateForm in states this package wrote.
	Form       int    `json:"form"`
	Session    string `json:"session,omitempty"`
	Parent     string `json:"parent,omitempty"`
	SeedLength int64  `json:"seed_length,omitempty"`
	Turn       int64  `json:"turn,omitempty"`
	// TurnInherited: the open turn's turn/start was inherited.
	TurnInherited bool  `json:"turn_inherited,omitempty"`
	LastClosed    int64 `json:"last_closed,omitempty"`
	StepOpen      bool  `json:"step_open,omitempty"`
	Step          int64 `json:"step,omitempty"`
	// Attempts are the open step's model attempts.
	Attempts []AttemptState `json:"attempts,omitempty"`
	// Calls are the open step's pending tool calls; Started every call and
	// dispatch id started in it.
	Calls   []Call             `json:"calls,omitempty"`
	Started []string           `json:"started,omitempty"`
	Subs    map[string]SubCall `json:"subs,omitempty"`
}

// StateForm is the form of State this package writes.
const StateForm = 1

// AttemptState is one model attempt of the open step: the seqs of its
// first and last events, whether a message committed it and whether it
// ended.
type AttemptState struct {
	First     int64 `json:"first"`
	Last      int64 `json:"last"`
	Committed bool  `json:"committed,omitempty"`
	Closed    bool  `json:"closed,omitempty"`
}

// SubCall is an open dispatch: the step it started in and its parent call.
type SubCall struct {
	Step   int64  `json:"step"`
	CallID string `json:"call_id"`
}

// State returns the cursor's state.
func (c *Cursor) State() State {
	s := State{Form: StateForm, Session: c.session, Parent: c.parent, SeedLength: c.seedLength, Turn: c.turn, TurnInherited: c.turnInherited,
		LastClosed: c.lastClosed, StepOpen: c.stepOpen, Step: c.step,
		Calls: slices.Clone(c.calls.pending), Started: slices.Clone(c.started)}
	for _, a := range c.attempts {
		s.Attempts = append(s.Attempts, AttemptState{First: a.first, Last: a.last, Committed: a.committed, Closed: a.closed})
	}
	if len(c.subs) > 0 {
		s.Subs = make(map[string]SubCall, len(c.subs))
		for k, v := range c.subs {
			s.Subs[k] = SubCall{Step: v.step, CallID: v.callID}
		}
	}
	return s
}

// FromState rebuilds a cursor from a stored state.
func FromState(s State) *Cursor {
	c := &Cursor{session: s.Session, parent: s.Parent, seedLength: s.SeedLength, turn: s.Turn, turnInherited: s.TurnInherited,
		lastClosed: s.LastClosed, stepOpen: s.StepOpen, step: s.Step,
		calls: Calls{pending: slices.Clone(s.Calls)}, started: slices.Clone(s.Started)}
	for _, a := range s.Attempts {
		c.attempts = append(c.attempts, attempt{first: a.First, last: a.Last, committed: a.Committed, closed: a.Closed})
	}
	if len(s.Subs) > 0 {
		c.subs = make(map[string]subCall, len(s.Subs))
		for k, v := range s.Subs {
			c.subs[k] = subCall{step: v.Step, callID: v.CallID}
		}
	}
	return c
}
