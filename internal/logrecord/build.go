// Package logrecord is the log-record contract between the session_event
// receiver and the turn_state connector (docs/design.md §3): how a physical row of
// a session log becomes an OTLP log record, and how a record — ours, or one
// of dsh's own OTLP log export — becomes session events again.
package logrecord

import (
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/placement"
	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// Event names of the records.
const (
	EventNameEvent  = "dsh.session.event"
	EventNameHeader = "dsh.session.header"
)

// Attribute keys of the records: the record contract's names for keys of
// the one key table (internal/semconv). The placement attributes (dsh.turn,
// dsh.step, gen_ai.tool.call.id, dsh.tool.parent_call_id) are stamped by
// internal/placement under semconv's names.
const (
	AttrSessionID     = semconv.SessionID
	AttrEventType     = semconv.EventType
	AttrEventSeq      = semconv.EventSeq
	AttrEventCount    = semconv.DshEventCount
	AttrFormatVersion = semconv.DshSessionFormatVersion
)

// Tracker builds the records of a receiver's rows, each placed by the one
// placement of events (internal/placement): it carries the trace and span
// ids of the span its event belongs to — the ids the connector gives that
// span, since both ask the same cursor — and that span's placement
// attributes. Its memory is a few words per session plus the open step,
// within the bounds it is given (least recently active session first out).
type Tracker struct {
	table *placement.Table
}

// NewTracker returns a Tracker placing events within bounds b (a bound
// that is not positive takes its default).
func NewTracker(b turnmodel.Bounds) *Tracker {
	return &Tracker{table: placement.New(b)}
}

// NewResourceLogs appends a ResourceLogs for one session (its key,
// clientid.Key): its resource is exactly session.id (and enduser.id) plus
// the static attributes, identical whichever way
// the rows came in, so partitioning by resource keeps a session together.
// scope names the instrumentation scope: the component that reads the rows.
func NewResourceLogs(ld plog.Logs, scope, session string, static map[string]string) plog.LogRecordSlice {
	rl := ld.ResourceLogs().AppendEmpty()
	for k, v := range static {
		rl.Resource().Attributes().PutStr(k, v)
	}
	PutSession(rl.Resource().Attributes(), session)
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(scope)
	return sl.LogRecords()
}

// PutSession puts a session's attributes for its key (clientid.Key):
// session.id, and enduser.id when a client wrote it.
func PutSession(a pcommon.Map, key string) {
	client, id := clientid.Split(key)
	a.PutStr(AttrSessionID, id)
	if client != "" {
		a.PutStr(semconv.EnduserID, client)
	}
}

// Append adds the record of one physical row to lrs: a header record, or
// one event record (a packed row is one record standing for its members).
// Rows that carry no session event (status notifications, undecodable
// rows) add nothing; the caller decides what to do with them. observed is
// when the row arrived, the arrival time of the placement's bounds; a zero
// observed replays a row already delivered.
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
	PutSession(a, session)
	if row.Header.HasVersion || f.FromHeader {
		a.PutInt(AttrFormatVersion, int64(row.Header.Version))
	}
	if row.Header.HasSeedLength {
		s, _ := t.table.Session(session, observed)
		s.SetFork(clientid.Sibling(session, row.Header.ParentSession), row.Header.SeedLength)
	}
}

// appendEvent adds an event row's record, placed after all its members:
// a packed row's record carries the place of its last member (the
// members of a packed row share their span).
func (t *Tracker) appendEvent(lrs plog.LogRecordSlice, session string, row *sessionlog.Row, f sessionlog.Format, observed time.Time) {
	s, _ := t.table.Session(session, observed)
	var pl turnmodel.Place
	for i := range row.Events {
		pl = t.table.Advance(s, &row.Events[i], f)
	}
	first := &row.Events[0]
	lr := lrs.AppendEmpty()
	lr.SetEventName(EventNameEvent)
	lr.SetTimestamp(pcommon.Timestamp(first.Time * int64(time.Millisecond)))
	lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(observed))
	lr.Body().SetStr(rowString(row))
	a := lr.Attributes()
	a.EnsureCapacity(eventAttrCount(row, f) + placement.AttrCount(pl) + 1) // one allocation, no regrowth
	PutSession(a, session)
	a.PutStr(AttrEventType, first.Type)
	a.PutInt(AttrEventSeq, first.Seq)
	if row.Kind == sessionlog.RowPacked {
		a.PutInt(AttrEventCount, int64(len(row.Events)))
	}
	if f.Known && !f.Seed {
		a.PutInt(AttrFormatVersion, int64(f.Version))
	}
	s.Stamp(lr, pl)
	if severe(first) {
		lr.SetSeverityNumber(plog.SeverityNumberError)
		lr.SetSeverityText("ERROR")
	} else {
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
		lr.SetSeverityText("INFO")
	}
}

// rowString is the row's bytes as the record's body string, without a
// copy: a decoded Row owns its Bytes and nothing writes to them (sessionlog
// Row), so the string may alias them. The caller hands the row over with
// the record.
func rowString(row *sessionlog.Row) string {
	return unsafe.String(unsafe.SliceData(row.Bytes), len(row.Bytes))
}

// eventAttrCount is the number of attributes appendEvent puts on an event
// record before its placement: session.id, event.type and event.seq
// always, the count of a packed row, the format version when known.
func eventAttrCount(row *sessionlog.Row, f sessionlog.Format) int {
	n := 3
	if row.Kind == sessionlog.RowPacked {
		n++
	}
	if f.Known && !f.Seed {
		n++
	}
	return n
}

// severe: a turn ending in error or a failed tool result.
func severe(e *sessionlog.Event) bool {
	return e.Type == "turn/end" && e.Reason.Kind == "error" || e.Type == "tool/result" && e.IsError
}
