// Package logrecord is the log-record contract between the session_event
// receiver and the turn_state connector (docs/design.md §3): how a physical row of
// a session log becomes an OTLP log record, and how a record — ours, or one
// of dsh's own OTLP log export — becomes session events again.
package logrecord

import (
	"strings"
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/sessiontable"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
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

// Tracker follows, per session, where each event belongs — the turn
// model's cursor (sessionlog/turnmodel) — so each record carries the trace
// and span ids of the span its event belongs to: the ids the connector
// gives that span, since both ask the same cursor. Its memory is a few
// words per session plus the open step, bounded by MaxSessions (least
// recently used first out).
type Tracker struct {
	sessions *sessiontable.Table[*position]

	// last is the position found last: the rows of a batch come session
	// by session, so most lookups need no hashing.
	last *position
}

type position struct {
	cur   *turnmodel.Cursor
	cache idCache
	elem  *sessiontable.Elem[*position]
}

// NewTracker returns a Tracker remembering at most maxSessions sessions
// (sessiontable.DefaultMaxSessions when not positive).
func NewTracker(maxSessions int) *Tracker {
	return &Tracker{sessions: sessiontable.New[*position](maxSessions)}
}

func (t *Tracker) position(session string) *position {
	if p := t.last; p != nil && session == p.cur.Session() {
		t.sessions.Touch(p.elem)
		return p
	}
	p, ok := t.sessions.Get(session)
	if !ok {
		if t.sessions.Full() {
			id, _, _ := t.sessions.Oldest()
			t.sessions.Remove(id)
			t.last = nil
		}
		p = &position{cur: turnmodel.NewCursor(session)}
		p.elem = t.sessions.Add(p.cur.Session(), p) // kept: no view into a row
	}
	t.last = p
	return p
}

// NewResourceLogs appends a ResourceLogs for one session: its resource is
// exactly session.id plus the static attributes, identical whichever way
// the rows came in, so partitioning by resource keeps a session together.
// scope names the instrumentation scope: the component that reads the rows.
func NewResourceLogs(ld plog.Logs, scope, session string, static map[string]string) plog.LogRecordSlice {
	rl := ld.ResourceLogs().AppendEmpty()
	for k, v := range static {
		rl.Resource().Attributes().PutStr(k, v)
	}
	rl.Resource().Attributes().PutStr(AttrSessionID, session)
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(scope)
	return sl.LogRecords()
}

// Append adds the record of one physical row to lrs: a header record, or
// one event record (a packed row is one record standing for its members).
// Rows that carry no session event (status notifications, undecodable
// rows) add nothing; the caller decides what to do with them.
func (t *Tracker) Append(lrs plog.LogRecordSlice, session string, row *sessionlog.Row, f sessionlog.Format, observed time.Time) {
	switch row.Kind {
	case sessionlog.RowHeader:
		t.appendHeader(lrs, session, row, f, observed)
	case sessionlog.RowEvent, sessionlog.RowPacked:
		if len(row.Events) > 0 {
			t.appendEvent(lrs, session, row, f, observed)
		}
	}
}

// appendHeader adds a header row's record; a fork's header sets where the
// session's own events begin.
func (t *Tracker) appendHeader(lrs plog.LogRecordSlice, session string, row *sessionlog.Row, f sessionlog.Format, observed time.Time) {
	lr := lrs.AppendEmpty()
	lr.SetEventName(EventNameHeader)
	lr.SetTimestamp(pcommon.Timestamp(row.Header.CreatedAt * int64(time.Millisecond)))
	lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(observed))
	lr.Body().SetStr(rowString(row))
	lr.SetSeverityNumber(plog.SeverityNumberInfo)
	lr.SetSeverityText("INFO")
	a := lr.Attributes()
	a.PutStr(AttrSessionID, session)
	if row.Header.HasVersion || f.FromHeader {
		a.PutInt(AttrFormatVersion, int64(row.Header.Version))
	}
	if row.Header.HasSeedLength {
		t.position(session).cur.SetFork(row.Header.ParentSession, row.Header.SeedLength)
	}
}

// appendEvent adds an event row's record (a packed row is one record
// standing for its members), placed by the session's cursor.
func (t *Tracker) appendEvent(lrs plog.LogRecordSlice, session string, row *sessionlog.Row, f sessionlog.Format, observed time.Time) {
	p := t.position(session)
	first := &row.Events[0]
	lr := lrs.AppendEmpty()
	lr.SetEventName(EventNameEvent)
	lr.SetTimestamp(pcommon.Timestamp(first.Time * int64(time.Millisecond)))
	lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(observed))
	lr.Body().SetStr(rowString(row))
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
	openTurn := p.cur.OpenTurn()
	openStep, stepOpen := p.cur.OpenStep()
	var pl turnmodel.Place
	for i := range row.Events {
		m := row.Events[i].TurnModel(f)
		pl = p.cur.Advance(&m)
	}
	putPlace(a, row, first, pl, openTurn, openStep, stepOpen)
	trace, span := p.ids(pl)
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

// putPlace puts the turn, step and tool call id of an event record: those
// the event names, else the turn and step open before it (openTurn,
// openStep); the call id of its tool span (a dispatch's own sub-call id).
func putPlace(a pcommon.Map, row *sessionlog.Row, first *sessionlog.Event, pl turnmodel.Place, openTurn, openStep int64, stepOpen bool) {
	if first.HasTurn {
		a.PutInt(AttrTurn, first.Turn)
	} else if openTurn != 0 {
		a.PutInt(AttrTurn, openTurn)
	}
	if first.HasStep {
		a.PutInt(AttrStep, first.Step)
	} else if stepOpen && !first.HasTurn {
		a.PutInt(AttrStep, openStep)
	}
	if pl.Kind == turnmodel.KindTool && pl.Spanned() && row.Kind == sessionlog.RowEvent {
		if id := pl.CallID; pl.SubCallID != "" {
			a.PutStr(AttrToolCallID, pl.SubCallID)
		} else if id != "" {
			a.PutStr(AttrToolCallID, id)
		}
	} else if first.CallID != "" && (first.Type == "tool/call" || first.Type == "tool/result") {
		a.PutStr(AttrToolCallID, first.CallID)
	}
}

// rowString is the row's bytes as the record's body string, without a
// copy: a decoded Row owns its Bytes and nothing writes to them (sessionlog
// Row), so the string may alias them. The caller hands the row over with
// the record.
func rowString(row *sessionlog.Row) string {
	return unsafe.String(unsafe.SliceData(row.Bytes), len(row.Bytes))
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
	if first.HasTurn || p.cur.OpenTurn() != 0 || first.Type == "turn/start" {
		n++
	}
	if _, open := p.cur.OpenStep(); first.HasStep || open || first.Type == "step/start" {
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

// idCache holds the ids last computed for a session: records in a row
// mostly share their turn's trace and often their span, and each id is a
// SHA-256.
type idCache struct {
	valid bool
	place turnmodel.Place
	trace pcommon.TraceID
	span  pcommon.SpanID
}

// ids are the trace and span ids of the span an event was placed in.
func (p *position) ids(pl turnmodel.Place) (pcommon.TraceID, pcommon.SpanID) {
	if !pl.Spanned() {
		return pcommon.TraceID{}, pcommon.SpanID{}
	}
	key := idKey(pl)
	c := &p.cache
	if !c.valid || c.place != key {
		// The trace id is the session's and turn's: hashed again only
		// when one of them changes.
		if !c.valid || c.place.Session != key.Session || c.place.Turn != key.Turn {
			tr, sp := pl.IDs()
			c.trace, c.span = pcommon.TraceID(tr), pcommon.SpanID(sp)
		} else {
			c.span = pcommon.SpanID(pl.SpanID())
		}
		// Kept past the row: copies, not views into it (the session's
		// copy kept while it stays the same).
		if !c.valid || c.place.Session != key.Session {
			key.Session = strings.Clone(key.Session)
		} else {
			key.Session = c.place.Session
		}
		key.CallID, key.SubCallID = strings.Clone(key.CallID), strings.Clone(key.SubCallID)
		c.place, c.valid = key, true
	}
	return c.trace, c.span
}

// idKey is the part of a place its ids depend on.
func idKey(pl turnmodel.Place) turnmodel.Place {
	return turnmodel.Place{Kind: pl.Kind, Session: pl.Session, Turn: pl.Turn, Step: pl.Step,
		Attempt: pl.Attempt, CallID: pl.CallID, SubCallID: pl.SubCallID}
}
