package logrecord

import (
	"cmp"
	"encoding/json"
	"slices"

	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// Position is a copy of what a Tracker knows of one session: the turn
// model's cursor. A receiver saves it before appending a batch whose
// delivery may fail, and restores it when the batch is refused, so a
// retried batch gets the same ids; it also persists it, so ids stay right
// across a restart. The zero Position means "nothing known".
type Position struct {
	cur *turnmodel.Cursor
}

// IsZero reports whether the Position holds nothing.
func (p Position) IsZero() bool { return p.cur == nil }

// Save returns a copy of the session's position (the zero Position when the
// Tracker knows nothing of the session). It does not touch the LRU order.
func (t *Tracker) Save(session string) Position {
	return Position{cur: t.table.Save(session)}
}

// Restore puts a saved position back; the zero Position forgets the session.
func (t *Tracker) Restore(session string, saved Position) {
	t.table.Restore(session, saved.cur)
}

// MarshalJSON stores the position; the zero Position is null.
func (p Position) MarshalJSON() ([]byte, error) {
	if p.cur == nil {
		return []byte("null"), nil
	}
	return json.Marshal(p.cur.State())
}

// UnmarshalJSON reads a stored position; null is the zero Position.
func (p *Position) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*p = Position{}
		return nil
	}
	var st turnmodel.State
	if err := json.Unmarshal(b, &st); err != nil || st.Form != turnmodel.StateForm {
		// A checkpoint written before the turn model: its own fields.
		var old legacyPosition
		if lerr := json.Unmarshal(b, &old); lerr != nil {
			if err == nil {
				err = lerr
			}
			return err
		}
		st = old.state()
	}
	*p = Position{cur: turnmodel.FromState(st)}
	return nil
}

// legacyPosition is the stored form of a position before the turn model
// (open turn and step, closed attempts, the step's calls by seq).
type legacyPosition struct {
	Turn        int64            `json:"turn"`
	Step        int64            `json:"step"`
	Attempts    int              `json:"attempts"`
	AttemptOpen bool             `json:"attempt_open"`
	Calls       map[int64]string `json:"calls"`
	Parent      string           `json:"parent"`
	SeedLength  int64            `json:"seed_length"`
}

func (o legacyPosition) state() turnmodel.State {
	st := turnmodel.State{Parent: o.Parent, SeedLength: o.SeedLength, Turn: o.Turn,
		LastClosed: max(o.Turn-1, 0), StepOpen: o.Step != 0, Step: o.Step}
	for i := 0; i < o.Attempts; i++ {
		st.Attempts = append(st.Attempts, turnmodel.AttemptState{First: -1, Last: -1, Closed: true})
	}
	if o.AttemptOpen {
		st.Attempts = append(st.Attempts, turnmodel.AttemptState{First: -1, Last: -1})
	}
	for seq, id := range o.Calls {
		st.Calls = append(st.Calls, turnmodel.Call{ID: id, Seq: seq, Step: o.Step})
		st.Started = append(st.Started, id)
	}
	slices.SortFunc(st.Calls, func(a, b turnmodel.Call) int { return cmp.Compare(a.Seq, b.Seq) })
	return st
}
