package turnengine

import (
	"math"
	"time"
)

// Mark is what a session carries from one event to the next that is not in
// its open turn's events: where its seqs stand, the last turn it closed and
// the model in use. With the events from Retain on, it is all a new engine
// needs to continue the session where this one stands (Resume) — which is
// how a collector keeps its open turns across a restart.
type Mark struct {
	// Started: the session's seqs are being applied in order; Next is the
	// first seq not applied yet.
	Started bool  `json:"started"`
	Next    int64 `json:"next"`
	// Retain is the lowest seq whose event is still needed: the open turn's
	// turn/start, else the first seq not applied yet (an event held in the
	// reorder window, or one still to come). math.MaxInt64: none.
	Retain int64 `json:"retain"`
	// Open is the open turn's number (0: none).
	Open           int64 `json:"open,omitempty"`
	LastClosedTurn int64 `json:"lastClosedTurn,omitempty"`
	// LastTurn is the latest turn number ended, inherited ones included.
	LastTurn int64  `json:"lastTurn,omitempty"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	Gappy    bool   `json:"gappy,omitempty"`
	// Dangled is the session's latest turn closed as dangling that dsh
	// may still end (late.go), so its late close survives a restart.
	Dangled *DangledMark `json:"dangled,omitempty"`
}

// DangledMark is a dangling turn remembered across a restart: its number,
// agent, cause and emitted end, and when it was declared dangling.
type DangledMark struct {
	Turn  int64     `json:"turn"`
	Agent string    `json:"agent,omitempty"`
	Cause string    `json:"cause"`
	End   int64     `json:"end"`
	At    time.Time `json:"at"`
}

// Mark returns the session's mark; false when the engine does not track
// the session.
func (e *Engine) Mark(id string) (Mark, bool) {
	s, ok := e.sessions.Peek(id)
	if !ok {
		return Mark{}, false
	}
	m := Mark{Started: s.started, Next: s.next, LastClosedTurn: s.cur.LastClosed(),
		Provider: s.provider, Model: s.model, Gappy: s.gappy, Retain: math.MaxInt64,
		LastTurn: s.validator.LastTurn()}
	if d := s.dangled; d != nil {
		m.Dangled = &DangledMark{Turn: d.number, Agent: d.agent, Cause: d.cause, End: d.end, At: d.at}
	}
	switch {
	case s.turn != nil:
		m.Retain, m.Open = s.turn.t.StartSeq, s.turn.t.Number
	case !s.gappy && s.validator.OpenTurn() != 0:
		// A turn of a fork's inherited prefix: no span of ours, but the
		// validator's state of it is rebuilt from its turn/start.
		m.Retain, m.Open = s.lastTurnStart, s.validator.OpenTurn()
	case s.started:
		m.Retain = s.next
	}
	if len(s.buf) > 0 {
		m.Retain = min(m.Retain, s.minBuffered())
	}
	return m, true
}

// Resume starts tracking a session at mark m, as it was marked by an
// engine that has stopped. The caller then ingests the session's retained
// events (those from m.Retain on), and the session carries on as if this engine had seen all of it: the open turn is
// rebuilt, events before m.Next are dropped as duplicates, and the
// validator expects the next seq and turn. A session the engine already
// tracks is left alone.
func (e *Engine) Resume(id string, m Mark, now time.Time) {
	if _, ok := e.sessions.Peek(id); ok {
		return
	}
	s := e.session(id, now)
	s.gappy = m.Gappy
	s.cur.SetLastClosed(m.LastClosedTurn)
	s.provider, s.model = m.Provider, m.Model
	if d := m.Dangled; d != nil {
		s.dangled = &dangled{number: d.Turn, agent: d.Agent, cause: d.Cause, end: d.End, at: d.At}
	}
	if m.Started {
		// Where the open turn begins when there is one: its events are
		// re-applied from there.
		next := m.Next
		if m.Open != 0 && m.Retain < next {
			next = m.Retain
		}
		s.started, s.next = true, next
		lastTurn := m.LastTurn
		if m.Open != 0 {
			lastTurn = m.Open - 1 // its turn/start comes again
		}
		s.validator.Resume(next, lastTurn)
		// The events up to Next were counted by the engine that applied
		// them first; re-applied here, they count nowhere a second time.
		s.restored, s.restoredTo = m.Next > next, m.Next-1
	}
}

// DrainForgotten returns the ids of the sessions forgotten (evicted at
// max_sessions) since the last call.
func (e *Engine) DrainForgotten() []string {
	out := e.forgotten
	e.forgotten = nil
	return out
}

// Equal reports whether two marks say the same.
func (m Mark) Equal(o Mark) bool {
	a, b := m.Dangled, o.Dangled
	m.Dangled, o.Dangled = nil, nil
	if m != o || (a == nil) != (b == nil) {
		return false
	}
	return a == nil || a.Turn == b.Turn && a.Agent == b.Agent && a.Cause == b.Cause && a.End == b.End && a.At.Equal(b.At)
}

// Release stops tracking a session without closing anything: no span, no
// metric, no forgotten id. It is for a session another engine has taken
// over (its state carries on there, from the journal); open reports
// whether it had an open turn, ok whether the engine tracked it.
func (e *Engine) Release(id string) (open, ok bool) {
	s, ok := e.sessions.Peek(id)
	if !ok {
		return false, false
	}
	open = s.turn != nil
	if s.openElem != nil {
		e.open.Remove(s.openElem)
		s.openElem = nil
	}
	delete(e.gaps, s)
	e.forget(s)
	delete(e.tombs, id)
	return open, true
}
