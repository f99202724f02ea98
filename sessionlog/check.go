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
	// Reason is the TurnEndReason kind, or "dangling" for a turn the log
	// never ends (the turn engine closes it as dangling, cause
	// end_of_input).
	Reason string `json:"reason"`
	Steps  int    `json:"steps"`
	// ToolCalls are the callIds of the turn's tool/call events, in order.
	ToolCalls []string `json:"tool_calls"`
	// StartSeq is the seq of the turn's turn/start.
	StartSeq int64 `json:"-"`
}

// Report is the result of checking one input.
type Report struct {
	Format Format
	Header *Header
	Rows   int
	Events int
	Turns  []TurnSummary
	// DanglingTurns are the turns the log never ends.
	DanglingTurns []int64
	Violations    []Violation
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
	c := checker{rep: &Report{}, sessions: map[string]*checkedSession{}}
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return c.rep, err
		}
		c.row(row, dec.Format())
	}
	c.finish(dec)
	return c.rep, nil
}

// checker is what Check keeps while it reads: the report so far and a
// validator per session, in the order the sessions came.
type checker struct {
	rep      *Report
	sessions map[string]*checkedSession
	order    []string
}

// checkedSession is one session of a checked input.
type checkedSession struct {
	v    *Validator
	turn int // index into Report.Turns of the open turn, -1 if none
}

// row validates a row, decoded under format f, in its session's validator
// and adds its events to the summary of the session's turns.
func (c *checker) row(row *Row, f Format) {
	c.rep.Rows++
	id := row.SessionID
	if row.Kind == RowHeader || row.Wrapper == WrapNone {
		id = "" // a file is one session, whatever its header says
	}
	s := c.sessions[id]
	if s == nil {
		s = &checkedSession{v: NewValidator(), turn: -1}
		c.sessions[id] = s
		c.order = append(c.order, id)
	}
	c.rep.Violations = append(c.rep.Violations, s.v.Row(row, f)...)
	for i := range row.Events {
		c.rep.Events++
		c.summarize(s, id, &row.Events[i])
	}
}

// summarize adds an event of session id to the summary of its turn.
func (c *checker) summarize(s *checkedSession, id string, e *Event) {
	turns := c.rep.Turns
	switch e.Type {
	case "turn/start":
		c.rep.Turns = append(turns, TurnSummary{Session: id, Turn: e.Turn, Reason: "dangling", ToolCalls: []string{}, StartSeq: e.Seq})
		s.turn = len(c.rep.Turns) - 1
	case "step/start":
		if s.turn >= 0 {
			turns[s.turn].Steps++
		}
	case "tool/call":
		if s.turn >= 0 {
			turns[s.turn].ToolCalls = append(turns[s.turn].ToolCalls, e.CallID)
		}
	case "turn/end":
		if s.turn >= 0 && turns[s.turn].Turn == e.Turn {
			turns[s.turn].Reason = e.Reason.Kind
		}
		s.turn = -1
	}
}

// finish completes the report at the end of the input: what the decoder
// learnt of it, and what each session's validator judges at the end.
func (c *checker) finish(dec *Decoder) {
	c.rep.Format = dec.Format()
	c.rep.Header = dec.Header()
	c.rep.Tail = dec.Tail()
	for _, id := range c.order {
		s := c.sessions[id]
		c.rep.Violations = append(c.rep.Violations, s.v.Finish(c.rep.Format)...)
		if s.turn >= 0 {
			c.rep.DanglingTurns = append(c.rep.DanglingTurns, c.rep.Turns[s.turn].Turn)
		}
	}
}
