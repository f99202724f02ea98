package turnstate

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/metric"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/placement"
	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/processor/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// stamper is the processor's state: the placement of the sessions' events
// (internal/placement), bounded as the connector's engine bounds its
// sessions (max_sessions, max_open_turns, dangling_timeout), so both close
// the same turns and place the same events in the same spans.
type stamper struct {
	tel   *metadata.Telemetry
	clock func() time.Time

	mu     sync.Mutex // guards everything below; a batch is placed under it
	reader *logrecord.Reader
	table  *placement.Table
	// tracked is table.Len(), for the gauge without the lock.
	tracked atomic.Int64
}

func newStamper(cfg *Config, set component.TelemetrySettings, clock func() time.Time) (*stamper, error) {
	p := &stamper{
		clock:  clock,
		reader: logrecord.NewReader(cfg.MaxSessions),
		table:  placement.New(cfg.bounds()),
	}
	p.reader.SetShallow(true) // the stamper only places events
	tel, err := metadata.NewTelemetry(set, p.sessionsTracked)
	if err != nil {
		return nil, err
	}
	p.tel = tel
	return p, nil
}

func (p *stamper) sessionsTracked() int64 {
	return p.tracked.Load()
}

func (p *stamper) shutdown(context.Context) error { return p.tel.Shutdown() }

// slot is one session-event record of a batch and where its events went.
type slot struct {
	lr      plog.LogRecord
	key     string // its session's key (clientid.Key)
	session *placement.Session
	applied bool
	place   turnmodel.Place
}

// item is one event of a batch, in its session's group.
type item struct {
	slot   int
	event  *sessionlog.Event
	format sessionlog.Format
	header *sessionlog.Header
}

type group struct {
	id    string
	items []item
}

// counts are one batch's outcomes, recorded after the lock is released.
type counts struct {
	stamped, passed, unplaced, duplicate, invalid, evicted int64
}

// processLogs stamps the session-event records of ld in place. It never
// fails: a record it cannot place goes on as it came.
func (p *stamper) processLogs(ctx context.Context, ld plog.Logs) (plog.Logs, error) {
	var n counts
	p.mu.Lock()
	now := p.clock()
	// The sessions of records that name no client are the request's
	// client's (an authenticated OTLP receiver's context).
	p.reader.SetClient(logrecord.ClientFromContext(ctx))
	slots, groups := p.read(ld, &n)
	for _, g := range groups {
		p.place(g, slots, now, &n)
	}
	for i := range slots {
		p.stamp(&slots[i], &n)
	}
	p.tracked.Store(int64(p.table.Len()))
	p.mu.Unlock()

	record(ctx, p.tel, n)
	return ld, nil
}

// read decodes the batch's records. Headers are read first, as the
// connector does: a header fixes the format its session's rows decode in
// and may come after them in a batch. Events are grouped by session, in
// the order their sessions first appear.
func (p *stamper) read(ld plog.Logs, n *counts) ([]slot, []*group) {
	var slots []slot
	var groups []*group
	bySession := map[string]*group{}
	p.reader.ReadBatch(ld, func(_ pcommon.Resource, lr plog.LogRecord, rec logrecord.Record, err error) {
		switch {
		case errors.Is(err, logrecord.ErrNotSession):
			n.passed++
			return
		case err != nil:
			n.invalid++
			return
		}
		switch rec.Row.Kind {
		case sessionlog.RowInvalid:
			n.invalid++
			return
		case sessionlog.RowOther:
			// A dsh status row: no session event.
			n.passed++
			return
		case sessionlog.RowHeader:
			// The reader keeps it for the session's events.
			n.unplaced++
			return
		}
		if len(rec.Row.Events) == 0 {
			n.unplaced++
			return
		}
		g := bySession[rec.SessionID]
		if g == nil {
			g = &group{id: rec.SessionID}
			bySession[rec.SessionID] = g
			groups = append(groups, g)
		}
		slots = append(slots, slot{lr: lr, key: rec.SessionID})
		for e := range rec.Row.Events {
			g.items = append(g.items, item{slot: len(slots) - 1, event: &rec.Row.Events[e],
				format: rec.Format, header: rec.Header})
		}
	})
	return slots, groups
}

// place moves a session's cursor over the batch's events of that session,
// in seq order, and notes in each record's slot where its last applied
// event went. An event whose seq is not after the last one placed is a
// duplicate (a redelivery, or behind a later event already placed).
func (p *stamper) place(g *group, slots []slot, now time.Time, n *counts) {
	s, evicted := p.table.Session(g.id, now)
	if evicted {
		n.evicted++
	}
	bySeq := func(a, b item) int { return cmp.Compare(a.event.Seq, b.event.Seq) }
	if !slices.IsSortedFunc(g.items, bySeq) { // the common case: a source in order
		slices.SortStableFunc(g.items, bySeq)
	}
	for _, it := range g.items {
		sl := &slots[it.slot]
		sl.session = s
		if h := it.header; h != nil && h.HasSeedLength {
			s.SetFork(clientid.Sibling(g.id, h.ParentSession), h.SeedLength)
		}
		ev := it.event
		if last, ok := s.LastSeq(); ok && ev.Seq <= last {
			continue
		}
		sl.applied, sl.place = true, p.table.Advance(s, ev, it.format)
	}
}

// stamp puts a placed record's ids and placement attributes on it, and
// the client that wrote its session, when one is named.
func (p *stamper) stamp(sl *slot, n *counts) {
	if c := clientid.Client(sl.key); c != "" {
		if _, ok := sl.lr.Attributes().Get(semconv.EnduserID); !ok {
			sl.lr.Attributes().PutStr(semconv.EnduserID, c)
		}
	}
	switch {
	case !sl.applied:
		n.duplicate++
	case sl.session.Stamp(sl.lr, sl.place):
		n.stamped++
	default:
		// No span: between turns, a late or stray event, a fork's
		// inherited event whose parent is unknown, or the fork's own end
		// of a turn its prefix opened.
		n.unplaced++
	}
}

// record adds a batch's outcomes to the self-telemetry.
func record(ctx context.Context, tel *metadata.Telemetry, n counts) {
	for _, c := range []struct {
		counter metric.Int64Counter
		v       int64
	}{
		{tel.RecordsStamped, n.stamped},
		{tel.RecordsPassed, n.passed},
		{tel.RecordsUnplaced, n.unplaced},
		{tel.RecordsDuplicate, n.duplicate},
		{tel.RecordsInvalid, n.invalid},
		{tel.SessionsEvicted, n.evicted},
	} {
		if c.v > 0 {
			c.counter.Add(ctx, c.v)
		}
	}
}
