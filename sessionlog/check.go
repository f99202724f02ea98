package sessionlog

import (
	"errors"
	"io"
)

// TurnSummary is one turn of a checked log.
type TurnSummary struct {
	// Session is the session id when the input names one.
	Session string `json:"session,omitempty"`
	Turn    int64  `json:"turn"`
	// Reason is the TurnEndReason kind, or "open" for a turn with no turn/end.
	Reason string `json:"reason"`
	Steps  int    `json:"steps"`
	// ToolCalls are the callIds of the turn's tool/call events, in order.
	ToolCalls []string `json:"tool_calls"`
	// StartSeq is the seq of the turn's turn/start.
	StartSeq int64 `json:"-"`
}

// Report is the result of checking one input.
type Report struct {
	Format     Format
	Header     *Header
	Rows       int
	Events     int
	Turns      []TurnSummary
	OpenTurns  []int64
	Violations []Violation
	// Tail is the torn tail, if the input ends with one.
	Tail *Tail
}

// Check reads a whole log, validates it and summarizes its turns. Rows of
// several sessions (wrapped lines) are validated per session. The error is
// non-nil only when the input cannot be read at all: an I/O error,
// *CorruptError or *UnsupportedVersionError.
func Check(r io.Reader, opts Options) (*Report, error) {
	dec, err := NewDecoder(r, opts)
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	rep := &Report{}
	type session struct {
		v    *Validator
		turn int // index into rep.Turns of the open turn, -1 if none
	}
	sessions := map[string]*session{}
	var order []string
	get := func(id string) *session {
		s := sessions[id]
		if s == nil {
			s = &session{v: NewValidator(), turn: -1}
			sessions[id] = s
			order = append(order, id)
		}
		return s
	}
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rep, err
		}
		rep.Rows++
		id := row.SessionID
		if row.Kind == RowHeader || row.Wrapper == WrapNone {
			id = "" // a file is one session, whatever its header says
		}
		s := get(id)
		f := dec.Format()
		rep.Violations = append(rep.Violations, s.v.Row(row, f)...)
		for i := range row.Events {
			e := &row.Events[i]
			rep.Events++
			switch e.Type {
			case "turn/start":
				rep.Turns = append(rep.Turns, TurnSummary{Session: id, Turn: e.Turn, Reason: "open", ToolCalls: []string{}, StartSeq: e.Seq})
				s.turn = len(rep.Turns) - 1
			case "step/start":
				if s.turn >= 0 {
					rep.Turns[s.turn].Steps++
				}
			case "tool/call":
				if s.turn >= 0 {
					rep.Turns[s.turn].ToolCalls = append(rep.Turns[s.turn].ToolCalls, e.CallID)
				}
			case "turn/end":
				if s.turn >= 0 && rep.Turns[s.turn].Turn == e.Turn {
					rep.Turns[s.turn].Reason = e.Reason.Kind
				}
				s.turn = -1
			}
		}
	}
	rep.Format = dec.Format()
	rep.Header = dec.Header()
	rep.Tail = dec.Tail()
	for _, id := range order {
		s := sessions[id]
		rep.Violations = append(rep.Violations, s.v.Finish(rep.Format)...)
		if s.turn >= 0 {
			rep.OpenTurns = append(rep.OpenTurns, rep.Turns[s.turn].Turn)
		}
	}
	return rep, nil
}
