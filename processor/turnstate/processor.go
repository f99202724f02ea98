package turnstate

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/metric"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/sessiontable"
	"github.com/dshtrace/dshtrace/processor/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// AttrParentCallID names, on a nested dispatch's record, the tool call the
// dispatch runs under (its span's dsh.tool.parent_call_id).
const AttrParentCallID = "dsh.tool.parent_call_id"

// stamper is the processor's state: per session, the turn model's cursor
// and the last seq applied, bounded as the connector's engine bounds its
// sessions (max_sessions, least recently active first out; max_open_turns;
// dangling_timeout), so both close the same turns and place the same
// events in the same spans.
type stamper struct {
	cfg   *Config
	tel   *metadata.Telemetry
	clock func() time.Time

	mu     sync.Mutex // guards everything below; a batch is placed under it
	reader *logrecord.Reader
	// sessions are the sessions tracked, in order of last arrival.
	sessions *sessiontable.Table[*session]
	// open orders the sessions with an open turn by when it opened.
	open    sessiontable.List[*session]
	tracked atomic.Int64 // sessions.Len(), for the gauge without the lock
}

// session is what the processor keeps of one session.
type session struct {
	id  string
	cur *turnmodel.Cursor
	// last is the last seq applied (valid when applied).
	last        int64
	applied     bool
	lastArrival time.Time
	// openElem is the session's entry in the open-turn order while one of
	// its own turns (not an inherited one) is open; openTurn is that turn.
	openElem *sessiontable.Elem[*session]
	openTurn int64
	// forkHeader is the header the cursor's fork cut was taken from.
	forkHeader *sessionlog.Header
	cache      idCache
}

func newStamper(cfg *Config, set component.TelemetrySettings, clock func() time.Time) (*stamper, error) {
	p := &stamper{
		cfg:      cfg,
		clock:    clock,
		reader:   logrecord.NewReader(cfg.MaxSessions),
		sessions: sessiontable.New[*session](cfg.MaxSessions),
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
	session *session
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
	slots, groups := p.read(ld, &n)
	for _, g := range groups {
		p.place(g, slots, now, &n)
	}
	for i := range slots {
		p.stamp(&slots[i], &n)
	}
	p.tracked.Store(int64(p.sessions.Len()))
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
		slots = append(slots, slot{lr: lr})
		for e := range rec.Row.Events {
			g.items = append(g.items, item{slot: len(slots) - 1, event: &rec.Row.Events[e],
				format: rec.Format, header: rec.Header})
		}
	})
	return slots, groups
}

// place moves a session's cursor over the batch's events of that session,
// in seq order, and notes in each record's slot where its last applied
// event went.
func (p *stamper) place(g *group, slots []slot, now time.Time, n *counts) {
	s := p.session(g.id, now, n)
	bySeq := func(a, b item) int { return cmp.Compare(a.event.Seq, b.event.Seq) }
	if !slices.IsSortedFunc(g.items, bySeq) { // the common case: a source in order
		slices.SortStableFunc(g.items, bySeq)
	}
	for _, it := range g.items {
		sl := &slots[it.slot]
		sl.session = s
		if h := it.header; h != nil && h.HasSeedLength && h != s.forkHeader {
			s.cur.SetFork(h.ParentSession, h.SeedLength)
			s.forkHeader = h
		}
		ev := it.event
		if s.applied && ev.Seq <= s.last {
			continue // redelivered, or behind a later event already applied
		}
		m := ev.TurnModel(it.format)
		pl := s.cur.Advance(&m)
		s.last, s.applied = ev.Seq, true
		p.followTurn(s, ev.Type, pl)
		sl.applied, sl.place = true, pl
	}
}

// session returns the session's state at arrival time now, creating it
// (and forgetting the least recently active session at max_sessions) or
// closing its open turn when it was silent for dangling_timeout, as the
// connector's engine does.
func (p *stamper) session(id string, now time.Time, n *counts) *session {
	s, ok := p.sessions.Get(id)
	if !ok {
		if p.sessions.Full() {
			p.evict()
			n.evicted++
		}
		s = &session{id: strings.Clone(id)}
		s.cur = turnmodel.NewCursor(s.id)
		p.sessions.Add(s.id, s)
	} else if now.Sub(s.lastArrival) >= p.cfg.DanglingTimeout {
		p.closeTurn(s)
	}
	s.lastArrival = now
	return s
}

func (p *stamper) evict() {
	id, s, ok := p.sessions.Oldest()
	if !ok {
		return
	}
	p.closeTurn(s)
	p.sessions.Remove(id)
}

// closeTurn closes the session's own open turn from outside (timeout,
// eviction): its later events are late, as in the connector.
func (p *stamper) closeTurn(s *session) {
	if s.openElem == nil {
		return
	}
	p.open.Remove(s.openElem)
	s.openElem, s.openTurn = nil, 0
	s.cur.CloseTurn()
}

// followTurn keeps the open-turn order in step with the cursor after an
// event was placed: a turn the cursor closed leaves it, a turn of the
// session's own that opened joins it, the oldest open turn closed first at
// max_open_turns. Inherited turns are not the session's spans and are not
// counted, as in the connector.
func (p *stamper) followTurn(s *session, typ string, pl turnmodel.Place) {
	if s.openElem != nil && s.cur.OpenTurn() != s.openTurn {
		p.open.Remove(s.openElem)
		s.openElem, s.openTurn = nil, 0
	}
	if typ != "turn/start" || pl.Kind != turnmodel.KindTurn || pl.Inherited {
		return
	}
	for p.open.Len() >= p.cfg.MaxOpenTurns {
		p.closeTurn(p.open.Front().Value)
	}
	s.openElem, s.openTurn = p.open.PushBack(s), pl.Turn
}

// stamp puts a placed record's ids and attributes on it.
func (p *stamper) stamp(sl *slot, n *counts) {
	if !sl.applied {
		n.duplicate++
		return
	}
	pl := sl.place
	if !pl.Spanned() {
		// No span: between turns, a fork's inherited event whose parent is
		// unknown, or the fork's own end of a turn its prefix opened.
		n.unplaced++
		return
	}
	trace, span := sl.session.cache.ids(pl)
	lr := sl.lr
	lr.SetTraceID(trace)
	lr.SetSpanID(span)
	a := lr.Attributes()
	a.PutInt(logrecord.AttrTurn, pl.Turn)
	if pl.Kind != turnmodel.KindTurn {
		a.PutInt(logrecord.AttrStep, pl.Step)
	}
	if pl.Kind == turnmodel.KindTool {
		// The span's own call id: a nested dispatch's is its sub-call id.
		if pl.SubCallID != "" {
			a.PutStr(logrecord.AttrToolCallID, pl.SubCallID)
			a.PutStr(AttrParentCallID, pl.CallID)
		} else {
			a.PutStr(logrecord.AttrToolCallID, pl.CallID)
		}
	}
	n.stamped++
}

// idCache holds the ids last computed for a session: consecutive records
// mostly share their turn's trace and often their span, and each id is a
// SHA-256.
type idCache struct {
	valid bool
	key   turnmodel.Place
	trace pcommon.TraceID
	span  pcommon.SpanID
}

func (c *idCache) ids(pl turnmodel.Place) (pcommon.TraceID, pcommon.SpanID) {
	key := turnmodel.Place{Kind: pl.Kind, Session: pl.Session, Turn: pl.Turn, Step: pl.Step,
		Attempt: pl.Attempt, CallID: pl.CallID, SubCallID: pl.SubCallID}
	if !c.valid || c.key != key {
		tr, sp := pl.IDs()
		c.trace, c.span = pcommon.TraceID(tr), pcommon.SpanID(sp)
		// Kept past the batch: copies, not views into a record.
		key.Session, key.CallID, key.SubCallID = strings.Clone(key.Session), strings.Clone(key.CallID), strings.Clone(key.SubCallID)
		c.key, c.valid = key, true
	}
	return c.trace, c.span
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
