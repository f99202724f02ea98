package logrecord

import (
	"encoding/json"
	"maps"
	"slices"
)

// Position is a copy of what a Tracker knows of one session: the open turn,
// step and model attempt, the open step's tool calls and the fork cut. A
// receiver saves it before appending a batch whose delivery may fail, and
// restores it when the batch is refused, so a retried batch gets the same
// ids; it also persists it, so ids stay right across a restart. The zero
// Position means "nothing known".
type Position struct {
	p *position
}

// IsZero reports whether the Position holds nothing.
func (p Position) IsZero() bool { return p.p == nil }

// Save returns a copy of the session's position (the zero Position when the
// Tracker knows nothing of the session). It does not touch the LRU order.
func (t *Tracker) Save(session string) Position {
	p := t.sessions[session]
	if p == nil {
		return Position{}
	}
	return Position{p: p.clone()}
}

// Restore puts a saved position back; the zero Position forgets the session.
func (t *Tracker) Restore(session string, saved Position) {
	if saved.p == nil {
		if _, ok := t.sessions[session]; ok {
			delete(t.sessions, session)
			// The session was most likely added just now: search from the end.
			for i := len(t.order) - 1; i >= 0; i-- {
				if t.order[i] == session {
					t.order = slices.Delete(t.order, i, i+1)
					break
				}
			}
		}
		return
	}
	p := t.position(session)
	*p = *saved.p.clone()
}

func (p *position) clone() *position {
	c := *p
	c.calls = maps.Clone(p.calls)
	if c.calls == nil {
		c.calls = map[int64]string{}
	}
	return &c
}

// positionJSON is the stored form of a position.
type positionJSON struct {
	Turn        int64            `json:"turn,omitempty"`
	Step        int64            `json:"step,omitempty"`
	Attempts    int              `json:"attempts,omitempty"`
	AttemptOpen bool             `json:"attempt_open,omitempty"`
	Calls       map[int64]string `json:"calls,omitempty"`
	Parent      string           `json:"parent,omitempty"`
	SeedLength  int64            `json:"seed_length,omitempty"`
}

// MarshalJSON stores the position; the zero Position is null.
func (p Position) MarshalJSON() ([]byte, error) {
	if p.p == nil {
		return []byte("null"), nil
	}
	return json.Marshal(positionJSON{
		Turn: p.p.turn, Step: p.p.step, Attempts: p.p.attempts, AttemptOpen: p.p.attemptOpen,
		Calls: p.p.calls, Parent: p.p.parent, SeedLength: p.p.seedLength,
	})
}

// UnmarshalJSON reads a stored position; null is the zero Position.
func (p *Position) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*p = Position{}
		return nil
	}
	var j positionJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Calls == nil {
		j.Calls = map[int64]string{}
	}
	*p = Position{p: &position{
		turn: j.Turn, step: j.Step, attempts: j.Attempts, attemptOpen: j.AttemptOpen,
		calls: j.Calls, parent: j.Parent, seedLength: j.SeedLength,
	}}
	return nil
}
