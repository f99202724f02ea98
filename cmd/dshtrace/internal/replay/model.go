package replay

import (
	"slices"

	"github.com/dshtrace/dshtrace/internal/findings"
	"github.com/dshtrace/dshtrace/internal/pricing"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// Page is what one input shows: its sessions, in the order they first
// appear (a file holds one; a live stream may interleave several).
type Page struct {
	// Name is the input's name, as given.
	Name string
	// NoContent: the page was built without any message or tool content
	// (Options.NoContent); none is held anywhere in it.
	NoContent bool
	Sessions  []*Session
	// Tail describes a torn tail the decoder left unread, if any.
	Tail string
	// rows keeps every row's bytes (none without content); problems are
	// the decoder's findings on the rows that have any (Row.problems).
	rows     rawRows
	problems [][]string
}

// Session is one session of the input.
type Session struct {
	ID string
	// Prefix starts every element id of the session on the page: "" for
	// the first session, "s2.", "s3.", … for the others, so that #turn-N,
	// #call-ID and #seq-N address the first session.
	Prefix string
	Header *sessionlog.Header
	// Format is the format as the decoder last inferred it.
	Format sessionlog.Format
	Agent  string
	// Models are the provider/model pairs that served its model calls, in
	// order of first use.
	Models []string
	// First and Last are the earliest and latest event times (Unix ms);
	// HasTimes is false for a session without events.
	First, Last int64
	HasTimes    bool
	Events      int
	Totals      Totals
	// Blocks are the session's turns and the stretches of rows between
	// them, in log order.
	Blocks []*Block
	Turns  []*Turn
	Rows   []*Row
	// Children are the sessions this one started (subagents), as the input
	// says it (a JSON-RPC subagent.started); Parent the one that started
	// it, when known.
	Children []Link
	Parent   *Link

	// msgs are the projected messages (the deriver's), each found from the
	// row holding its seq (Row.msg), else from msgOther (messages.go).
	msgs     []message
	msgOther map[int64]int32
	// cites are the sourceEventSeqs of each event that has them, as
	// ranges; citers those events' seqs, in order (Build's end sorts them).
	cites  map[int64][]Range
	citers []int64
	// rowOf finds the row holding each seq.
	rowOf seqIndex
	// callAt finds a call's element id by call id (the first call of that id).
	callAt map[string]string
	ids    map[string]int
}

// Totals sum a session's turns.
type Totals struct {
	Turns, Steps, ModelCalls, ToolCalls int
	Tokens                              turnengine.Tokens
	Cost                                pricing.Cost
	PricedCalls, UnpricedCalls          int
	// Reasons counts the turns by end reason (kind; "dangling" for those
	// dsh never closed).
	Reasons map[string]int
	// LastReason is the last turn's end reason.
	LastReason string
	// Findings counts the turns' findings by name (nil for none).
	Findings map[string]int
}

// Link names another session and, when known, the call that started it.
type Link struct {
	Session string
	// Call is the element id of the call on this page, or "".
	Call string
}

// Block is a turn, or a stretch of rows outside any turn: before a
// session's first turn or after its last (rows between two turns go with
// the second).
type Block struct {
	Turn *Turn
	// Rows are a gap's rows (a turn keeps its own).
	Rows []*Row
}

// Turn is one turn of a session.
type Turn struct {
	Number   int64
	Anchor   string
	StartSeq int64
	// EndSeq is the turn/end's seq, -1 for a dangling turn.
	EndSeq int64
	// StartTime and End are event times (Unix ms); End is the logged end
	// (a dangling turn's last event).
	StartTime, End int64
	// Reason is the turn/end reason; its Kind is "dangling" for a turn dsh
	// never closed, and DanglingCause says why the engine closed it.
	Reason        sessionlog.Reason
	DanglingCause string
	// Late is how a dangling turn ended after all (its turn/end came late).
	Late *turnengine.LateClose
	// LateReason is the late turn/end's reason, LateSeq its seq.
	LateReason sessionlog.Reason
	LateSeq    int64
	// Inherited: the turn is a fork's copy of its parent's turn; its trace
	// is the parent session's.
	Inherited bool
	// TraceID is the turn's trace (hex), "" when no collector emits one.
	TraceID string
	Steps   []*Step
	// Notes are the events of the turn outside any step.
	Notes []*Note
	// Rows are the turn's rows in log order, led by those written between
	// the previous turn and this one.
	Rows []*Row
	// Prompt is the seq of the turn's first user message, -1 when none.
	Prompt int64
	// Homes are the messages the turn shows in full.
	Homes []int64

	Usage                      turnengine.Tokens
	Cost                       pricing.Cost
	PricedCalls, UnpricedCalls int
	Clamped                    bool
	// Findings are what went wrong in the turn, as the turn engine found
	// it with the default thresholds (internal/findings); none for an
	// inherited turn.
	Findings []findings.Finding
	engine   bool // the engine closed it
}

// Dangling reports whether dsh never closed the turn (as the log stands).
func (t *Turn) Dangling() bool { return t.DanglingCause != "" }

// Step is one model request of a turn and the tool calls it asked for.
type Step struct {
	Number int64
	// Turn is the number of the step's turn.
	Turn     int64
	Anchor   string
	StartSeq int64
	// StartTime and EndTime are event times (Unix ms), clamped into the turn.
	StartTime, EndTime int64
	// Open: the step had no step/end.
	Open bool
	// Context is what the model saw when the step's model call began; nil
	// when the step made none.
	Context *Context
	// RequestSeq is the seq of the event that began the request (the
	// moment Context was taken).
	RequestSeq int64
	Attempts   []*Attempt
	Calls      []*Call
	Notes      []*Note
	// Header is the request/header in effect for the step's request.
	Header *RequestHeader
}

// Context is the history the model saw for a step's request (the
// projection `dshtrace derive --before-step` prints): the first Carried
// messages of the history Base saw, then Messages.
type Context struct {
	// Base is the earlier step whose history this one continues (nil: the
	// session's first request), by its anchor.
	Base     *Step
	Carried  int
	Messages []Msg
	// Home says, for each of Messages, whether the page shows it in full
	// here (its first appearance) rather than as a reference.
	Home []bool
	// Len is the whole history's length.
	Len int
}

// Msg is one message of the model-visible history (sessionlog.Message),
// with its content only when the page has content.
type Msg struct {
	Seq             int64
	Role            string
	Content         string
	ToolCallID      string
	IsError         bool
	Provider, Model string
}

// RequestHeader is a request/header: the request's configuration.
type RequestHeader struct {
	Seq             int64
	Provider, Model string
	// Tools are the names of the tools offered.
	Tools []string
	// System is the system prompt the header carries (v0–v2), "" when none
	// or without content.
	System    string
	HasSystem bool
}

// Attempt is one model call of a step.
type Attempt struct {
	*turnengine.Attempt
	// Sources are the committing message's cited seqs, as ranges.
	Sources []Range
}

// Call is a tool call and its result, paired by the turn model.
type Call struct {
	*turnengine.ToolCall
	Anchor string
	// CallSeq is the tool/call's seq (-1: none, a call known from its
	// result) and ResultSeq the tool/result's (-1: none yet).
	CallSeq, ResultSeq int64
	// Arguments are the call's arguments as logged (content).
	Arguments string
	// Error is a result's error detail (data.error), content mode only.
	Error string
	// Notes are the call's approvals.
	Notes []*Note
	Subs  []*Call
	// Child is the subagent session the call started, when known.
	Child *Link
}

// Duration is the call's latency in ms as logged; ok is false while the
// outcome is unknown or when there was no tool/call.
func (c *Call) Duration() (int64, bool) {
	if c.Outcome == "unknown" || c.NotStarted {
		return 0, false
	}
	return c.LoggedEndTime - c.LoggedStartTime, true
}

// Note is an event the page shows as one line: a request header, an
// approval, a hook, a retry, a compaction, a user message, a title.
type Note struct {
	Seq  int64
	Time int64
	Type string
	// Text says what happened without content (ids, names, outcomes,
	// codes); Detail adds the content (a reason, a title, a message), only
	// in content mode.
	Text, Detail string
	// Message is set for a note on a surface event: its seq (the page
	// shows the message in full where it first appears).
	Message int64
	// CallID puts the note on that call (an approval).
	CallID string
}

// Row is one physical row of the input. A long session has hundreds of
// thousands, so a row keeps what its line on the page says in few bytes
// (104, its fields ordered so): its element id and bytes are found from it
// (Session.rowID, rawRows), its problems are the page's (Page.problems).
type Row struct {
	Line int
	// Seq is the row's first event's seq, Time its time.
	Seq  int64
	Time int64
	Type string
	// Turn and Step say where the row belongs (0: outside any).
	Turn, Step int64
	// Message is the seq of the message the row's event projects (-1: none).
	Message int64
	// Call is the call the row belongs to (nil: none).
	Call *Call
	// raw finds the row's bytes as read (none without content).
	raw rawRef
	// Count is how many events the row stands for (packed rows); 0: a row
	// without events.
	Count int32
	// again numbers a row whose seq an earlier row had (a hostile log's
	// repeat): its element id is seq-N~again; 0 for the first.
	again int32
	// msg is the message of a seq the row holds (Session.msgs, from 1; 0:
	// none).
	msg int32
	// problems are the decoder's findings on the row (Page.problems, from
	// 1; 0: none).
	problems int32
	Kind     sessionlog.RowKind
}

// seqIndex finds the row holding a seq. A session's seqs are dense from
// its first, so it is a slice from there (a map for the seqs far from it, a
// hostile log's); the first row of a repeated seq stands.
type seqIndex struct {
	base  int64
	rows  []*Row
	other map[int64]*Row
}

// maxSeqSpan bounds the slice: seqs further than this from the first go to
// the map.
const maxSeqSpan = 1 << 26

// get is the row holding seq, nil when none.
func (x *seqIndex) get(seq int64) *Row {
	if i := seq - x.base; i >= 0 && i < int64(len(x.rows)) {
		return x.rows[i]
	}
	return x.other[seq]
}

// add records that row holds seq, unless a row already does.
func (x *seqIndex) add(seq int64, row *Row) {
	if x.rows == nil && x.other == nil {
		x.base = seq
	}
	i := seq - x.base
	if i < 0 || i >= maxSeqSpan {
		if x.other == nil {
			x.other = map[int64]*Row{}
		}
		if _, ok := x.other[seq]; !ok {
			x.other[seq] = row
		}
		return
	}
	if n := int(i) + 1; n > len(x.rows) {
		old := len(x.rows)
		x.rows = slices.Grow(x.rows, max(n-old, old/2))[:n] // by half again: a long session adds a seq at a time
		clear(x.rows[old:])
	}
	if x.rows[i] == nil {
		x.rows[i] = row
	}
}
