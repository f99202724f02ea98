package sessionlog

import (
	"fmt"

	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// Validator checks the invariants of one session's log (docs/format.md §11):
// dense seqs, the turn/step state machine, tool calls resolved in their
// step, surface operations valid on the current surface. Feed it every row
// of the session in order; it keeps only the open state (the open turn and
// step, the step's calls, the surface's seqs), never the log.
//
// A turn still open at the end is not a violation: a live session's file
// ends that way. OpenTurn reports it.
type Validator struct {
	header *Header

	started  bool
	lastSeq  int64
	resync   bool // the previous row was undecodable: take the next seq as is
	joinedAt int64

	openTurn, openStep int64 // 0: none
	nextTurn, nextStep int64
	turnSeen           bool

	// Tool state of the open step.
	advertised []advertisedCall
	pending    turnmodel.Calls

	surface []int64

	// gaps are seq gaps inside the open step, held until an assistant/message
	// of the step cites every missing seq (an elided chunk run, as dsh's
	// snapshot writer leaves) or the step closes (then they are reported).
	gaps []seqGap

	taggedEndSeed bool
	noSurface     bool
}

// NewValidator returns a Validator for one session.
func NewValidator() *Validator {
	return &Validator{lastSeq: -1, nextTurn: 1, nextStep: 1}
}

// TrackSurface turns surface tracking on (the default) or off. Off, the
// validator holds nothing that grows with the log — replace ranges are then
// not checked — which is what a long-running pipeline wants.
func (v *Validator) TrackSurface(on bool) { v.noSurface = !on }

// OpenTurn is the turn still open after the rows fed so far (0: none).
func (v *Validator) OpenTurn() int64 { return v.openTurn }

// OpenStep is the step still open (0: none).
func (v *Validator) OpenStep() int64 { return v.openStep }

// seqGap is a gap in the seqs, before the event at seq.
type seqGap struct {
	line          int
	seq, from, to int64 // the event's seq; the missing seqs from..to
	prev          int64
}

// advertisedCall is a tool call an open step's assistant/message asked
// for. Its id and name are copies and its arguments only a hash: an event's
// strings are views into its row, and holding them would keep the whole
// assistant/message row alive while the step is open.
type advertisedCall struct {
	ID, Name          string
	args              uint64 // maphash of the arguments
	started, resolved bool
}

// violation appends the violation of e that code names, its message made
// of format and args.
func violation(out []Violation, e *Event, code, format string, args ...any) []Violation {
	return append(out, Violation{Line: e.Row.Line, Seq: e.Seq, Code: code, Message: fmt.Sprintf(format, args...)})
}
