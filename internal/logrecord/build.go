// Package logrecord is the log-record contract between the session_event
// receiver and the turn_state connector (docs/design.md §3): how a physical row of
// a session log becomes an OTLP log record, and how a record — ours, or one
// of dsh's own OTLP log export — becomes session events again.
package logrecord

import (
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// Event names of the records.
const (
	EventNameEvent  = "dsh.session.event"
	EventNameHeader = "dsh.session.header"
)

// Attribute keys of the records.
const (
	AttrSessionID     = "session.id"
	AttrEventType     = "event.type"
	AttrEventSeq      = "event.seq"
	AttrEventCount    = "dsh.event.count"
	AttrTurn          = "dsh.turn"
	AttrStep          = "dsh.step"
	AttrToolCallID    = "gen_ai.tool.call.id"
	AttrFormatVersion = "dsh.session.format_version"
)

// Tracker follows, per session, which turn, step and model attempt is open,
// so each record can carry the trace and span ids of the span its event
// will belong to — the same ids the connector computes. Its memory is a few
// words per session, bounded by MaxSessions (least recently used first out).
type Tracker struct {
	max      int
	sessions map[string]*position
	order    []string // insertion order, for a cheap bound
}

type position struct {
	turn, step  int64
	attempts    int  // attempts closed in the open step
	attemptOpen bool // a v0 chunk run without its finish yet
	// calls maps the open step's tool/call seqs to their callIds, for
	// results that name their call only by citing it (seed dialect).
	calls map[int64]string
	// A fork's inherited events (seq < seedLength) are its parent's: their
	// records name the parent session's spans.
	parent     string
	seedLength int64

	cache idCache
}

// NewTracker returns a Tracker remembering at most maxSessions sessions.
func NewTracker(maxSessions int) *Tracker {
	if maxSessions <= 0 {
		maxSessions = turnengine.DefaultMaxSessions
	}
	return &Tracker{max: maxSessions, sessions: map[string]*position{}}
}

func (t *Tracker) position(session string) *position {
	p := t.sessions[session]
	if p == nil {
		if len(t.sessions) >= t.max {
			// Forget the oldest half at once: amortized O(1) per session.
			drop := t.order[:len(t.order)/2]
			for _, id := range drop {
				delete(t.sessions, id)
			}
			t.order = append([]string(nil), t.order[len(drop):]...)
		}
		p = &position{calls: map[int64]string{}}
		session = strings.Clone(session) // kept: no view into a row
		t.sessions[session] = p
		t.order = append(t.order, session)
	}
	return p
}

// NewResourceLogs appends a ResourceLogs for one session: its resource is
// exactly session.id plus the static attributes, identical whichever way
// the rows came in, so partitioning by resource keeps a session together.
func NewResourceLogs(ld plog.Logs, session string, static map[string]string) plog.LogRecordSlice {
	rl := ld.ResourceLogs().AppendEmpty()
	for k, v := range static {
		rl.Resource().Attributes().PutStr(k, v)
	}
	rl.Resource().Attributes().PutStr(AttrSessionID, session)
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(ScopeName)
	return sl.LogRecords()
}

// ScopeName is the instrumentation scope of the receiver's records.
const ScopeName = "github.com/dshtrace/dshtrace/receiver/sessionevent"

// Append adds the record of one physical row to lrs: a header record, or
// one event record (a packed row is one record standing for its members).
// Rows that carry no session event (status notifications, undecodable
// rows) add nothing; the caller decides what to do with them.
func (t *Tracker) Append(lrs plog.LogRecordSlice, session string, row *sessionlog.Row, f sessionlog.Format, observed time.Time) {
	switch row.Kind {
	case sessionlog.RowHeader:
		lr := lrs.AppendEmpty()
		lr.SetEventName(EventNameHeader)
		lr.SetTimestamp(pcommon.Timestamp(row.Header.CreatedAt * int64(time.Millisecond)))
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(observed))
		lr.Body().SetStr(string(row.Bytes))
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
		lr.SetSeverityText("INFO")
		a := lr.Attributes()
		a.PutStr(AttrSessionID, session)
		if row.Header.HasVersion || f.FromHeader {
			a.PutInt(AttrFormatVersion, int64(row.Header.Version))
		}
		if row.Header.HasSeedLength && row.Header.ParentSession != "" {
			p := t.position(session)
			p.parent, p.seedLength = row.Header.ParentSession, row.Header.SeedLength
		}
	case sessionlog.RowEvent, sessionlog.RowPacked:
		if len(row.Events) == 0 {
			return
		}
		p := t.position(session)
		first := &row.Events[0]
		lr := lrs.AppendEmpty()
		lr.SetEventName(EventNameEvent)
		lr.SetTimestamp(pcommon.Timestamp(first.Time * int64(time.Millisecond)))
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(observed))
		lr.Body().SetStr(string(row.Bytes))
		a := lr.Attributes()
		a.EnsureCapacity(eventAttrCount(row, first, p, f)) // one allocation, no regrowth
		a.PutStr(AttrSessionID, session)
		a.PutStr(AttrEventType, first.Type)
		a.PutInt(AttrEventSeq, first.Seq)
		if row.Kind == sessionlog.RowPacked {
			a.PutInt(AttrEventCount, int64(len(row.Events)))
		}
		if f.Known && !f.Seed {
			a.PutInt(AttrFormatVersion, int64(f.Version))
		}
		// Every member moves the position; the record carries the ids of
		// the last one's span (a packed row's members share theirs).
		var ref spanRef
		for i := range row.Events {
			ref = p.advance(session, &row.Events[i])
		}
		trace, span := p.ids(ref)
		if first.HasTurn {
			a.PutInt(AttrTurn, first.Turn)
		} else if p.turn != 0 {
			a.PutInt(AttrTurn, p.turn)
		}
		if first.HasStep {
			a.PutInt(AttrStep, first.Step)
		} else if p.step != 0 && !first.HasTurn {
			a.PutInt(AttrStep, p.step)
		}
		if first.CallID != "" && (first.Type == "tool/call" || first.Type == "tool/result" ||
			first.Type == "tool/ptc-dispatch-start" || first.Type == "tool/ptc-dispatch" ||
			first.Type == "tool/code-dispatch-start" || first.Type == "tool/code-dispatch") {
			a.PutStr(AttrToolCallID, first.CallID)
		}
		lr.SetTraceID(trace)
		lr.SetSpanID(span)
		if severe(first) {
			lr.SetSeverityNumber(plog.SeverityNumberError)
			lr.SetSeverityText("ERROR")
		} else {
			lr.SetSeverityNumber(plog.SeverityNumberInfo)
			lr.SetSeverityText("INFO")
		}
	}
}

// eventAttrCount is the number of attributes Append puts on an event
// record, counted before the position moves (an over-count only wastes a
// slot): session.id, event.type and event.seq always, the rest when known.
func eventAttrCount(row *sessionlog.Row, first *sessionlog.Event, p *position, f sessionlog.Format) int {
	n := 3
	if row.Kind == sessionlog.RowPacked {
		n++
	}
	if f.Known && !f.Seed {
		n++
	}
	if first.HasTurn || p.turn != 0 || first.Type == "turn/start" {
		n++
	}
	if first.HasStep || p.step != 0 || first.Type == "step/start" {
		n++
	}
	if first.CallID != "" {
		n++
	}
	return n
}

// severe: a turn ending in error or a failed tool result.
func severe(e *sessionlog.Event) bool {
	return e.Type == "turn/end" && e.Reason.Kind == "error" || e.Type == "tool/result" && e.IsError
}

// spanKind says which span an event belongs to.
type spanKind uint8

const (
	spanNone spanKind = iota // between turns
	spanTurn
	spanStep
	spanChat
	spanTool
)

// spanRef names the span an event belongs to: its key, not yet hashed.
type spanRef struct {
	kind              spanKind
	session           string
	traceTurn         int64 // the open turn: the trace
	turn, step        int64 // the span's key
	attempt           int
	callID, subCallID string
}

// idCache holds the ids last computed for a session: records in a row
// mostly share their turn's trace and often their span, and each id is a
// SHA-256.
type idCache struct {
	traceSession string
	traceTurn    int64
	trace        pcommon.TraceID
	span         pcommon.SpanID
	spanRef      spanRef
}

// ids resolves a span reference to the trace and span ids of the connector.
func (p *position) ids(r spanRef) (pcommon.TraceID, pcommon.SpanID) {
	if r.kind == spanNone {
		return pcommon.TraceID{}, pcommon.SpanID{}
	}
	c := &p.cache
	if c.trace.IsEmpty() || c.traceTurn != r.traceTurn || c.traceSession != r.session {
		c.trace = turnengine.TraceID(r.session, r.traceTurn)
		c.traceSession, c.traceTurn = strings.Clone(r.session), r.traceTurn
	}
	if c.span.IsEmpty() || c.spanRef != r {
		switch r.kind {
		case spanTurn:
			c.span = turnengine.TurnSpanID(r.session, r.turn)
		case spanStep:
			c.span = turnengine.StepSpanID(r.session, r.turn, r.step)
		case spanChat:
			c.span = turnengine.ChatSpanID(r.session, r.turn, r.step, r.attempt)
		case spanTool:
			c.span = turnengine.ToolSpanID(r.session, r.turn, r.step, r.callID, r.subCallID)
		}
		// Kept past the row: copies, not views into it.
		r.session, r.callID, r.subCallID = c.traceSession, strings.Clone(r.callID), strings.Clone(r.subCallID)
		c.spanRef = r
	}
	return c.trace, c.span
}

// advance moves the session's position past one event and returns the
// span the event belongs to (none between turns).
func (p *position) advance(session string, e *sessionlog.Event) spanRef {
	if e.Seq < p.seedLength {
		session = p.parent
	}
	switch e.Type {
	case "turn/start":
		p.turn, p.step = e.Turn, 0
	case "step/start":
		p.step, p.attempts, p.attemptOpen = e.Step, 0, false
		clear(p.calls)
	}
	if p.turn == 0 {
		return spanRef{}
	}
	turn := spanRef{kind: spanTurn, session: session, traceTurn: p.turn, turn: p.turn}
	switch e.Type {
	case "turn/end":
		p.turn, p.step = 0, 0
		return turn
	case "step/end":
		s := p.step
		p.step = 0
		// The open turn's trace; the step span as the event names its turn.
		return spanRef{kind: spanStep, session: session, traceTurn: turn.traceTurn, turn: e.Turn, step: s}
	}
	if p.step == 0 {
		return turn
	}
	step := spanRef{kind: spanStep, session: session, traceTurn: p.turn, turn: p.turn, step: p.step}
	chat := func(attempt int) spanRef {
		return spanRef{kind: spanChat, session: session, traceTurn: p.turn, turn: p.turn, step: p.step, attempt: attempt}
	}
	switch e.Type {
	case "assistant/chunk":
		if !p.attemptOpen {
			p.attemptOpen = true
		}
		idx := p.attempts + 1
		if e.Chunk != nil && e.Chunk.Type == "finish" {
			p.attempts++
			p.attemptOpen = false
		}
		return chat(idx)
	case "assistant/attempt":
		p.attempts++
		return chat(p.attempts)
	case "assistant/message":
		idx := p.attempts + 1
		if !p.attemptOpen && p.attempts > 0 && e.Stream == nil {
			idx = p.attempts // commits the attempt its finish chunk closed
		} else {
			p.attempts++
		}
		p.attemptOpen = false
		return chat(idx)
	case "tool/call", "tool/result":
		id := e.CallID
		if e.Type == "tool/call" {
			p.calls[e.Seq] = strings.Clone(id) // kept past the row
		} else if id == "" && len(e.Sources) > 0 {
			id = p.calls[e.Sources[0]]
		}
		if id != "" {
			return spanRef{kind: spanTool, session: session, traceTurn: p.turn, turn: p.turn, step: p.step, callID: id}
		}
	case "tool/ptc-dispatch-start", "tool/ptc-dispatch", "tool/code-dispatch-start", "tool/code-dispatch":
		return spanRef{kind: spanTool, session: session, traceTurn: p.turn, turn: p.turn, step: p.step, callID: e.CallID, subCallID: e.SubCallID}
	}
	return step
}
